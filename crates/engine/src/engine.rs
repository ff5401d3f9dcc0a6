//! The engine's facade: what front ends (the CLI, the desktop app) call. It owns the store and
//! the server sessions, starts tasks, answers and cancels them, and resumes them after a
//! restart; front ends subscribe to its events and never hold the truth themselves.
//!
//! Behind it: [`crate::gate`] writes and publishes, [`crate::live`] knows and routes what only
//! this process knows, [`crate::driver`] follows each task, and [`crate::decide`] says what a
//! server's report means.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use taskdeck_client::{ClientError, QuestionKey};
use taskdeck_protocol::TaskStatus;
use taskdeck_protocol::types::{TaskSupport, Tool};
use taskdeck_store::{
    Attempt, FailureReason, ListFilter, Mode, NewTask, Question as StoredQuestion, Store, StoreError, TaskEvent,
    TaskRecord, Update,
};
use tokio::sync::{broadcast, oneshot};
use tracing::Instrument;

use crate::config::{Config, Paths};
use crate::decide::failure;
use crate::driver;
use crate::error::{EngineError, Result};
use crate::gate::lock;
use crate::hub::Hub;
use crate::live::{AnswerMsg, DriverMsg};
use crate::lock::DataDirLock;
use crate::supervisor::{LogLine, Server, ServerStatus};

pub use crate::event::EngineEvent;
pub use crate::options::EngineOptions;

/// The reason a cancel the server took is recorded with; any other reason says what went wrong.
pub const CANCELLED_BY_USER: &str = "cancelled by the user";

/// Whether a task is waiting for the user: it needs input and the server's question is known.
/// (A legacy server may report `input_required` a moment before its question arrives.)
pub fn is_waiting_for_answer(rec: &TaskRecord) -> bool {
    rec.status == TaskStatus::InputRequired && rec.question.is_some()
}

/// A tool as a front end shows it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolInfo {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    /// `forbidden`, `optional` or `required` (legacy), or `null` where the server decides per call.
    pub task_support: Option<TaskSupport>,
    pub input_schema: Value,
}

pub use crate::reply::AnswerInput;

#[derive(Clone)]
pub struct Engine {
    hub: Arc<Hub>,
    /// `settings.json` of the data directory, with the channel its changes are announced on.
    pub(crate) settings: Arc<crate::settings::SettingsFile>,
    sign_ins: Arc<SignInDesk>,
}

impl Engine {
    /// Takes the data directory's lock, opens the store and reads the config. Servers start on
    /// first use; call [`Engine::resume`] to pick up the tasks a previous run left.
    pub async fn open(paths: Paths, opts: EngineOptions) -> Result<Engine> {
        let config = Config::load(&paths)?;
        Self::open_with_config(paths, opts, config).await
    }

    /// Like [`Engine::open`] with a config the caller loaded. The desktop app uses it to start with
    /// no servers when the config file is broken, show the error, and pick up the fix with
    /// [`Engine::reload_config`].
    pub async fn open_with_config(paths: Paths, opts: EngineOptions, config: Config) -> Result<Engine> {
        // Checked before it returns: a caller with an engine starts servers and resumes tasks at
        // once, so it would wait for the check anyway, and checking first (read-only, holding no
        // lock) holds up no other process's writes meanwhile.
        let engine = Self::assemble(paths, opts, config, Store::open_checked).await?;
        engine.watch_sign_ins();
        Ok(engine)
    }

    /// [`Engine::open_with_config`] in two steps, for a front end that shows the history before
    /// the store's integrity check is over (the desktop app: the check reads the whole file). The
    /// [`Opening`] reads the store and the servers as the config names them at once, while the
    /// check runs beside; [`Opening::ready`] waits for it and only then returns the engine, so
    /// nothing that starts a server, resumes a task or writes the store exists before the check
    /// passed. A damaged store found by the check fails `ready` with the error
    /// [`Engine::open_with_config`] gives at open.
    pub async fn open_readable(paths: Paths, opts: EngineOptions, config: Config) -> Result<Opening> {
        Ok(Opening { engine: Self::assemble(paths, opts, config, Store::open).await? })
    }

    /// [`Engine::open_readable`] with the store's check holding the write lock at once but
    /// reading nothing until the hold is released or dropped ([`Store::open_check_later`]): the
    /// desktop app releases it after its first paint, which then does not share two cores with a
    /// read of the whole file. [`Opening::ready`] waits for the check as before.
    pub async fn open_readable_check_later(
        paths: Paths,
        opts: EngineOptions,
        config: Config,
    ) -> Result<(Opening, taskdeck_store::CheckHold)> {
        let (tx, rx) = std::sync::mpsc::channel();
        let open = move |path: std::path::PathBuf| {
            let (store, hold) = Store::open_check_later(path)?;
            let _ = tx.send(hold);
            Ok(store)
        };
        let engine = Self::assemble(paths, opts, config, open).await?;
        let hold = rx
            .try_recv()
            .map_err(|e| EngineError::ServerUnavailable { server: "store".into(), reason: e.to_string() })?;
        Ok((Opening { engine }, hold))
    }

