//! The engine: owns the store and the server sessions, starts tasks, routes what servers say to
//! each task's driver, and publishes every change. Front ends (the CLI, the desktop app) call it
//! and subscribe to its events; they never hold the truth themselves.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};
use taskdeck_client::{Question, QuestionKey, SessionEvent, SessionOptions};
use taskdeck_protocol::elicitation::ElicitResult;
use taskdeck_protocol::types::{TaskSupport, Tool};
use taskdeck_protocol::{Era, TaskStatus};
use taskdeck_store::{
    Answer, Attempt, ListFilter, Mode, NewTask, Progress, Question as StoredQuestion, Store, StoreError, TaskEvent,
    TaskRecord, Update,
};
use tokio::sync::{broadcast, mpsc, watch};

use crate::config::{Config, Paths};
use crate::driver::{self, DriverMsg};
use crate::error::{EngineError, Result};
use crate::lock::DataDirLock;
use crate::supervisor::{LogLine, Router, Server, ServerStatus};
use crate::validate;

#[derive(Debug, Clone)]
pub struct EngineOptions {
    pub session: SessionOptions,
    /// How long a command waits for a server to come up.
    pub server_wait: Duration,
    /// Bounds on the server's `pollInterval` (real servers ask for 250 ms to 5 s). The interval is
    /// the server's word on how often it can be asked, and a poll that learns nothing new writes
    /// nothing, so it is honoured down to a floor that only catches nonsense such as 0.
    pub min_poll: Duration,
    pub max_poll: Duration,
    /// Progress and status messages are written at most this often per task; status changes are
    /// written at once.
    pub progress_flush: Duration,
    /// How long `answer` waits for a legacy server to ask its question again after a restart.
    pub question_wait: Duration,
}

impl Default for EngineOptions {
    fn default() -> Self {
        Self {
            session: SessionOptions::default(),
            server_wait: Duration::from_secs(60),
            min_poll: Duration::from_millis(50),
            max_poll: Duration::from_secs(5),
            progress_flush: Duration::from_millis(100),
            question_wait: Duration::from_secs(30),
        }
    }
}

/// Everything the engine publishes. Lagging subscribers should re-read the store.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EngineEvent {
    Task {
        task: Box<TaskRecord>,
    },
    Server {
        server: ServerStatus,
    },
    ServerLog {
        server: String,
        line: LogLine,
    },
    /// The server's tools changed; re-list them.
    ToolsChanged {
        server: String,
    },
}

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

/// The user's answer to a pending question.
#[derive(Debug, Clone, PartialEq)]
pub enum AnswerInput {
    Accept(Map<String, Value>),
    Decline,
    Cancel,
}

#[derive(Clone)]
pub struct Engine {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub store: Store,
    pub paths: Paths,
    pub opts: EngineOptions,
    /// The config and its servers, swapped together when the config file changes.
    servers: Mutex<ServerSet>,
    router: Arc<dyn Router>,
    events: broadcast::Sender<EngineEvent>,
    pub live: Mutex<Live>,
    /// The tasks someone is [`Engine::wait`]ing on, each with the record last published for it.
    watched: Mutex<HashMap<String, watch::Sender<Option<TaskRecord>>>>,
    /// Held while pending progress and messages are taken and written, so a task's deferred
    /// writes always land before (never after) the next update applied to it.
    writes: Mutex<()>,
    schemas: validate::Schemas,
    /// Released by [`Engine::shutdown`], or when the process ends however it ends.
    lock: Mutex<Option<DataDirLock>>,
}

