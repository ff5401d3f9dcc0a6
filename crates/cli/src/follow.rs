//! Following one task to its end, or to a question nobody here can answer: the live progress bar,
//! answers given on the command line or at the keyboard, and Ctrl-C as cancel.

use std::collections::VecDeque;
use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::{Map, Value};
use taskdeck_engine::{AnswerInput, Engine, EngineError, EngineEvent, TaskRecord};
use taskdeck_protocol::TaskStatus;
use taskdeck_protocol::form::FormModel;
use taskdeck_protocol::question::Asks;
use tokio::sync::broadcast;

use crate::error::{CliError, EXIT_CANCELLED, EXIT_USAGE, EXIT_WAITING, Result, exit_for};
use crate::form::{self, Form, Prompted};
use crate::output;
use crate::terminal;

pub struct Follow<'a> {
    pub engine: &'a Engine,
    /// Answers from `--answer`, used in order, one per question.
    pub answers: VecDeque<Map<String, Value>>,
    pub json: bool,
    /// The global options as given, so the printed `answer` command reaches the same data.
    pub invocation: String,
}

pub use taskdeck_engine::is_waiting_for_answer as waiting;

/// How long a question must stay the task's last word before the CLI stops on it or asks it.
const SETTLE: Duration = Duration::from_millis(300);