    /// The data directory's lock, the store as `open_store` opens it, the servers (none started)
    /// and the settings: an engine that has not started anything, nor followed sign-ins.
    async fn assemble(
        paths: Paths,
        mut opts: EngineOptions,
        config: Config,
        open_store: impl FnOnce(std::path::PathBuf) -> taskdeck_store::Result<Store> + Send + 'static,
    ) -> Result<Engine> {
        if opts.models.is_empty() {
            // The user's providers (settings.json's `models`), unless the caller brought its own.
            opts.models = crate::sampling::configured::from_settings(&paths.data_dir);
        }
        let lock = DataDirLock::acquire(&paths.data_dir)?;
        let store_path = paths.store_file();
        let store = tokio::task::spawn_blocking(move || open_store(store_path))
            .await
            .map_err(|e| EngineError::ServerUnavailable { server: "store".into(), reason: e.to_string() })??;
        let hub = Hub::new(store, paths, opts, config, lock);
        hub.servers.sign_ins.set_data_dir(hub.paths.data_dir.clone());
        let settings = Arc::new(crate::settings::SettingsFile::in_dir(&hub.paths.data_dir));
        Ok(Engine { hub, settings, sign_ins: Default::default() })
    }

    /// What may be read of this engine without it: the store and the servers' statuses.
    pub fn reader(&self) -> Reader {
        Reader { hub: self.hub.clone() }
    }

    pub fn paths(&self) -> &Paths {
        &self.hub.paths
    }

    pub fn config(&self) -> Config {
        self.hub.servers.config()
    }

    /// The config's entries that run nothing, as rows a list of servers shows after the running
    /// ones: the disabled ones, then those that could not be read (with their error).
    pub fn entries_not_run(&self) -> Vec<ServerStatus> {
        let config = self.config();
        let disabled = config.disabled.iter().map(ServerStatus::disabled);
        disabled.chain(config.unreadable.iter().map(ServerStatus::unreadable)).collect()
    }

    pub fn store(&self) -> &Store {
        self.hub.gate.store()
    }

    /// The write gate, for the history facade (`history.rs`).
    pub(crate) fn gate(&self) -> &crate::gate::Gate {
        &self.hub.gate
    }

    pub fn subscribe(&self) -> broadcast::Receiver<EngineEvent> {
        self.hub.gate.subscribe()
    }

    fn server(&self, name: &str) -> Result<Arc<Server>> {
        self.hub.servers.get(name).ok_or_else(|| EngineError::UnknownServer {
            name: name.into(),
            known: self.config().servers.iter().map(|s| s.name.clone()).collect(),
        })
    }

    /// Every configured server, in config order.
    pub fn servers(&self) -> Vec<ServerStatus> {
        self.hub.servers.all().iter().map(|s| s.status()).collect()
    }

    /// Starts every configured server and waits (up to `server_wait`) for each to connect or fail.
    pub async fn start_servers(&self) -> Vec<ServerStatus> {
        let all = self.hub.servers.all();
        for s in &all {
            s.ensure_running();
        }
        for s in &all {
            let _ = s.session(self.hub.opts.server_wait).await;
        }
        self.servers()
    }

    /// Reads the config file again and applies it while running: new servers are added (and start
    /// on first use), removed ones are stopped, changed ones are restarted with their new command.
    /// Tasks of a removed server stay pending until it comes back. A broken file changes nothing
    /// and returns its error.
    pub async fn reload_config(&self) -> Result<Vec<ServerStatus>> {
        let config = Config::load(&self.hub.paths)?;
        let (stopped, started) = self.hub.servers.replace(config);
        for s in stopped {
            s.shutdown().await;
        }
        for s in started {
            s.ensure_running();
        }
        let servers = self.servers();
        for s in &servers {
            self.hub.gate.announce(EngineEvent::Server { server: s.clone() });
        }
        // Pending tasks of servers that are back (or new) get their drivers again.
        let _ = self.resume().await;
        Ok(servers)
    }

    pub fn restart_server(&self, name: &str) -> Result<()> {
        self.server(name)?.restart();
        Ok(())
    }

    pub fn server_log(&self, name: &str) -> Result<Vec<LogLine>> {
        Ok(self.server(name)?.log())
    }

    /// The directories `name` is granted, as the roots it is told (`crate::roots`).
    pub fn roots_for(&self, name: &str) -> Result<Vec<taskdeck_protocol::types::Root>> {
        self.server(name)?;
        Ok(self.hub.roots_for(name))
    }

    /// The directories `name` is granted, as the user wrote them (resolved).
    pub fn granted_roots(&self, name: &str) -> Result<Vec<std::path::PathBuf>> {
        Ok(self.server(name)?.granted_paths())
    }

    pub async fn tools(&self, server: &str) -> Result<Vec<ToolInfo>> {
        let session = self.server(server)?.session(self.hub.opts.server_wait).await?;
        let tools = session.list_tools().await?;
        Ok(tools.into_iter().map(|t| tool_info(session.task_support(&t), t)).collect())
    }

    /// Starts a tool: checks the arguments against its schema, writes the task, and only then
    /// sends anything. Returns the task as stored; its driver takes it from there.
    pub async fn run(&self, server: &str, tool: &str, arguments: Value) -> Result<TaskRecord> {
        self.run_once(server, tool, arguments, None).await
    }

