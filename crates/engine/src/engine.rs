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
    pub async fn open_with_config(paths: Paths, mut opts: EngineOptions, config: Config) -> Result<Engine> {
        if opts.models.is_empty() {
            // The user's providers (settings.json's `models`), unless the caller brought its own.
            opts.models = crate::sampling::configured::from_settings(&paths.data_dir);
        }
        let lock = DataDirLock::acquire(&paths.data_dir)?;
        let store_path = paths.store_file();
        let store = tokio::task::spawn_blocking(move || Store::open(store_path))
            .await
            .map_err(|e| EngineError::ServerUnavailable { server: "store".into(), reason: e.to_string() })??;
        let hub = Hub::new(store, paths, opts, config, lock);
        hub.servers.sign_ins.set_data_dir(hub.paths.data_dir.clone());
        let settings = Arc::new(crate::settings::SettingsFile::in_dir(&hub.paths.data_dir));
        Ok(Engine { hub, settings })
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

    pub async fn tools(&self, server: &str) -> Result<Vec<ToolInfo>> {
        let session = self.server(server)?.session(self.hub.opts.server_wait).await?;
        let tools = session.list_tools().await?;
        Ok(tools.into_iter().map(|t| tool_info(session.task_support(&t), t)).collect())
    }

    /// Starts a tool: checks the arguments against its schema, writes the task, and only then
    /// sends anything. Returns the task as stored; its driver takes it from there.
    pub async fn run(&self, server: &str, tool: &str, arguments: Value) -> Result<TaskRecord> {
        let session = self.server(server)?.session(self.hub.opts.server_wait).await?;
        let t = session.tool(tool).await?;
        self.hub
            .schemas
            .check(&t.input_schema, &arguments)
            .map_err(|(path, message)| EngineError::InvalidArguments { tool: tool.into(), path, message })?;
        let id = uuid::Uuid::new_v4().to_string();
        let mode = if session.will_run_as_task(&t) { Mode::Task } else { Mode::Call };
        let record = self.hub.gate.create(NewTask {
            server: server.into(),
            tool: tool.into(),
            arguments,
            idempotency_key: id.clone(),
            mode,
        })?;
        self.ensure_driver(&record.id);
        Ok(record)
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
            let interrupted = match (rec.mode, &rec.remote_task_id) {
                (Mode::Call, _) => Some("Taskdeck stopped while the call was running; the server's answer was lost"),
                (Mode::Task, None) => Some("Taskdeck stopped before the server confirmed the task"),
                (Mode::Task, Some(_)) => None,
            };
            if let Some(message) = interrupted {
                let update = failure(None, format!("{message}; run it again to retry"), FailureReason::Interrupted);
                out.push(self.hub.gate.apply(&rec.id, update)?);
                continue;
            }
            if self.hub.servers.get(&rec.server).is_none() {
                // Left pending: the server may come back with the next config change.
                self.hub.live.set_stalled(&rec.id, format!("server {:?} is not in the config", rec.server));
                out.push(rec);
                continue;
            }
            self.hub.register_remote(&rec);
            self.ensure_driver(&rec.id);
            out.push(rec);
        }
        Ok(out)
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
        let (response, note) = crate::reply::reply(&self.hub.schemas, &question, &input)?;
        self.server(&rec.server)?;
        self.ensure_driver(id);
        let key = self.live_question_key(&rec, &question).await?;
        let (reply, replied) = oneshot::channel();
        let msg = DriverMsg::Answer(Box::new(AnswerMsg { key, response, note, more: Vec::new(), reply }));
        if self.hub.live.send(id, msg).is_ok()
            && let Ok(outcome) = replied.await
        {
            return outcome;
        }
        // The driver stopped before it could deliver the answer: the task ended, the store could
        // not take its writes, or its server is out of reach.
        if let Some(e) = self.store_failure(id) {
            return Err(e);
        }
        let now = self.hub.gate.get(id)?;
        if !is_waiting_for_answer(&now) {
            return Err(refused(&now, Attempt::Answer, "the task is no longer waiting for an answer").into());
        }
        Err(EngineError::ServerUnavailable {
            server: now.server.clone(),
            reason: self.stalled(id).unwrap_or_else(|| "nobody could deliver the answer".into()),
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
            let (reply, note) = crate::reply::reply(&self.hub.schemas, q, input).map_err(|e| match e {
                EngineError::InvalidAnswer { path, message } => {
                    EngineError::InvalidAnswer { path: format!("/{i}{path}"), message }
                }
                other => other,
            })?;
            replies.push((q.key.clone(), reply, note));
        }
        self.server(&rec.server)?;
        self.ensure_driver(id);
        let (key, response, note) = replies.remove(0);
        let (reply, replied) = oneshot::channel();
        let msg = DriverMsg::Answer(Box::new(AnswerMsg { key, response, note, more: replies, reply }));
        if self.hub.live.send(id, msg).is_ok()
            && let Ok(outcome) = replied.await
        {
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
            reason: self.stalled(id).unwrap_or_else(|| "nobody could deliver the answers".into()),
        })
    }

    /// Sends the task's pending sampling question to the configured model (the one its hints
    /// pick) and returns the completion, for the user to read, edit and then give as the answer.
    /// Nothing goes to the server here.
    pub async fn sample(&self, id: &str) -> Result<crate::sampling::Completion> {
        let rec = self.hub.gate.get(id)?;
        let params = match (&rec.question, rec.status) {
            (Some(q), TaskStatus::InputRequired) if q.is_sampling() => {
                q.sampling_params().ok_or_else(|| EngineError::InvalidAnswer {
                    path: String::new(),
                    message: "this sampling request could not be read: decline it".into(),
                })?
            }
            _ => return Err(refused(&rec, Attempt::Answer, "the task is not waiting for a sampling reply").into()),
        };
        let model = self.hub.opts.models.pick(params.model_preferences.as_ref())?;
        Ok(model.complete(&params).await?)
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

    /// Cancels a task. Refused for a task that has ended. The server is asked first; when it
    /// cannot be reached the task is still marked cancelled here, and the reason says so.
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
        if let Some(remote) = &rec.remote_task_id {
            let session = self.server(&rec.server)?.session(Duration::from_secs(10)).await;
            match session {
                Ok(session) => {
                    let said = match session.cancel_task(remote).await {
                        Ok(said) => said,
                        // Its answer may say anything about our task, so none of it is used: ours
                        // may still run there.
                        Err(ClientError::WrongTask { server, answered, .. }) => {
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
                Err(e) => reason = format!("cancelled here; the server could not be reached: {e}"),
            }
        }
        let now = self.hub.gate.get(id)?;
        let result = if now.status.is_terminal() {
            now
        } else {
            self.hub.gate.apply(id, Update::Cancelled { reason: Some(reason), server_status: None })?
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

/// How a [`Engine::sign_in`] ended when it did not fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignInOutcome {
    /// Signed in; the tokens are kept where [`Engine::sign_in`]'s note said.
    SignedIn { issuer: String },
    /// The server let Taskdeck in without one (or is a local server).
    NotNeeded,
}

/// Signing in and out of remote servers: what `taskdeck-cli login` / `logout` and the app's
/// sign-in call. Tokens go to the OS keyring (or the 0600 file), never the store or a log.
impl Engine {
    /// Signs in to `server` where it asks for it: the browser is opened through `open_browser`
    /// (which a front end wraps to say, first, which server and authorization server it is), the
    /// redirect awaited on the loopback listener, the tokens kept. The server is then connected
    /// afresh, and its tasks that waited for the sign-in are followed on.
    pub async fn sign_in(
        &self,
        server: &str,
        open_browser: taskdeck_client::auth::OpenBrowser,
    ) -> Result<std::result::Result<SignInOutcome, String>> {
        use taskdeck_client::auth::{self, BearerChallenge, SignInOptions};
        let s = self.server(server)?;
        let taskdeck_client::Endpoint::Http(spec) = &s.config.endpoint else { return Ok(Ok(SignInOutcome::NotNeeded)) };
        let (url, status, www) = match taskdeck_client::transport::http::probe(spec).await {
            Ok(p) => p,
            Err(e) => return Ok(Err(e)),
        };
        let store = self.sign_in_store().await;
        let previous = {
            let (store, name) = (store.clone(), server.to_owned());
            tokio::task::spawn_blocking(move || store.load(&name)).await.ok().and_then(|r| r.ok()).flatten()
        };
        // A request refused for want of a scope (403 insufficient_scope) left it among the
        // requested ones: a step-up is due whatever the probes say.
        let step_up_due = previous.as_ref().is_some_and(|p| {
            p.tokens.as_ref().is_some_and(|t| p.requested_scopes.iter().any(|s| !t.scopes.contains(s)))
        });
        let mut challenge = www.as_deref().and_then(BearerChallenge::from_header);
        let step_up = status == 403 && challenge.as_ref().is_some_and(|c| c.is_insufficient_scope());
        if status != 401 && !step_up && !step_up_due {
            // Some servers let `initialize` through and refuse only what follows: ask as a
            // session would, and sign in on that refusal's challenge.
            use taskdeck_client::transport::http::HttpFailure;
            let refused = match self.tools(server).await {
                Err(EngineError::Client(e)) => match HttpFailure::of(&e) {
                    Some(HttpFailure::SignInNeeded { www_authenticate }) => Some(www_authenticate),
                    Some(HttpFailure::Forbidden { www_authenticate })
                        if www_authenticate.as_deref().is_some_and(|w| w.contains("insufficient_scope")) =>
                    {
                        Some(www_authenticate)
                    }
                    _ => None,
                },
                _ => None,
            };
            match refused {
                Some(www) => challenge = www.as_deref().and_then(BearerChallenge::from_header),
                None => return Ok(Ok(SignInOutcome::NotNeeded)),
            }
        }
        let http = match auth::AuthHttp::new() {
            Ok(h) => h.with_protocol_version(taskdeck_protocol::legacy::PROTOCOL_VERSION),
            Err(e) => return Ok(Err(e.to_string())),
        };
        let mut options = SignInOptions::new(s.config.settings.oauth.clone().unwrap_or_default());
        options.open_browser = open_browser;
        let signed = match auth::sign_in(&http, &url, challenge.as_ref(), previous.as_ref(), &options).await {
            Ok(a) => a,
            Err(e) => return Ok(Err(e.to_string())),
        };
        let issuer = signed.stored.issuer.clone();
        let saved = {
            let (store, name, stored) = (store.clone(), server.to_owned(), signed.stored);
            tokio::task::spawn_blocking(move || store.save(&name, &stored)).await
        };
        match saved {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Ok(Err(e.to_string())),
            Err(e) => return Ok(Err(e.to_string())),
        }
        s.restart();
        // The tasks that waited for this sign-in are followed on.
        let waiting = ListFilter { server: Some(server.to_owned()), ..Default::default() };
        for rec in self.list(&waiting).unwrap_or_default() {
            if !rec.status.is_terminal() && self.stalled(&rec.id).is_some() {
                self.ensure_driver(&rec.id);
            }
        }
        Ok(Ok(SignInOutcome::SignedIn { issuer }))
    }

    /// Removes the sign-in kept for `server`. Its connection carries on until the server asks again.
    pub async fn sign_out(&self, server: &str) -> Result<std::result::Result<(), String>> {
        self.server(server)?;
        let store = self.sign_in_store().await;
        let name = server.to_owned();
        Ok(match tokio::task::spawn_blocking(move || store.delete(&name)).await {
            Ok(r) => r.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        })
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
}

fn refused(rec: &TaskRecord, attempted: Attempt, reason: impl Into<String>) -> StoreError {
    StoreError::Refused { id: rec.id.clone(), current: rec.status, attempted, reason: reason.into() }
}

fn tool_info(task_support: Option<TaskSupport>, t: Tool) -> ToolInfo {
    ToolInfo { task_support, name: t.name, title: t.title, description: t.description, input_schema: t.input_schema }
}