impl Follow<'_> {
    /// Drives the task until it ends or waits on a question nobody here can answer, prints it,
    /// and returns the exit code its state maps to.
    pub async fn run(mut self, id: &str) -> Result<u8> {
        let mut rx = self.engine.subscribe();
        let mut bar = Bar::new();
        let ctrl_c = tokio::signal::ctrl_c();
        tokio::pin!(ctrl_c);
        loop {
            let rec = self.engine.get(id)?;
            bar.show(&rec);
            if rec.status.is_terminal() {
                bar.clear();
                return Ok(self.finish(&rec));
            }
            // The store could not take the task's writes: the engine stopped driving it, and says
            // which file and what to do.
            if let Some(e) = self.engine.store_failure(id) {
                bar.clear();
                self.print_json(&rec);
                return Err(e.into());
            }
            if waiting(&rec) && self.still_waiting(&rec).await {
                bar.clear();
                let answered = match self.next_answer(&rec, &mut ctrl_c).await? {
                    Next::Answer(input) => Some(self.engine.answer(id, input).await),
                    Next::Answers(inputs) => Some(self.engine.answer_all(id, inputs).await),
                    Next::Leave => None,
                    Next::Interrupted => return self.cancel(id).await,
                };
                match answered {
                    Some(answered) => {
                        match answered {
                            Ok(_) => {
                                // A cleared bar stays finished; the rest of the task gets a new one.
                                bar = Bar::new();
                                continue;
                            }
                            Err(e @ EngineError::InvalidAnswer { .. }) => {
                                self.print_json(&rec);
                                self.print_waiting(&rec);
                                return Err(CliError { exit: EXIT_USAGE, message: e.to_string() });
                            }
                            Err(e) => return Err(e.into()),
                        }
                    }
                    None => {
                        // The record goes to stdout whatever the exit: a script needs the task's id.
                        self.print_json(&rec);
                        self.print_waiting(&rec);
                        return Ok(EXIT_WAITING);
                    }
                }
            }
            if let Some(reason) = self.engine.stalled(id) {
                bar.clear();
                self.print_json(&rec);
                // Waiting for the user, as a question is: the way on is theirs (exit 3).
                if reason.starts_with("Sign-in needed") {
                    terminal::err(&format!(
                        "task {id} is still {} and waits for a sign-in. {reason}; then `taskdeck-cli resume`\n",
                        rec.status
                    ));
                    return Ok(EXIT_WAITING);
                }
                return Err(CliError::runtime(format!(
                    "task {id} is still {} but cannot be followed now: {reason}; `taskdeck-cli resume` picks it up",
                    rec.status
                )));
            }
            tokio::select! {
                ev = rx.recv() => match ev {
                    Ok(EngineEvent::Task { task }) if task.id == id => bar.show(&task),
                    Err(broadcast::error::RecvError::Closed) => return Err(CliError::runtime("the engine stopped")),
                    _ => {}
                },
                _ = tokio::time::sleep(Duration::from_millis(500)) => {}
                _ = &mut ctrl_c => {
                    bar.clear();
                    return self.cancel(id).await;
                }
            }
        }
    }

    /// Whether the question is still the task's last word a moment later. A server can take an
    /// answer, ask again and end the task in one breath (issue 10, item 10): the question is
    /// recorded a moment before the end that was sent right behind it (a question of megabytes
    /// takes a while to read), and leaving on it would report a finished task as waiting.
    async fn still_waiting(&self, rec: &TaskRecord) -> bool {
        let moved = |r: &TaskRecord| r.updated_at > rec.updated_at || r.status != rec.status;
        match tokio::time::timeout(SETTLE, self.engine.wait(&rec.id, moved)).await {
            Ok(Ok(now)) => !moved(&now),
            // The store failed meanwhile: the next look says how.
            Ok(Err(_)) => false,
            // Nothing came: the question stands.
            Err(_) => true,
        }
    }

    /// The answers to every pending question, asked in order; several go together.
    async fn next_answer(
        &mut self,
        rec: &TaskRecord,
        ctrl_c: &mut (impl std::future::Future<Output = std::io::Result<()>> + Unpin),
    ) -> Result<Next> {
        if rec.questions.len() < 2 {
            return self.next_one(rec, ctrl_c).await;
        }
        let mut inputs = Vec::new();
        for q in &rec.questions {
            match self.next_one(&one_question(rec, q), ctrl_c).await? {
                Next::Answer(input) => inputs.push(input),
                other => return Ok(other),
            }
        }
        Ok(Next::Answers(inputs))
    }

    async fn next_one(
        &mut self,
        rec: &TaskRecord,
        ctrl_c: &mut (impl std::future::Future<Output = std::io::Result<()>> + Unpin),
    ) -> Result<Next> {
        if let Some(content) = self.answers.pop_front() {
            return Ok(Next::Answer(AnswerInput::Accept(content)));
        }
        if !std::io::stdin().is_terminal() {
            return Ok(Next::Leave);
        }
        if let Some(q) = rec.question.as_ref().filter(|q| matches!(q.asks, Asks::Sampling { .. })) {
            let review = crate::sampling::review(&rec.server, q);
            let prompt = tokio::task::spawn_blocking(move || {
                terminal::err(&format!("{review}Your reply (one line; an empty line declines): "));
                let mut line = String::new();
                std::io::BufRead::read_line(&mut std::io::stdin().lock(), &mut line).map(|_| line)
            });
            return tokio::select! {
                res = prompt => match res {
                    Ok(Ok(line)) if line.trim().is_empty() => Ok(Next::Answer(AnswerInput::Decline)),
                    Ok(Ok(line)) => {
                        let mut reply = Map::new();
                        reply.insert("text".into(), Value::from(line.trim_end_matches(['\r', '\n'])));
                        Ok(Next::Answer(AnswerInput::Accept(reply)))
                    }
                    Ok(Err(e)) => Err(CliError::runtime(format!("reading the reply: {e}"))),
                    Err(e) => Err(CliError::runtime(format!("reading the reply: {e}"))),
                },
                _ = ctrl_c => Ok(Next::Interrupted),
            };
        }
        let Some(form) = Form::of(rec) else {
            return Ok(Next::Leave);
        };
        // The read blocks its thread; Ctrl-C must still win, so the prompt runs beside it and is
        // abandoned (the process exits) when it loses.
        let prompt = tokio::task::spawn_blocking(move || {
            form::ask(&form, &mut std::io::stdin().lock(), &mut terminal::Clean(std::io::stderr().lock()))
        });
        tokio::select! {
            res = prompt => match res {
                Ok(Ok(Prompted::Answer(a))) => Ok(Next::Answer(a)),
                Ok(Ok(Prompted::Leave)) => Ok(Next::Leave),
                Ok(Err(e)) => Err(CliError::runtime(format!("reading the answer: {e}"))),
                Err(e) => Err(CliError::runtime(format!("reading the answer: {e}"))),
            },
            _ = ctrl_c => Ok(Next::Interrupted),
        }
    }

    async fn cancel(&self, id: &str) -> Result<u8> {
        eprintln!("interrupted: cancelling task {id}");
        let rec = match self.engine.cancel(id).await {
            Ok(r) => r,
            // It ended meanwhile: report how, rather than the refusal.
            Err(EngineError::Store(taskdeck_store::StoreError::Refused { .. })) => self.engine.get(id)?,
            Err(e) => return Err(e.into()),
        };
        let code = self.finish(&rec);
        Ok(if rec.status == TaskStatus::Cancelled { EXIT_CANCELLED } else { code })
    }

    fn print_json(&self, rec: &TaskRecord) {
        if self.json {
            output::print_json(rec);
        }
    }

    fn finish(&self, rec: &TaskRecord) -> u8 {
        self.print_json(rec);
        match rec.status {
            TaskStatus::Completed => {
                if !self.json
                    && let Some(r) = &rec.result
                {
                    terminal::out(&format!("{}\n", output::result_text(r)));
                }
            }
            TaskStatus::Failed => {
                let e = rec.error.as_ref();
                let mut msg = e.map(|e| e.message.clone()).unwrap_or_else(|| "no reason given".into());
                if let Some(reason) = e.and_then(|e| e.reason.as_deref()) {
                    msg = format!("{msg} [{reason}]");
                }
                terminal::err(&format!("task {} failed: {msg}\n", rec.id));
            }
            TaskStatus::Cancelled => {
                let why = rec.status_message.as_deref().unwrap_or("cancelled");
                terminal::err(&format!("task {} cancelled: {why}\n", rec.id));
            }
            TaskStatus::InputRequired => self.print_waiting(rec),
            TaskStatus::Working => {}
        }
        exit_for(rec.status)
    }

    fn print_waiting(&self, rec: &TaskRecord) {
        let mut text = format!("task {} is waiting for input\n", rec.id);
        // Several at once: each is described; `answer` answers the first, and the rest are asked
        // again after it (`run --answer A --answer B` answers them all in one go).
        if rec.questions.len() > 1 {
            text.push_str(&format!("{} questions are pending, in this order:\n", rec.questions.len()));
            for (i, q) in rec.questions.iter().enumerate().skip(1) {
                let one = one_question(rec, q);
                text.push_str(&format!("#{}: ", i + 1));
                match Form::of(&one) {
                    Some(form) => text.push_str(&form.describe()),
                    None if matches!(q.asks, Asks::Sampling { .. }) => {
                        text.push_str(&crate::sampling::review(&rec.server, q))
                    }
                    None => text.push_str(&format!("{} asks: {}\n", rec.server, q.request.method)),
                }
            }
            text.push_str("#1: ");
        }
        let example = match Form::of(rec) {
            Some(form) => {
                text.push_str(&form.describe());
                form.example()
            }
            None if rec.question.as_ref().is_some_and(|q| matches!(q.asks, Asks::Sampling { .. })) => {
                if let Some(q) = &rec.question {
                    text.push_str(&crate::sampling::review(&rec.server, q));
                }
                Some(serde_json::json!({"text": "your reply"}))
            }
            None => {
                // Nothing a terminal can ask: what the server sent, and why there is no form.
                let q = rec.question.as_ref();
                let request = q.and_then(|q| serde_json::to_string(&q.request).ok()).unwrap_or_default();
                text.push_str(&format!("{} asks: {request}\n", rec.server));
                if let Some(why) = q.and_then(|q| no_form_reason(&q.asks)) {
                    text.push_str(&format!("  ({why})\n"));
                }
                // A question too large to show can only be declined: no accepting hint.
                match q.map(|q| &q.asks) {
                    Some(Asks::TooLarge { .. }) => None,
                    _ => Some(serde_json::json!({})),
                }
            }
        };
        let cmd = format!("taskdeck-cli{} answer {}", self.invocation, rec.id);
        match example {
            // Quoted so that pasting it runs this command and nothing else, whatever the server named.
            Some(example) => text.push_str(&format!(
                "answer with: {cmd} --json '{}'\n    or: {cmd} --decline\n",
                terminal::shell_quotable_json(&example)
            )),
            None => text.push_str(&format!("answer with: {cmd} --decline\n")),
        }
        terminal::err(&text);
    }
}