/// What only this process knows: which driver follows which task, and which questions can be
/// answered on the sessions that are open now.
#[derive(Default)]
pub(crate) struct Live {
    pub remote: HashMap<(String, String), String>,
    pub drivers: HashMap<String, mpsc::UnboundedSender<DriverMsg>>,
    /// Local ids of plain calls in flight, per server: where a question without a task id belongs.
    pub plain_calls: HashMap<String, Vec<String>>,
    pub progress: HashMap<String, Progress>,
    /// Status-message changes that wait for the next progress flush, in arrival order per task.
    pub messages: HashMap<String, Vec<Update>>,
    pub questions: HashMap<String, LiveQuestion>,
    /// Reports and questions naming a task whose handle this process has not registered yet
    /// (they can overtake it): handed to its driver, in arrival order, once it is.
    pub early: VecDeque<Early>,
    /// Tasks whose driver stopped without an end, and why (the server is unavailable).
    pub stalled: HashMap<String, String>,
}

#[derive(Debug, Clone)]
pub(crate) struct LiveQuestion {
    pub key: QuestionKey,
    pub pid: Option<u32>,
}

struct ServerSet {
    config: Config,
    by_name: HashMap<String, Arc<Server>>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// How many early reports are kept for handles still to come; the oldest make room.
const MAX_EARLY: usize = 256;

pub(crate) struct Early {
    server: String,
    remote: String,
    msg: DriverMsg,
}

/// One waiter's subscription to one task; the last one to leave removes the entry.
struct TaskWatch {
    inner: Arc<Inner>,
    id: String,
    rx: watch::Receiver<Option<TaskRecord>>,
}

impl TaskWatch {
    fn new(inner: &Arc<Inner>, id: &str) -> TaskWatch {
        let rx = lock(&inner.watched).entry(id.to_owned()).or_insert_with(|| watch::channel(None).0).subscribe();
        TaskWatch { inner: inner.clone(), id: id.to_owned(), rx }
    }
}

impl Drop for TaskWatch {
    fn drop(&mut self) {
        let mut watched = lock(&self.inner.watched);
        if watched.get(&self.id).is_some_and(|tx| tx.receiver_count() <= 1) {
            watched.remove(&self.id);
        }
    }
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
        let lock = DataDirLock::acquire(&paths.data_dir)?;
        let store_path = paths.store_file();
        let store = tokio::task::spawn_blocking(move || Store::open(store_path))
            .await
            .map_err(|e| EngineError::ServerUnavailable { server: "store".into(), reason: e.to_string() })??;
        let (events, _) = broadcast::channel(4096);
        let inner = Arc::new_cyclic(|weak: &Weak<Inner>| {
            let router: Arc<dyn Router> = Arc::new(EngineRouter(weak.clone()));
            let by_name = config
                .servers
                .iter()
                .map(|spec| {
                    (
                        spec.name.clone(),
                        Server::new(spec.clone(), opts.session.clone(), router.clone(), Some(&paths.log_dir())),
                    )
                })
                .collect();
            Inner {
                store,
                paths,
                opts,
                servers: Mutex::new(ServerSet { config, by_name }),
                router,
                events,
                live: Mutex::new(Live::default()),
                watched: Mutex::new(HashMap::new()),
                writes: Mutex::new(()),
                schemas: validate::Schemas::default(),
                lock: Mutex::new(Some(lock)),
            }
        });
        tokio::spawn(flush_progress(Arc::downgrade(&inner)));
        Ok(Engine { inner })
    }

    pub fn paths(&self) -> &Paths {
        &self.inner.paths
    }

    pub fn config(&self) -> Config {
        lock(&self.inner.servers).config.clone()
    }

    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    pub fn subscribe(&self) -> broadcast::Receiver<EngineEvent> {
        self.inner.events.subscribe()
    }

    fn server(&self, name: &str) -> Result<Arc<Server>> {
        self.inner.server(name).ok_or_else(|| EngineError::UnknownServer {
            name: name.into(),
            known: self.config().servers.iter().map(|s| s.name.clone()).collect(),
        })
    }

    /// Every configured server, in config order.
    pub fn servers(&self) -> Vec<ServerStatus> {
        self.inner.all_servers().iter().map(|s| s.status()).collect()
    }