    /// [`Engine::run`] under an idempotency key: a key already used returns the task it made, as it
    /// is now (followed again if this process does not follow it yet), and nothing is sent. The
    /// store's unique key decides between two runs racing with one key, so one task is made and
    /// one call sent. A key used for another server, tool or arguments is refused: answering it
    /// with a task the caller did not describe would be worse than saying so. Without a key every
    /// run is new.
    pub async fn run_once(
        &self,
        server: &str,
        tool: &str,
        arguments: Value,
        idempotency_key: Option<&str>,
    ) -> Result<TaskRecord> {
        if let Some(key) = idempotency_key {
            check_idempotency_key(tool, key)?;
            if let Some(existing) = self.store().by_idempotency_key(key)? {
                return self.existing_run(existing, server, tool, &arguments);
            }
        }
        let session = self.server(server)?.session(self.hub.opts.server_wait).await?;
        let t = session.tool(tool).await?;
        self.hub
            .schemas
            .check(&t.input_schema, &arguments)
            .map_err(|(path, message)| EngineError::InvalidArguments { tool: tool.into(), path, message })?;
        let key = idempotency_key.map_or_else(|| uuid::Uuid::new_v4().to_string(), str::to_owned);
        let mode = if session.will_run_as_task(&t) { Mode::Task } else { Mode::Call };
        // What may be answered at once has its search row written by its end (`Gate::create`).
        let search_later = mode == Mode::Call || session.era() == taskdeck_protocol::Era::Modern;
        let created = self.hub.gate.create(
            NewTask {
                server: server.into(),
                tool: tool.into(),
                arguments: arguments.clone(),
                idempotency_key: key,
                mode,
            },
            search_later,
        );
        let record = match created {
            Ok(r) => r,
            // Another run with this key (a double click) made it while this one looked the tool up.
            Err(EngineError::Store(StoreError::Duplicate { existing, .. })) if idempotency_key.is_some() => {
                return self.existing_run(self.hub.gate.get(&existing)?, server, tool, &arguments);
            }
            Err(e) => return Err(e),
        };
        self.ensure_driver(&record.id);
        Ok(record)
    }

    /// The task an idempotency key already made, if it is the run asked for, picked up as
    /// [`Engine::resume`] would pick it up when nobody in this process follows it.
    fn existing_run(&self, rec: TaskRecord, server: &str, tool: &str, arguments: &Value) -> Result<TaskRecord> {
        if rec.server != server || rec.tool != tool || &rec.arguments != arguments {
            let message = format!(
                "idempotency key {:?} was used for task {} ({} on {} with other arguments); use a new key for \
                 another run",
                rec.idempotency_key, rec.id, rec.tool, rec.server
            );
            return Err(EngineError::InvalidArguments { tool: tool.into(), path: String::new(), message });
        }
        tracing::info!(task = %rec.id, "idempotency key already used: the existing task is returned");
        if rec.status.is_terminal() || self.hub.live.has_driver(&rec.id) {
            return Ok(rec);
        }
        self.resume_one(rec)
    }

    pub fn get(&self, id_or_prefix: &str) -> Result<TaskRecord> {
        Ok(self.store().resolve_prefix(id_or_prefix)?)
    }

    pub fn list(&self, filter: &ListFilter) -> Result<Vec<TaskRecord>> {
        Ok(self.store().list(filter)?)
    }

    pub fn events(&self, id: &str) -> Result<Vec<TaskEvent>> {
        Ok(self.store().events(id)?)
    }

    /// Picks up every task a previous run left unfinished: tasks running on a server are
    /// re-attached (questions come back with their forms); a plain call or a task the server never
    /// confirmed cannot be continued and is failed, saying so. Returns the non-terminal tasks.
    pub async fn resume(&self) -> Result<Vec<TaskRecord>> {
        // Tasks the store could not take a write for are tried again: the user may have made room.
        self.hub.gate.clear_halts();
        let mut out = Vec::new();
        for rec in self.store().non_terminal()? {
            if self.hub.live.has_driver(&rec.id) {
                out.push(rec);
                continue;
            }
            out.push(self.resume_one(rec)?);
        }
        Ok(out)
    }

    /// Picks up one unfinished task nobody in this process drives, as [`Engine::resume`] says.
    fn resume_one(&self, rec: TaskRecord) -> Result<TaskRecord> {
        let interrupted = match (rec.mode, &rec.remote_task_id) {
            // Between rounds of a multi-round-trip request nothing runs on the server.
            (_, None) if crate::mrtr::waits_on_a_round(&rec) => None,
            (Mode::Call, _) => Some("Taskdeck stopped while the call was running; the server's answer was lost"),
            (Mode::Task, None) => Some("Taskdeck stopped before the server confirmed the task"),
            (Mode::Task, Some(_)) => None,
        };
        if let Some(message) = interrupted {
            let update = failure(None, format!("{message}; run it again to retry"), FailureReason::Interrupted);
            return self.hub.gate.apply(&rec.id, update);
        }
        if self.hub.servers.get(&rec.server).is_none() {
            // Left pending: the server may come back with the next config change.
            self.hub.live.set_stalled(&rec.id, format!("server {:?} is not in the config", rec.server));
            return Ok(rec);
        }
        // A 2026-07-28 call is made without its search row, which its end or the next flush
        // writes; a Taskdeck that stopped in between left a task followed on without one.
        if rec.era == Some(taskdeck_protocol::Era::Modern) {
            self.hub.gate.index_later(&rec.id);
        }
        self.hub.register_remote(&rec);
        self.ensure_driver(&rec.id);
        Ok(rec)
    }