/// Why a question has no form here, said once beside the raw request.
fn no_form_reason(asks: &Asks) -> Option<String> {
    match asks {
        Asks::Form { form: FormModel::Unsupported { reason }, .. } => {
            Some(format!("Taskdeck cannot build a form for this question: {reason}"))
        }
        Asks::Malformed { reason } | Asks::Unsupported { reason } => Some(reason.clone()),
        Asks::Sampling { .. } => None,
        Asks::Roots => Some("Taskdeck does not answer this kind of question yet".into()),
        Asks::TooLarge { size } => Some(format!("too large to show ({size} bytes): decline or cancel")),
        Asks::Form { .. } | Asks::Url { .. } => None,
    }
}

/// `rec` as if `q` were its only question, for what reads one question of a record.
fn one_question(rec: &TaskRecord, q: &taskdeck_protocol::question::Question) -> TaskRecord {
    TaskRecord { question: Some(q.clone()), questions: vec![q.clone()], ..rec.clone() }
}

enum Next {
    Answer(AnswerInput),
    /// One answer per pending question, in order, to send together.
    Answers(Vec<AnswerInput>),
    Leave,
    Interrupted,
}

/// The live view on stderr: a bar once the total is known, a spinner until then, nothing at all
/// when stderr is not a terminal.
struct Bar {
    bar: ProgressBar,
    determinate: std::cell::Cell<bool>,
}