    /// Starts every configured server and waits (up to `server_wait`) for each to connect or fail.
    pub async fn start_servers(&self) -> Vec<ServerStatus> {
        let all = self.inner.all_servers();
        for s in &all {
            s.ensure_running();
        }
        for s in &all {
            let _ = s.session(self.inner.opts.server_wait).await;
        }
        self.servers()
    }

    /// Reads the config file again and applies it while running: new servers are added (and start
    /// on first use), removed ones are stopped, changed ones are restarted with their new command.
    /// Tasks of a removed server stay pending until it comes back. A broken file changes nothing
    /// and returns its error.
    pub async fn reload_config(&self) -> Result<Vec<ServerStatus>> {
        let config = Config::load(&self.inner.paths)?;
        let (stopped, started) = {
            let mut set = lock(&self.inner.servers);
            let mut by_name = HashMap::new();
            let mut stopped = Vec::new();
            let mut started = Vec::new();
            for spec in &config.servers {
                match set.by_name.remove(&spec.name) {
                    Some(old) if old.spec == *spec => {
                        by_name.insert(spec.name.clone(), old);
                    }
                    old => {
                        let was_running = old.as_ref().is_some_and(|o| o.current_session().is_some());
                        stopped.extend(old);
                        let new = Server::new(
                            spec.clone(),
                            self.inner.opts.session.clone(),
                            self.inner.router.clone(),
                            Some(&self.inner.paths.log_dir()),
                        );
                        if was_running {
                            started.push(new.clone());
                        }
                        by_name.insert(spec.name.clone(), new);
                    }
                }
            }
            stopped.extend(set.by_name.drain().map(|(_, s)| s));
            *set = ServerSet { config, by_name };
            (stopped, started)
        };
        for s in stopped {
            s.shutdown().await;
        }
        for s in started {
            s.ensure_running();
        }
        let servers = self.servers();
        for s in &servers {
            let _ = self.inner.events.send(EngineEvent::Server { server: s.clone() });
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
        let session = self.server(server)?.session(self.inner.opts.server_wait).await?;
        let era = session.era();
        Ok(session.list_tools().await?.into_iter().map(|t| tool_info(t, era)).collect())
    }

    /// Starts a tool: checks the arguments against its schema, writes the task, and only then
    /// sends anything. Returns the task as stored; its driver takes it from there.
    pub async fn run(&self, server: &str, tool: &str, arguments: Value) -> Result<TaskRecord> {
        let session = self.server(server)?.session(self.inner.opts.server_wait).await?;
        let t = session.tool(tool).await?;
        self.inner
            .schemas
            .check(&t.input_schema, &arguments)
            .map_err(|(path, message)| EngineError::InvalidArguments { tool: tool.into(), path, message })?;
        let id = uuid::Uuid::new_v4().to_string();
        let mode = if session.will_run_as_task(&t) { Mode::Task } else { Mode::Call };
        let record = self.inner.store.create_task(NewTask {
            server: server.into(),
            tool: tool.into(),
            arguments,
            idempotency_key: id.clone(),
            mode,
        })?;
        self.inner.publish_task(&record);
        self.ensure_driver(&record.id);
        Ok(record)
    }

    pub fn get(&self, id_or_prefix: &str) -> Result<TaskRecord> {
        Ok(self.inner.store.resolve_prefix(id_or_prefix)?)
    }

    pub fn list(&self, filter: &ListFilter) -> Result<Vec<TaskRecord>> {
        Ok(self.inner.store.list(filter)?)
    }

    pub fn events(&self, id: &str) -> Result<Vec<TaskEvent>> {
        Ok(self.inner.store.events(id)?)
    }

    /// Picks up every task a previous run left unfinished: tasks running on a server are
    /// re-attached (questions come back with their forms); a plain call or a task the server never
    /// confirmed cannot be continued and is failed, saying so. Returns the non-terminal tasks.
    pub async fn resume(&self) -> Result<Vec<TaskRecord>> {
        let mut out = Vec::new();
        for rec in self.inner.store.non_terminal()? {
            if lock(&self.inner.live).drivers.contains_key(&rec.id) {
                out.push(rec);
                continue;
            }
            let interrupted = match (rec.mode, &rec.remote_task_id) {
                (Mode::Call, _) => Some("Taskdeck stopped while the call was running; the server's answer was lost"),
                (Mode::Task, None) => Some("Taskdeck stopped before the server confirmed the task"),
                (Mode::Task, Some(_)) => None,
            };
            if let Some(message) = interrupted {
                let error = taskdeck_store::TaskError {
                    code: None,
                    message: format!("{message}; run it again to retry"),
                    reason: Some("INTERRUPTED".into()),
                };
                let r = self.inner.apply(&rec.id, Update::Failed { error, server_status: None })?;
                out.push(r);
                continue;
            }
            if self.inner.server(&rec.server).is_none() {
                // Left pending: the server may come back with the next config change.
                lock(&self.inner.live)
                    .stalled
                    .insert(rec.id.clone(), format!("server {:?} is not in the config", rec.server));
                out.push(rec);
                continue;
            }
            self.inner.register_remote(&rec);
            self.ensure_driver(&rec.id);
            out.push(rec);
        }
        Ok(out)
    }

    /// Makes sure a driver follows the task (starting its server if needed).
    pub fn ensure_driver(&self, id: &str) {
        let mut live = lock(&self.inner.live);
        if live.drivers.contains_key(id) {
            return;
        }
        live.stalled.remove(id);
        let (tx, rx) = mpsc::unbounded_channel();
        live.drivers.insert(id.to_owned(), tx);
        drop(live);
        tokio::spawn(driver::drive(self.inner.clone(), id.to_owned(), rx));
    }

    /// Why a task is not being driven although it has not ended, if that is the case.
    pub fn stalled(&self, id: &str) -> Option<String> {
        let live = lock(&self.inner.live);
        if live.drivers.contains_key(id) { None } else { live.stalled.get(id).cloned() }
    }

    /// Waits until `done` holds for the task, or its driver stops without an end (then returns the
    /// record as it is; see [`Engine::stalled`]).
    pub async fn wait(&self, id: &str, done: impl Fn(&TaskRecord) -> bool) -> Result<TaskRecord> {
        // Subscribed before the first read, so nothing published in between is missed.
        let mut watch = TaskWatch::new(&self.inner, id);
        let mut rec = self.inner.store.get(id)?;
        loop {
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
                Ok(Err(_)) | Err(_) => rec = self.inner.store.get(id)?,
            }
        }
    }