    /// Makes sure a driver follows the task (starting its server if needed).
    pub fn ensure_driver(&self, id: &str) {
        if let Some(rx) = self.hub.live.add_driver(id) {
            // Everything the driver and the client log while following this task carries its id.
            let span = tracing::info_span!("task", task = %id);
            tokio::spawn(driver::drive(self.hub.clone(), id.to_owned(), rx).instrument(span));
        }
    }

    /// Why a task is not being driven although it has not ended, if that is the case.
    pub fn stalled(&self, id: &str) -> Option<String> {
        self.hub.live.stalled(id)
    }

    /// The store could not take a write for the task (a full disk, a damaged file), so it is no
    /// longer driven: [`EngineError::StoreUnwritable`], naming the file and what to do.
    pub fn store_failure(&self, id: &str) -> Option<EngineError> {
        self.hub.gate.halted(id)
    }

    /// Waits until `done` holds for the task, or its driver stops without an end (then returns the
    /// record as it is; see [`Engine::stalled`]).
    pub async fn wait(&self, id: &str, done: impl Fn(&TaskRecord) -> bool) -> Result<TaskRecord> {
        // Subscribed before the first read, so nothing published in between is missed.
        let mut watch = self.hub.gate.watch(id);
        let mut rec = self.hub.gate.get(id)?;
        loop {
            if let Some(e) = self.store_failure(id) {
                return Err(e);
            }
            if done(&rec) || rec.status.is_terminal() || self.stalled(id).is_some() {
                return Ok(rec);
            }
            // Only this task's publishes wake this waiter, with the record they carry; the store
            // is read again only on the timeout, which also notices a driver that went away.
            match tokio::time::timeout(Duration::from_millis(500), watch.rx.changed()).await {
                Ok(Ok(())) => {
                    let published = watch.rx.borrow_and_update().clone();
                    if let Some(task) = published
                        && task.updated_at >= rec.updated_at
                    {
                        rec = task;
                    }
                }
                Ok(Err(_)) | Err(_) => rec = self.hub.gate.get(id)?,
            }
        }
    }

    /// Answers the task's pending question. Refused unless the task is waiting for input; an
    /// accepted answer must satisfy the question's schema. The answer is delivered and recorded
    /// by the task's driver, in turn with the server's reports, so its event is in the log
    /// before anything the server said after it.
    pub async fn answer(&self, id: &str, input: AnswerInput) -> Result<TaskRecord> {
        if let Some(e) = self.store_failure(id) {
            return Err(e);
        }
        let rec = self.hub.gate.get(id)?;
        let question = match (&rec.question, rec.status) {
            (Some(q), TaskStatus::InputRequired) => q.clone(),
            _ => return Err(refused(&rec, Attempt::Answer, "the task is not waiting for an answer").into()),
        };
        let sampled = self.hub.sampled.of(id, &question);
        let (response, note) = crate::reply::reply(&self.hub.schemas, &question, &input, sampled.as_ref())?;
        self.server(&rec.server)?;
        self.ensure_driver(id);
        let key = self.live_question_key(&rec, &question).await?;
        self.deliver(id, (key, response, note), Vec::new(), &[&question], "nobody could deliver the answer").await
    }

    /// Hands the task's driver the answers to deliver (the first, and `more` in the same
    /// `tasks/update`) and waits for the outcome; a completion sampled for `answered` is forgotten
    /// once they are delivered. When the driver stopped first, says why: the store could not take
    /// its writes, the task ended, or its server is out of reach (`nobody` then, if no stall says
    /// more).
    async fn deliver(
        &self,
        id: &str,
        (key, response, note): (QuestionKey, taskdeck_client::Reply, Option<Value>),
        more: Vec<(QuestionKey, taskdeck_client::Reply, Option<Value>)>,
        answered: &[&StoredQuestion],
        nobody: &str,
    ) -> Result<TaskRecord> {
        let (reply, replied) = oneshot::channel();
        let msg = DriverMsg::Answer(Box::new(AnswerMsg { key, response, note, more, reply }));
        if self.hub.live.send(id, msg).is_ok()
            && let Ok(outcome) = replied.await
        {
            if outcome.is_ok() {
                self.hub.sampled.answered(id, answered);
            }
            return outcome;
        }
        if let Some(e) = self.store_failure(id) {
            return Err(e);
        }
        let now = self.hub.gate.get(id)?;
        if !is_waiting_for_answer(&now) {
            return Err(refused(&now, Attempt::Answer, "the task is no longer waiting for an answer").into());
        }
        Err(EngineError::ServerUnavailable {
            server: now.server.clone(),
            reason: self.stalled(id).unwrap_or_else(|| nobody.into()),
        })
    }