impl Bar {
    fn new() -> Bar {
        let target =
            if std::io::stderr().is_terminal() { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() };
        let bar = ProgressBar::with_draw_target(None, target);
        bar.set_style(spinner_style());
        bar.enable_steady_tick(Duration::from_millis(120));
        Bar { bar, determinate: std::cell::Cell::new(false) }
    }

    fn show(&self, rec: &TaskRecord) {
        let progress = rec.progress.as_ref();
        let message = rec
            .status_message
            .clone()
            .or_else(|| progress.and_then(|p| p.message.clone()))
            .unwrap_or_else(|| rec.status.to_string());
        match progress.and_then(|p| p.total.map(|t| (p.progress, t))) {
            Some((done, total)) if total > 0.0 => {
                if !self.determinate.replace(true) {
                    self.bar.set_style(bar_style());
                }
                // Whole units when the server counts in them; per mille for fractions.
                let scale = if total.fract() == 0.0 && done.fract() == 0.0 { 1.0 } else { 1000.0 / total };
                self.bar.set_length((total * scale).round() as u64);
                self.bar.set_position((done * scale).round() as u64);
            }
            _ => {
                if self.determinate.replace(false) {
                    self.bar.set_style(spinner_style());
                }
            }
        }
        // The bar redraws one line: server text goes on it cleaned and flattened.
        self.bar.set_message(terminal::clean(&message).split_whitespace().collect::<Vec<_>>().join(" "));
    }

    fn clear(&self) {
        self.bar.finish_and_clear();
    }
}

fn spinner_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} {elapsed:>4} {msg}").unwrap_or_else(|_| ProgressStyle::default_spinner())
}

fn bar_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} {elapsed:>4} [{bar:30}] {pos}/{len} {msg}")
        .map(|s| s.progress_chars("=> "))
        .unwrap_or_else(|_| ProgressStyle::default_bar())
}