    /// Answers the task's pending question. Refused unless the task is waiting for input; an
    /// accepted answer must satisfy the question's schema.
    pub async fn answer(&self, id: &str, input: AnswerInput) -> Result<TaskRecord> {
        let rec = self.inner.store.get(id)?;
        let question = match (&rec.question, rec.status) {
            (Some(q), TaskStatus::InputRequired) => q.clone(),
            _ => return Err(refused(&rec, Attempt::Answer, "the task is not waiting for an answer").into()),
        };
        let result = match &input {
            AnswerInput::Accept(content) => {
                if let Some(schema) = question.schema() {
                    self.inner
                        .schemas
                        .check(schema, &Value::Object(content.clone()))
                        .map_err(|(path, message)| EngineError::InvalidAnswer { path, message })?;
                }
                question.accept(content.clone())
            }
            AnswerInput::Decline => ElicitResult::decline(),
            AnswerInput::Cancel => ElicitResult::cancel(),
        };
        let server = self.server(&rec.server)?;
        self.ensure_driver(id);
        let key = self.live_question_key(&rec, &question).await?;
        let session = server.session(self.inner.opts.server_wait).await?;
        session.answer(&key, rec.remote_task_id.as_deref(), &result).await?;
        lock(&self.inner.live).questions.remove(id);
        let stored_key = key.to_text();
        let response = serde_json::to_value(&result).unwrap_or_default();
        let rec = match self.inner.apply(id, Update::Answer(Answer { key: stored_key, response })) {
            Ok(rec) => rec,
            // The server has the answer, but the driver applied a report that followed it (the task
            // working again, or done) before it could be recorded. Refusing now would tell the
            // user an answer the server accepted failed; the task's state is what they need.
            Err(EngineError::Store(StoreError::Refused { current, reason, .. }))
                if current != TaskStatus::InputRequired =>
            {
                tracing::warn!(
                    "task {id}: answer delivered but not recorded, the task had moved on to {current}: {reason}"
                );
                self.inner.store.get(id)?
            }
            Err(e) => return Err(e),
        };
        if let Some(tx) = lock(&self.inner.live).drivers.get(id) {
            let _ = tx.send(DriverMsg::Wake);
        }
        Ok(rec)
    }