    /// Answers every question pending on the task at once, one input per question in the order of
    /// [`TaskRecord::questions`], delivered in one `tasks/update`. Each answer is checked as
    /// [`Engine::answer`] checks one (a path names the question by its place: `/1/service`). With
    /// one question pending, the same as [`Engine::answer`].
    pub async fn answer_all(&self, id: &str, inputs: Vec<AnswerInput>) -> Result<TaskRecord> {
        if let Some(e) = self.store_failure(id) {
            return Err(e);
        }
        let rec = self.hub.gate.get(id)?;
        if rec.questions.len() < 2 || rec.status != TaskStatus::InputRequired {
            let Ok([input]) = <[AnswerInput; 1]>::try_from(inputs) else {
                let message = "one question is pending: give one answer".to_owned();
                return Err(EngineError::InvalidAnswer { path: String::new(), message });
            };
            return self.answer(id, input).await;
        }
        if inputs.len() != rec.questions.len() {
            let message = format!("{} questions are pending: give one answer for each, in order", rec.questions.len());
            return Err(EngineError::InvalidAnswer { path: String::new(), message });
        }
        let mut replies = Vec::new();
        for (i, (q, input)) in rec.questions.iter().zip(&inputs).enumerate() {
            let sampled = self.hub.sampled.of(id, q);
            let (reply, note) =
                crate::reply::reply(&self.hub.schemas, q, input, sampled.as_ref()).map_err(|e| match e {
                    EngineError::InvalidAnswer { path, message } => {
                        EngineError::InvalidAnswer { path: format!("/{i}{path}"), message }
                    }
                    other => other,
                })?;
            replies.push((q.key.clone(), reply, note));
        }
        self.server(&rec.server)?;
        self.ensure_driver(id);
        let first = replies.remove(0);
        let answered: Vec<&StoredQuestion> = rec.questions.iter().collect();
        self.deliver(id, first, replies, &answered, "nobody could deliver the answers").await
    }

    /// Sends one of the task's pending sampling questions to the configured model (the one its
    /// hints pick) and returns the completion, for the user to read, edit and then give as the
    /// answer. `key` names the question ([`QuestionKey::to_text`], as the record and `show --json`
    /// carry it) among several pending at once; `None` is the first pending question, the one
    /// [`Engine::answer`] answers. Nothing goes to the server here; the completion is kept, so
    /// the answer that follows records its model and tokens, and whether the user edited it.
    pub async fn sample(&self, id: &str, key: Option<&str>) -> Result<crate::sampling::Completion> {
        let rec = self.hub.gate.get(id)?;
        if rec.status != TaskStatus::InputRequired {
            return Err(refused(&rec, Attempt::Answer, "the task is not waiting for a sampling reply").into());
        }
        let question = match key {
            None => rec.question.as_ref(),
            Some(k) => rec.questions.iter().find(|q| q.key.to_text() == k),
        };
        let (question, params) = match question {
            Some(q) if q.is_sampling() => {
                let params = q.sampling_params().ok_or_else(|| EngineError::InvalidAnswer {
                    path: String::new(),
                    message: "this sampling request could not be read: decline it".into(),
                })?;
                (q, params)
            }
            Some(_) if key.is_some() => {
                return Err(refused(&rec, Attempt::Answer, "that question is not a sampling request").into());
            }
            None if key.is_some() => {
                return Err(refused(&rec, Attempt::Answer, "no pending question has that key").into());
            }
            _ => return Err(refused(&rec, Attempt::Answer, "the task is not waiting for a sampling reply").into()),
        };
        let model = self.hub.opts.models.pick(params.model_preferences.as_ref())?;
        let completion = model.complete(&params).await?;
        self.hub.sampled.keep(id, question, completion.clone());
        Ok(completion)
    }

    /// The key under which the pending question can be answered on the session open now. Modern
    /// keys are stable; a legacy question is an open request on one connection, so after a restart
    /// the answer waits for the server to ask again (the driver's follow makes it).
    async fn live_question_key(&self, rec: &TaskRecord, question: &StoredQuestion) -> Result<QuestionKey> {
        if let k @ QuestionKey::InputKey(_) = &question.key {
            return Ok(k.clone());
        }
        let deadline = tokio::time::Instant::now() + self.hub.opts.question_wait;
        loop {
            let pid = self.hub.servers.connection(&rec.server);
            if let Some(live) = self.hub.live.question(&rec.id)
                && live.connection.is_some()
                && live.connection == pid
            {
                return Ok(live.key);
            }
            // The driver may learn meanwhile that the task ended (a server that no longer knows
            // it): then no question is coming, and the wait is over.
            let now = self.hub.gate.get(&rec.id)?;
            if !is_waiting_for_answer(&now) {
                return Err(refused(&now, Attempt::Answer, "the task is no longer waiting for an answer").into());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(EngineError::QuestionNotLive {
                    id: rec.id.clone(),
                    detail: format!("waited {} s", self.hub.opts.question_wait.as_secs()),
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Cancels a task. Refused for a task that has ended. The server is told first: a task with
    /// `tasks/cancel`, a call still waiting for its answer with `notifications/cancelled` (or, on
    /// modern HTTP, by closing its stream). When it cannot be told the task is still marked
    /// cancelled here, and the reason says so; the `cancelled` event's `server_told` says which.
    pub async fn cancel(&self, id: &str) -> Result<TaskRecord> {
        // Nothing more is sent for a task the store cannot record: the server would cancel what
        // the store still shows running.
        if let Some(e) = self.store_failure(id) {
            return Err(e);
        }
        let rec = self.hub.gate.get(id)?;
        if rec.status.is_terminal() {
            return Err(refused(&rec, Attempt::Cancel, format!("{} is final", rec.status)).into());
        }
        let mut reason = CANCELLED_BY_USER.to_owned();
        let mut server_told = true;
        if rec.remote_task_id.is_none() {
            // Nothing but the request knows the call: it is in flight on the server's connection
            // now, or it died with an earlier one.
            let session = self.server(&rec.server)?.current_session();
            let told = match &session {
                Some(session) => session.cancel_call(&rec.id, CANCELLED_BY_USER),
                None => Ok(false),
            };
            match told {
                Ok(true) => {}
                Ok(false) if crate::mrtr::waits_on_a_round(&rec) => {
                    server_told = false;
                    reason = "cancelled here while its input requests waited for an answer; nothing runs on the \
                              server between rounds, so there was nothing to tell it"
                        .into();
                    crate::mrtr::forget_round(&self.hub, &rec);
                }
                Ok(false) => {
                    server_told = false;
                    reason = "cancelled here; the server was not told: no request of this task is in flight on \
                              its connection"
                        .into();
                }
                Err(e) => {
                    server_told = false;
                    reason = format!("cancelled here; the server could not be told: {e}");
                }
            }
        }
        if let Some(remote) = &rec.remote_task_id {
            let session = self.server(&rec.server)?.session(Duration::from_secs(10)).await;
            match session {
                Ok(session) => {
                    let said = match session.cancel_task(remote).await {
                        Ok(said) => said,
                        // Its answer may say anything about our task, so none of it is used: ours
                        // may still run there.
                        Err(ClientError::WrongTask { server, answered, .. }) => {
                            server_told = false;
                            reason = format!(
                                "cancelled here only: server {server:?} answered the cancel about another task \
                                 ({answered:?}), so nothing of its answer was applied and the task may still \
                                 run there"
                            );
                            None
                        }
                        // Already over on the server (-32602): learn how it really ended.
                        Err(e) => match session.get_task(remote).await {
                            Ok(s) => Some(s),
                            Err(_) => {
                                reason = format!("cancelled here; the server said: {e}");
                                None
                            }
                        },
                    };
                    if let Some(s) = said
                        && let Ok(s) = session.settle(s).await
                    {
                        self.hub.report(&rec, &s);
                    }
                }
                Err(e) => {
                    server_told = false;
                    reason = format!("cancelled here; the server could not be reached: {e}");
                }
            }
        }
        let now = self.hub.gate.get(id)?;
        let result = if now.status.is_terminal() {
            now
        } else {
            let update =
                Update::Cancelled { reason: Some(reason), server_status: None, server_told: Some(server_told) };
            match self.hub.gate.apply(id, update) {
                // The server's own word on the cancel (a pushed status, a deferred one written in
                // the same batch) can land between the read above and this write: the cancel did
                // happen, and the task's real state is the answer.
                Err(EngineError::Store(StoreError::Refused { current, .. })) if current.is_terminal() => {
                    self.hub.gate.get(id)?
                }
                written => written?,
            }
        };
        let _ = self.hub.live.send(id, DriverMsg::Wake);
        Ok(result)
    }

    /// Stops driving tasks (they stay as they are in the store, to be resumed), writes pending
    /// progress, stops every server and releases the data directory.
    pub async fn shutdown(&self) {
        self.hub.live.clear_drivers();
        self.hub.gate.flush();
        for s in self.hub.servers.all() {
            s.shutdown().await;
        }
        lock(&self.hub.lock).take();
    }
}

/// An engine whose store is readable while its integrity check runs ([`Engine::open_readable`]).
/// It holds the data directory; dropping it lets go of that and stops the check.
pub struct Opening {
    engine: Engine,
}

impl Opening {
    /// The store and the servers, for the reads a front end serves before the engine is ready.
    pub fn reader(&self) -> Reader {
        self.engine.reader()
    }

    /// Waits for the store's integrity check and returns the engine once it passed (servers then
    /// start on first use; call [`Engine::resume`], as after [`Engine::open`]). A store the check
    /// found damaged is the [`EngineError`] a refusal at open gives, naming the file; nothing was
    /// written to it, no server started and no task resumed.
    pub async fn ready(self) -> Result<Engine> {
        let store = self.engine.store().clone();
        tokio::task::spawn_blocking(move || store.checked())
            .await
            .map_err(|e| EngineError::ServerUnavailable { server: "store".into(), reason: e.to_string() })??;
        self.engine.watch_sign_ins();
        Ok(self.engine)
    }
}

/// What a front end may read of an engine before it is ready, and after: the store and the
/// servers as they stand (none started before [`Opening::ready`]). Nothing here starts a server
/// or writes. A reader keeps the engine's state, the data directory's lock included, alive: drop
/// it once the engine is ready or refused.
#[derive(Clone)]
pub struct Reader {
    hub: Arc<Hub>,
}

impl Reader {
    pub fn store(&self) -> &Store {
        self.hub.gate.store()
    }

    /// Every configured server, in config order, as [`Engine::servers`] lists them.
    pub fn servers(&self) -> Vec<ServerStatus> {
        self.hub.servers.all().iter().map(|s| s.status()).collect()
    }
}

/// How a [`Engine::sign_in`] ended when it did not fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignInOutcome {
    /// Signed in; the tokens are kept where [`Engine::sign_in`]'s note said.
    SignedIn { issuer: String },
    /// The server let Taskdeck in without one (or is a local server).
    NotNeeded,
}

/// Why a sign-in given up by [`Engine::cancel_sign_in`] ended, as the user reads it.
pub const SIGN_IN_CANCELLED: &str = "the sign-in was cancelled";

/// Signing in and out of remote servers: what the app's sign-in calls (`taskdeck-cli login`
/// signs in without an engine, through [`crate::signin`], and this engine follows on). Tokens
/// go to the OS keyring (or the 0600 file), never the store or a log.
impl Engine {
    /// Signs in to `server` where it asks for it, without asking the user in between: the
    /// browser is opened through `open_browser`, the redirect awaited on the loopback listener,
    /// the tokens kept. The server is then connected afresh, and its tasks that waited for the
    /// sign-in are followed on.
    pub async fn sign_in(
        &self,
        server: &str,
        open_browser: taskdeck_client::auth::OpenBrowser,
    ) -> Result<std::result::Result<SignInOutcome, String>> {
        match self.find_out_sign_in(server).await? {
            Ok(None) => Ok(Ok(SignInOutcome::NotNeeded)),
            Ok(Some(_)) => self.continue_sign_in(server, open_browser, None).await,
            Err(e) => Ok(Err(e)),
        }
    }

    /// The first half of a sign-in: whether `server` wants one and where it goes, opening
    /// nothing. `Some` is what to ask the user before the browser opens;
    /// [`Engine::continue_sign_in`] goes on with it, [`Engine::cancel_sign_in`] drops it.
    pub async fn find_out_sign_in(
        &self,
        server: &str,
    ) -> Result<std::result::Result<Option<crate::signin::SignInPrompt>, String>> {
        let s = self.server(server)?;
        let store = self.sign_in_store().await;
        let found = crate::signin::find_out_where(&s.config, store).await;
        let mut pending = lock(&self.sign_ins.plans);
        Ok(match found {
            Ok(crate::signin::SignInStep::Ready(plan)) => {
                let prompt = plan.prompt.clone();
                pending.insert(server.to_owned(), *plan);
                Ok(Some(prompt))
            }
            Ok(crate::signin::SignInStep::NotNeeded) => {
                pending.remove(server);
                Ok(None)
            }
            Err(e) => {
                pending.remove(server);
                Err(e)
            }
        })
    }

    /// The second half: the browser, the redirect, the tokens kept, the server connected
    /// afresh and its waiting tasks followed on. Finds out first when
    /// [`Engine::find_out_sign_in`] was not called. [`Engine::cancel_sign_in`] ends it with
    /// [`SIGN_IN_CANCELLED`]; a browser that never comes back ends it after `timeout` (five
    /// minutes by default) with a message saying so.
    pub async fn continue_sign_in(
        &self,
        server: &str,
        open_browser: taskdeck_client::auth::OpenBrowser,
        timeout: Option<Duration>,
    ) -> Result<std::result::Result<SignInOutcome, String>> {
        self.server(server)?;
        // Registered before anything else, so that a cancel at any point ends the sign-in.
        let cancel = Arc::new(tokio::sync::Notify::new());
        lock(&self.sign_ins.running).insert(server.to_owned(), cancel.clone());
        let data_dir = self.hub.paths.data_dir.clone();
        let signing_in = async {
            let plan = lock(&self.sign_ins.plans).remove(server);
            let plan = match plan {
                Some(p) => p,
                None => match self.find_out_sign_in(server).await? {
                    Ok(Some(_)) => match lock(&self.sign_ins.plans).remove(server) {
                        Some(p) => p,
                        None => return Ok(Err(SIGN_IN_CANCELLED.to_owned())),
                    },
                    Ok(None) => return Ok(Ok(None)),
                    Err(e) => return Ok(Err(e)),
                },
            };
            let store = self.sign_in_store().await;
            Ok(crate::signin::go(plan, store, &data_dir, open_browser, timeout).await.map(Some))
        };
        let went: Result<std::result::Result<Option<String>, String>> = tokio::select! {
            went = signing_in => went,
            () = cancel.notified() => Ok(Err(SIGN_IN_CANCELLED.to_owned())),
        };
        {
            let mut running = lock(&self.sign_ins.running);
            if running.get(server).is_some_and(|c| Arc::ptr_eq(c, &cancel)) {
                running.remove(server);
            }
        }
        match went? {
            Ok(Some(issuer)) => {
                self.sign_ins.seen(&data_dir);
                self.after_sign_in(server);
                Ok(Ok(SignInOutcome::SignedIn { issuer }))
            }
            Ok(None) => Ok(Ok(SignInOutcome::NotNeeded)),
            Err(e) => Ok(Err(e)),
        }
    }

    /// Removes a task whose server refused its very first request for want of a sign-in: the
    /// server never took it, so nothing of it runs anywhere. True when it was removed; any other
    /// task (one the server took, one that ended, one not waiting for a sign-in) is left as it is.
    pub async fn withdraw_unstarted(&self, id: &str) -> Result<bool> {
        let rec = self.hub.gate.get(id)?;
        let for_sign_in = self.stalled(id).is_some_and(|r| r == crate::decide::sign_in_hint(&rec.server));
        if rec.status.is_terminal() || rec.remote_task_id.is_some() || !for_sign_in {
            return Ok(false);
        }
        self.delete(&[rec.id], true).await?;
        Ok(true)
    }

    /// Gives up the sign-in of `server` found out or under way (its loopback listener closes).
    /// True when there was one.
    pub fn cancel_sign_in(&self, server: &str) -> bool {
        let found = lock(&self.sign_ins.plans).remove(server).is_some();
        let running = lock(&self.sign_ins.running).remove(server);
        if let Some(c) = &running {
            // A permit is kept when the sign-in is between two awaits.
            c.notify_one();
        }
        found || running.is_some()
    }

    /// How `server`'s sign-in stands: signed in (as whom, until when) or needed.
    pub async fn sign_in_state(&self, server: &str) -> Result<crate::signin::SignInState> {
        let s = self.server(server)?;
        let store = self.sign_in_store().await;
        Ok(crate::signin::state(&s.config, store, s.status().auth).await)
    }

    /// Removes the sign-in kept for `server`. Its connection is made afresh, without it.
    pub async fn sign_out(&self, server: &str) -> Result<std::result::Result<(), String>> {
        let s = self.server(server)?;
        let store = self.sign_in_store().await;
        let data_dir = self.hub.paths.data_dir.clone();
        let out = crate::signin::sign_out(server, store, &data_dir).await;
        self.sign_ins.seen(&data_dir);
        if out.is_ok() && matches!(s.config.endpoint, taskdeck_client::Endpoint::Http(_)) {
            s.restart();
        }
        Ok(out)
    }

    /// Where sign-ins are kept, for the user.
    pub async fn sign_in_store_description(&self) -> String {
        self.sign_in_store().await.describe()
    }

    /// The sign-in store, which keeps the model providers' API keys too (`taskdeck_models::keys`).
    pub async fn secret_store(&self) -> Arc<dyn taskdeck_client::auth::TokenStore> {
        self.sign_in_store().await
    }

    async fn sign_in_store(&self) -> Arc<dyn taskdeck_client::auth::TokenStore> {
        let dir = self.hub.paths.data_dir.clone();
        match tokio::task::spawn_blocking(move || crate::supervisor::sign_in_store(&dir).0).await {
            Ok(s) => s,
            Err(_) => Arc::new(taskdeck_client::auth::FileStore::in_dir(&self.hub.paths.data_dir)),
        }
    }

    /// `server`'s sign-in changed (here, or by `taskdeck-cli login` in another process): it is
    /// connected afresh, and its tasks that waited for a sign-in are followed on.
    fn after_sign_in(&self, server: &str) {
        let Some(s) = self.hub.servers.get(server) else { return };
        s.restart();
        let waiting = ListFilter { server: Some(server.to_owned()), ..Default::default() };
        for rec in self.list(&waiting).unwrap_or_default() {
            if !rec.status.is_terminal() && self.stalled(&rec.id).is_some() {
                self.ensure_driver(&rec.id);
            }
        }
    }

    /// Follows the sign-ins announced in the data directory by other processes, for as long as
    /// this engine holds it. Looked at once a second: a small file, read whole.
    fn watch_sign_ins(&self) {
        let (hub, sign_ins) = (Arc::downgrade(&self.hub), Arc::downgrade(&self.sign_ins));
        // The settings file holds nothing of the engine's: a strong handle keeps nothing alive.
        let settings = self.settings.clone();
        let dir = self.hub.paths.data_dir.clone();
        self.sign_ins.seen(&dir);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                let (Some(hub), Some(sign_ins)) = (hub.upgrade(), sign_ins.upgrade()) else { return };
                if lock(&hub.lock).is_none() {
                    return;
                }
                let changed = sign_ins.news(&dir);
                if changed.is_empty() {
                    continue;
                }
                let engine = Engine { hub, settings: settings.clone(), sign_ins };
                for server in changed {
                    tracing::info!(server = %server, "its sign-in changed elsewhere; connecting afresh");
                    engine.after_sign_in(&server);
                }
            }
        });
    }
}

/// The sign-ins of one engine that are found out or under way, and the announcements seen.
#[derive(Default)]
pub(crate) struct SignInDesk {
    plans: std::sync::Mutex<std::collections::HashMap<String, crate::signin::SignInPlan>>,
    running: std::sync::Mutex<std::collections::HashMap<String, Arc<tokio::sync::Notify>>>,
    stamps: std::sync::Mutex<std::collections::BTreeMap<String, u64>>,
}

impl SignInDesk {
    /// Takes the announcements as they are now as seen (this engine's own, or those at start).
    fn seen(&self, dir: &std::path::Path) {
        *lock(&self.stamps) = crate::signin::stamps(dir);
    }