    /// The key under which the pending question can be answered on the session open now. Modern
    /// keys are stable; a legacy question is an open request on one connection, so after a restart
    /// the answer waits for the server to ask again (the driver's `tasks/result` makes it).
    async fn live_question_key(&self, rec: &TaskRecord, question: &StoredQuestion) -> Result<QuestionKey> {
        if let k @ QuestionKey::InputKey(_) = &question.key {
            return Ok(k.clone());
        }
        let server = self.server(&rec.server)?;
        let deadline = tokio::time::Instant::now() + self.inner.opts.question_wait;
        loop {
            let pid = server.current_session().and_then(|s| s.pid());
            if let Some(live) = lock(&self.inner.live).questions.get(&rec.id)
                && live.pid.is_some()
                && live.pid == pid
            {
                return Ok(live.key.clone());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(EngineError::QuestionNotLive {
                    id: rec.id.clone(),
                    detail: format!("waited {} s", self.inner.opts.question_wait.as_secs()),
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Cancels a task. Refused for a task that has ended. The server is asked first; when it
    /// cannot be reached the task is still marked cancelled here, and the reason says so.
    pub async fn cancel(&self, id: &str) -> Result<TaskRecord> {
        let rec = self.inner.store.get(id)?;
        if rec.status.is_terminal() {
            return Err(refused(&rec, Attempt::Cancel, format!("{} is final", rec.status)).into());
        }
        let mut reason = "cancelled by the user".to_owned();
        if let Some(remote) = &rec.remote_task_id {
            let session = self.server(&rec.server)?.session(Duration::from_secs(10)).await;
            match session {
                Ok(session) => match session.cancel_task(remote).await {
                    Ok(Some(snapshot)) => driver::settle(&self.inner, &session, &rec, &snapshot).await,
                    Ok(None) => {}
                    Err(e) => {
                        // Already over on the server (-32602): learn how it really ended.
                        if let Ok(snapshot) = session.get_task(remote).await {
                            driver::settle(&self.inner, &session, &rec, &snapshot).await;
                        } else {
                            reason = format!("cancelled here; the server said: {e}");
                        }
                    }
                },
                Err(e) => reason = format!("cancelled here; the server could not be reached: {e}"),
            }
        }
        let now = self.inner.store.get(id)?;
        let result = if now.status.is_terminal() {
            now
        } else {
            self.inner.apply(id, Update::Cancelled { reason: Some(reason), server_status: None })?
        };
        if let Some(tx) = lock(&self.inner.live).drivers.get(id) {
            let _ = tx.send(DriverMsg::Wake);
        }
        Ok(result)
    }

    /// Stops driving tasks (they stay as they are in the store, to be resumed), writes pending
    /// progress, stops every server and releases the data directory.
    pub async fn shutdown(&self) {
        lock(&self.inner.live).drivers.clear();
        self.inner.flush_progress_now();
        for s in self.inner.all_servers() {
            s.shutdown().await;
        }
        lock(&self.inner.lock).take();
    }
}

pub(crate) fn refused(rec: &TaskRecord, attempted: Attempt, reason: impl Into<String>) -> StoreError {
    StoreError::Refused { id: rec.id.clone(), current: rec.status, attempted, reason: reason.into() }
}

fn tool_info(t: Tool, era: Era) -> ToolInfo {
    ToolInfo {
        task_support: match era {
            Era::Legacy => Some(t.task_support()),
            Era::Modern => None,
        },
        name: t.name,
        title: t.title,
        description: t.description,
        input_schema: t.input_schema,
    }
}

impl Inner {
    pub(crate) fn server(&self, name: &str) -> Option<Arc<Server>> {
        lock(&self.servers).by_name.get(name).cloned()
    }

    /// Every server, in config order.
    pub(crate) fn all_servers(&self) -> Vec<Arc<Server>> {
        let set = lock(&self.servers);
        set.config.servers.iter().filter_map(|s| set.by_name.get(&s.name).cloned()).collect()
    }

    pub(crate) fn publish_task(&self, rec: &TaskRecord) {
        if self.events.receiver_count() > 0 {
            let _ = self.events.send(EngineEvent::Task { task: Box::new(rec.clone()) });
        }
        if let Some(watch) = lock(&self.watched).get(&rec.id) {
            watch.send_replace(Some(rec.clone()));
        }
    }

    /// Applies one update and publishes the result. A refusal is returned, not published. The
    /// task's deferred messages and progress are written first, in the same transaction, so the
    /// log keeps them in order and a terminal update cannot shut them out.
    pub(crate) fn apply(&self, id: &str, update: Update) -> Result<TaskRecord> {
        let _writing = lock(&self.writes);
        let mut pending = self.take_deferred(id);
        if pending.is_empty() {
            let rec = self.store.apply(id, update)?;
            self.publish_task(&rec);
            return Ok(rec);
        }
        pending.push((id.to_owned(), update));
        let mut results = self.store.apply_batch(pending)?;
        let last = results.pop().expect("the update itself is in the batch");
        for r in results {
            match r {
                Ok(rec) => self.publish_task(&rec),
                Err(e) => tracing::debug!(task = id, "deferred update not applied: {e}"),
            }
        }
        let rec = last?;
        self.publish_task(&rec);
        Ok(rec)
    }

    fn take_deferred(&self, id: &str) -> Vec<(String, Update)> {
        let mut live = lock(&self.live);
        let messages = live.messages.remove(id).unwrap_or_default();
        let progress = live.progress.remove(id);
        messages.into_iter().chain(progress.map(Update::Progress)).map(|u| (id.to_owned(), u)).collect()
    }

    /// A new status message on a task that stays `working`: not a transition, and servers send one
    /// per stage, so it is written with the next progress flush rather than in a commit of its own.
    /// The same message again is no news and is dropped.
    pub(crate) fn defer_message(&self, rec: &TaskRecord, message: Option<String>, server_status: Option<String>) {
        let mut live = lock(&self.live);
        let latest = match live.messages.get(&rec.id).and_then(|queued| queued.last()) {
            Some(Update::Status { message, .. }) => message.clone(),
            _ => rec.status_message.clone(),
        };
        if latest != message {
            let update = Update::Status { status: TaskStatus::Working, message, server_status };
            live.messages.entry(rec.id.clone()).or_default().push(update);
        }
    }

    /// Like [`Inner::apply`] for updates that may race a terminal state: a refusal means the task
    /// has already ended, which is fine, and is logged rather than returned.
    pub(crate) fn apply_quietly(&self, id: &str, update: Update) -> Option<TaskRecord> {
        match self.apply(id, update) {
            Ok(r) => Some(r),
            Err(EngineError::Store(e @ StoreError::Refused { .. })) => {
                tracing::debug!(task = id, "update not applied: {e}");
                None
            }
            Err(e) => {
                tracing::error!(task = id, "could not record an update: {e}");
                None
            }
        }
    }

    pub(crate) fn register_remote(&self, rec: &TaskRecord) {
        let Some(remote) = &rec.remote_task_id else { return };
        let (early, driver) = {
            let mut live = lock(&self.live);
            live.remote.insert((rec.server.clone(), remote.clone()), rec.id.clone());
            let (mine, rest): (VecDeque<_>, VecDeque<_>) = std::mem::take(&mut live.early)
                .into_iter()
                .partition(|e| e.server == rec.server && &e.remote == remote);
            live.early = rest;
            (mine, live.drivers.get(&rec.id).cloned())
        };
        for e in early {
            let unsent = match &driver {
                Some(tx) => tx.send(e.msg).err().map(|mpsc::error::SendError(msg)| msg),
                None => Some(e.msg),
            };
            // Without a driver a report has nobody to act on it; a question is still the user's.
            if let Some(DriverMsg::Question(q)) = unsent {
                self.record_question(&rec.id, &rec.server, *q);
            }
        }
    }

    /// Keeps a report or question for a remote task whose handle has not been registered yet.
    fn keep_early(&self, server: &str, remote: &str, msg: DriverMsg) {
        let dropped = {
            let mut live = lock(&self.live);
            let dropped = if live.early.len() >= MAX_EARLY { live.early.pop_front() } else { None };
            live.early.push_back(Early { server: server.to_owned(), remote: remote.to_owned(), msg });
            dropped
        };
        if let Some(old) = dropped {
            tracing::warn!(server = %old.server, task = %old.remote, "a report for a task no one here started was dropped");
            if let DriverMsg::Question(q) = old.msg {
                self.cancel_question(&old.server, *q);
            }
        }
    }

    /// Declines, on the server, a question nobody here can be shown.
    fn cancel_question(&self, server: &str, q: Question) {
        tracing::warn!(server, "a question that belongs to no task was cancelled");
        if let Some(session) = self.server(server).and_then(|s| s.current_session()) {
            tokio::spawn(async move {
                let _ = session.answer(&q.key, None, &ElicitResult::cancel()).await;
            });
        }
    }

    pub(crate) fn record_question(&self, id: &str, server: &str, q: Question) {
        let pid = self.server(server).and_then(|s| s.current_session()).and_then(|s| s.pid());
        lock(&self.live).questions.insert(id.to_owned(), LiveQuestion { key: q.key.clone(), pid });
        let message = q.message.clone();
        self.apply_quietly(id, Update::Question { question: Box::new(q), message });
    }

    fn local_for_remote(&self, server: &str, remote: &str) -> Option<String> {
        lock(&self.live).remote.get(&(server.to_owned(), remote.to_owned())).cloned()
    }

    fn on_session_event(&self, server: &str, event: SessionEvent) {
        match event {
            SessionEvent::Task(snapshot) => match self.local_for_remote(server, &snapshot.task_id) {
                Some(id) => {
                    if let Some(tx) = lock(&self.live).drivers.get(&id) {
                        let _ = tx.send(DriverMsg::Snapshot(snapshot));
                    }
                }
                None => {
                    let remote = snapshot.task_id.clone();
                    self.keep_early(server, &remote, DriverMsg::Snapshot(snapshot));
                }
            },
            SessionEvent::Progress { token, progress, total, message } => {
                if let Some(id) = token.as_str() {
                    let mut live = lock(&self.live);
                    if live.drivers.contains_key(id) {
                        live.progress.insert(id.to_owned(), Progress { progress, total, message });
                    }
                }
            }
            SessionEvent::Question(q) => self.route_question(server, q),
            SessionEvent::QuestionWithdrawn { key } => {
                lock(&self.live).questions.retain(|_, l| l.key != key);
            }
            SessionEvent::ToolsChanged => {
                let _ = self.events.send(EngineEvent::ToolsChanged { server: server.to_owned() });
            }
            _ => {}
        }
    }

    /// A question names its task (legacy related-task), or belongs to the one plain call in
    /// flight on that server; failing both, the only task being driven there. Anything else
    /// cannot be shown to the right person and is cancelled, with a note in the server's log.
    fn route_question(&self, server: &str, q: Question) {
        let target = match &q.task_id {
            Some(remote) => match self.local_for_remote(server, remote) {
                Some(id) => Some(id),
                None => {
                    let remote = remote.clone();
                    self.keep_early(server, &remote, DriverMsg::Question(Box::new(q)));
                    return;
                }
            },
            None => {
                let live = lock(&self.live);
                match live.plain_calls.get(server).map(Vec::as_slice) {
                    Some([only]) => Some(only.clone()),
                    _ => {
                        let driven: Vec<&String> = live
                            .remote
                            .iter()
                            .filter(|((s, _), id)| s == server && live.drivers.contains_key(*id))
                            .map(|(_, id)| id)
                            .collect();
                        (driven.len() == 1).then(|| driven[0].clone())
                    }
                }
            }
        };
        match target {
            // A task's driver applies its status reports in the order they came; its question
            // joins that queue, or a `working` report sent just before the question, applied after
            // it, would take the question away again.
            Some(id) if q.task_id.is_some() => {
                let driver = lock(&self.live).drivers.get(&id).cloned();
                let unsent = match driver {
                    Some(tx) => match tx.send(DriverMsg::Question(Box::new(q))) {
                        Ok(()) => None,
                        Err(mpsc::error::SendError(DriverMsg::Question(q))) => Some(*q),
                        Err(_) => None,
                    },
                    None => Some(q),
                };
                if let Some(q) = unsent {
                    self.record_question(&id, server, q);
                }
            }
            Some(id) => self.record_question(&id, server, q),
            None => self.cancel_question(server, q),
        }
    }

    pub(crate) fn flush_progress_now(&self) {
        let _writing = lock(&self.writes);
        let updates: Vec<(String, Update)> = {
            let mut live = lock(&self.live);
            let messages = std::mem::take(&mut live.messages);
            let progress = std::mem::take(&mut live.progress);
            let messages = messages.into_iter().flat_map(|(id, ms)| ms.into_iter().map(move |m| (id.clone(), m)));
            messages.chain(progress.into_iter().map(|(id, p)| (id, Update::Progress(p)))).collect()
        };
        if updates.is_empty() {
            return;
        }
        match self.store.apply_batch(updates) {
            Ok(results) => {
                for r in results.into_iter().flatten() {
                    self.publish_task(&r);
                }
            }
            Err(e) => tracing::error!("could not record progress: {e}"),
        }
    }
}

/// Progress arrives far more often than anyone can read it: it is written in one transaction per
/// interval, the latest value per task, together with the status messages that came meanwhile.
/// Status changes do not wait for this.
async fn flush_progress(inner: Weak<Inner>) {
    loop {
        let Some(i) = inner.upgrade() else { return };
        let every = i.opts.progress_flush;
        i.flush_progress_now();
        drop(i);
        tokio::time::sleep(every).await;
    }
}

struct EngineRouter(Weak<Inner>);

impl Router for EngineRouter {
    fn session_event(&self, server: &str, event: SessionEvent) {
        if let Some(inner) = self.0.upgrade() {
            inner.on_session_event(server, event);
        }
    }

    fn server_changed(&self, status: ServerStatus) {
        if let Some(inner) = self.0.upgrade() {
            let _ = inner.events.send(EngineEvent::Server { server: status });
        }
    }

    fn server_log(&self, server: &str, line: LogLine) {
        if let Some(inner) = self.0.upgrade() {
            let _ = inner.events.send(EngineEvent::ServerLog { server: server.to_owned(), line });
        }
    }
}