    /// The servers announced since last looked.
    fn news(&self, dir: &std::path::Path) -> Vec<String> {
        let now = crate::signin::stamps(dir);
        let mut seen = lock(&self.stamps);
        let changed = crate::signin::changed(&seen, &now);
        *seen = now;
        changed
    }
}

/// The longest idempotency key taken: a key names a submission, it is not a place for data.
pub const MAX_IDEMPOTENCY_KEY: usize = 255;

fn check_idempotency_key(tool: &str, key: &str) -> Result<()> {
    let bad = if key.trim().is_empty() {
        Some("is empty".to_owned())
    } else if key.len() > MAX_IDEMPOTENCY_KEY {
        Some(format!("is longer than {MAX_IDEMPOTENCY_KEY} bytes"))
    } else if key.chars().any(char::is_control) {
        Some("holds a control character".to_owned())
    } else {
        None
    };
    match bad {
        Some(why) => Err(EngineError::InvalidArguments {
            tool: tool.into(),
            path: String::new(),
            message: format!("the idempotency key {why}"),
        }),
        None => Ok(()),
    }
}

fn refused(rec: &TaskRecord, attempted: Attempt, reason: impl Into<String>) -> StoreError {
    StoreError::Refused { id: rec.id.clone(), current: rec.status, attempted, reason: reason.into() }
}

fn tool_info(task_support: Option<TaskSupport>, t: Tool) -> ToolInfo {
    ToolInfo { task_support, name: t.name, title: t.title, description: t.description, input_schema: t.input_schema }
}
