//! The server child process: spawned so that it and everything it starts can be ended together
//! (a process group of its own on Unix, a Job Object on Windows), and killed with that whole tree
//! when its last handle goes, when the server itself exits, and (on Linux and Windows) when
//! Taskdeck dies however it dies.
//!
//! A server gets an allow-listed environment (see [`ALLOWED_ENV`]) with its config's `env` on top,
//! unless its entry opts in to inheriting everything: the user's environment is full of tokens a
//! server has no business seeing.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::{Notify, watch};

use crate::ClientError;

/// How to start one server: the `mcpServers` entry of a config file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerSpec {
    pub name: String,
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// The config's `"inheritEnv": true`: the server gets Taskdeck's whole environment instead of
    /// the allow-list.
    #[serde(default)]
    pub inherit_env: bool,
}

/// The variables a server gets from Taskdeck's environment unless it inherits everything: what
/// the official TypeScript SDK passes (who the user is, where home is, how to find programs), then
/// what real servers need to work at all: the locale and time zone, the user's temporary folder
/// (per user on macOS), proxies and extra CA certificates (behind a corporate proxy nothing
/// connects without them), the XDG folders (where a server keeps its own config and cache), and
/// the desktop session (a server that opens a browser for a login or talks to the keyring).
/// Credentials are not here (`SSH_AUTH_SOCK`, cloud and API tokens): a server that needs one gets
/// it in its `env`, or inherits everything by choice.
#[cfg(unix)]
pub const ALLOWED_ENV: &[&str] = &[
    "HOME",
    "LOGNAME",
    "PATH",
    "SHELL",
    "TERM",
    "USER",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TZ",
    "TMPDIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
    "XDG_RUNTIME_DIR",
    "DBUS_SESSION_BUS_ADDRESS",
    "DISPLAY",
    "WAYLAND_DISPLAY",
];

/// The TypeScript SDK's Windows list, plus what `cmd.exe` wrappers (`npx.cmd`) need to find and run
/// programs (`PATHEXT`, `COMSPEC`, `WINDIR`, `TMP`), the proxies and the CA certificates. Windows
/// names are matched without regard to case, as Windows does.
#[cfg(windows)]
pub const ALLOWED_ENV: &[&str] = &[
    "APPDATA",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "PATH",
    "PROCESSOR_ARCHITECTURE",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "USERNAME",
    "USERPROFILE",
    "PROGRAMFILES",
    "PATHEXT",
    "COMSPEC",
    "WINDIR",
    "TMP",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
];

/// Whether a variable of Taskdeck's environment goes to a server that does not inherit everything.
pub fn env_allowed(name: &str) -> bool {
    ALLOWED_ENV.iter().any(|allowed| match allowed.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None if cfg!(windows) => name.eq_ignore_ascii_case(allowed),
        None => name == *allowed,
    })
}

/// The environment `spec`'s process starts with, given Taskdeck's: the allowed part of it (or all
/// of it), then the config's `env`, which wins.
pub fn server_env(
    spec: &ServerSpec,
    parent: impl IntoIterator<Item = (OsString, OsString)>,
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> =
        parent.into_iter().filter(|(k, _)| spec.inherit_env || k.to_str().is_some_and(env_allowed)).collect();
    for (k, v) in &spec.env {
        env.retain(|(name, _)| !same_name(name, k));
        env.push((k.into(), v.into()));
    }
    env
}

fn same_name(a: &OsString, b: &str) -> bool {
    if cfg!(windows) { a.to_str().is_some_and(|a| a.eq_ignore_ascii_case(b)) } else { a == b }
}

/// Longer stderr lines are cut; tracebacks stay readable, a binary dump cannot eat memory.
pub const MAX_STDERR_LINE: usize = 4096;

pub(crate) struct Spawned {
    pub stdin: ChildStdin,
    pub stdout: ChildStdout,
    pub stderr: ChildStderr,
    pub process: ProcessHandle,
}

/// Owns the child's lifetime. Dropping it kills the process and everything it started.
pub(crate) struct ProcessHandle {
    pid: Option<u32>,
    exit: ExitWatch,
    /// Asks the task that owns the `Child` to kill it: the portable way to end the server itself,
    /// whatever became of the tree around it.
    kill_leader: std::sync::Arc<Notify>,
    tree: std::sync::Arc<Tree>,
}

/// How the process ended, for anyone who needs to wait for it without owning it.
#[derive(Clone)]
pub(crate) struct ExitWatch(watch::Receiver<Option<String>>);

impl ExitWatch {
    /// The exit description once the process has ended (`"exit status: 1"`, `"signal: 9"`), or
    /// `None` if it is still running after `timeout`.
    pub async fn wait(&self, timeout: Duration) -> Option<String> {
        let mut rx = self.0.clone();
        let fut = async {
            loop {
                if let Some(s) = rx.borrow().clone() {
                    return Some(s);
                }
                if rx.changed().await.is_err() {
                    return rx.borrow().clone();
                }
            }
        };
        tokio::time::timeout(timeout, fut).await.ok().flatten()
    }

    fn ended(&self) -> bool {
        self.0.borrow().is_some()
    }
}

impl ProcessHandle {
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    pub fn exit(&self) -> ExitWatch {
        self.exit.clone()
    }

    /// Kills the server and everything it started (servers launched through `npx` or a shell
    /// leave grandchildren holding the pipes otherwise).
    pub fn kill(&self) {
        self.tree.kill();
        self.kill_leader.notify_one();
    }
}

impl Drop for ProcessHandle {
    fn drop(&mut self) {
        if !self.exit.ended() {
            self.kill();
        }
    }
}

pub(crate) fn spawn(spec: &ServerSpec) -> Result<Spawned, ClientError> {
    let spawn_error =
        |message: String| ClientError::Spawn { server: spec.name.clone(), command: spec.command.clone(), message };
    if let Some(cwd) = &spec.cwd {
        // Checked first: a missing working directory fails the spawn with the same "not found" as
        // a missing command, and the user would look for the wrong thing.
        match std::fs::metadata(cwd) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(spawn_error(format!("the working directory {} is not a folder", cwd.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(spawn_error(format!("the working directory {} does not exist", cwd.display())));
            }
            Err(e) => return Err(spawn_error(format!("the working directory {}: {e}", cwd.display()))),
        }
    }
    let mut cmd = Command::new(&spec.command);
    cmd.args(&spec.args)
        .env_clear()
        .envs(server_env(spec, std::env::vars_os()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(cwd) = &spec.cwd {
        cmd.current_dir(cwd);
    }
    Tree::prepare(&mut cmd);
    let mut child: Child = Tree::spawn(cmd).map_err(|e| {
        spawn_error(match e.kind() {
            std::io::ErrorKind::NotFound => format!("command not found ({e})"),
            _ => e.to_string(),
        })
    })?;
    let pid = child.id();
    let tree = match Tree::adopt(&child) {
        Ok(tree) => tree,
        Err(e) => {
            // A server we could not bind to our lifetime must not run at all.
            let _ = child.start_kill();
            return Err(spawn_error(format!("cannot tie the process to Taskdeck: {e}")));
        }
    };
    let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let (Some(stdin), Some(stdout), Some(stderr)) = (stdin, stdout, stderr) else {
        let _ = child.start_kill();
        return Err(spawn_error("the process has no stdio pipes".into()));
    };
    let (tx, rx) = watch::channel(None);
    let kill_leader = std::sync::Arc::new(Notify::new());
    let kill_requested = kill_leader.clone();
    let exited = tree.exited(&child);
    let tree = std::sync::Arc::new(tree);
    let reaper = tree.clone();
    tokio::spawn(async move {
        let status = if exited.0.is_some() {
            tokio::select! {
                () = exited.clone().wait() => {}
                () = kill_requested.notified() => {
                    reaper.kill();
                    let _ = child.start_kill();
                    exited.wait().await;
                }
            }
            // The leader has ended but is not reaped yet, so its group id cannot have been reused:
            // what it left behind (a wrapper's grandchildren) goes now, then the leader is reaped.
            reaper.leader_ended();
            child.wait().await
        } else {
            let status = tokio::select! {
                status = child.wait() => status,
                () = kill_requested.notified() => {
                    reaper.kill();
                    let _ = child.start_kill();
                    child.wait().await
                }
            };
            reaper.reaped();
            status
        };
        let status = match status {
            Ok(s) => s.to_string(),
            Err(e) => format!("unknown exit ({e})"),
        };
        let _ = tx.send(Some(status));
    });
    Ok(Spawned { stdin, stdout, stderr, process: ProcessHandle { pid, exit: ExitWatch(rx), kill_leader, tree } })
}

/// The server and its descendants, as one thing to kill: a process group the server leads.
#[cfg(unix)]
struct Tree {
    pgid: Option<i32>,
    /// Set, under the lock, once the group was killed for the leader's end: the leader is reaped
    /// right after, and from then on its group id may belong to someone else.
    done: std::sync::Mutex<bool>,
}

#[cfg(unix)]
impl Tree {
    fn prepare(cmd: &mut Command) {
        // The server leads a new process group, which its children join unless they leave it.
        cmd.process_group(0);
        #[cfg(target_os = "linux")]
        {
            let parent = std::process::id();
            // SAFETY: between fork and exec only async-signal-safe calls are allowed; prctl and
            // getppid are system calls that allocate nothing and take no lock.
            unsafe {
                cmd.pre_exec(move || {
                    // The kernel kills the server when the thread that forked it ends, so a crashed
                    // (or kill -9'd) Taskdeck takes its servers along. That thread is the spawner's
                    // (see `spawner`), which lives as long as the process.
                    if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    // Taskdeck died before the call above: nobody would send the signal.
                    if libc::getppid() as u32 != parent {
                        return Err(std::io::Error::other("Taskdeck ended while the server was starting"));
                    }
                    Ok(())
                });
            }
        }
    }

    fn spawn(cmd: Command) -> std::io::Result<Child> {
        #[cfg(target_os = "linux")]
        return spawner::spawn(cmd);
        #[cfg(not(target_os = "linux"))]
        {
            let mut cmd = cmd;
            cmd.spawn()
        }
    }

    fn adopt(child: &Child) -> std::io::Result<Tree> {
        Ok(Tree { pgid: child.id().and_then(|pid| i32::try_from(pid).ok()), done: std::sync::Mutex::new(false) })
    }

    /// Resolves when the leader has ended, without reaping it: a thread blocked in
    /// `waitid(WNOWAIT)`. Tokio reaps only when `Child::wait` is polled, which happens after this.
    fn exited(&self, _child: &Child) -> Exited {
        let (tx, rx) = watch::channel(false);
        if let Some(pid) = self.pgid {
            let spawned = std::thread::Builder::new().name("taskdeck-server-exit".into()).stack_size(64 * 1024).spawn(
                move || {
                    loop {
                        // SAFETY: an all-zero siginfo_t is a valid out-parameter for waitid.
                        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
                        // SAFETY: waits on our own child; `info` outlives the call.
                        let r = unsafe {
                            libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOWAIT)
                        };
                        if r == 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                            break;
                        }
                    }
                    let _ = tx.send(true);
                },
            );
            if spawned.is_err() {
                // Without the watcher the leader's end is learnt from the reap itself, as before.
                return Exited(None);
            }
        }
        Exited(Some(rx))
    }

    fn kill(&self) {
        let done = self.done.lock().unwrap_or_else(|p| p.into_inner());
        if !*done {
            self.signal_group();
        }
    }

    fn leader_ended(&self) {
        let mut done = self.done.lock().unwrap_or_else(|p| p.into_inner());
        if !*done {
            self.signal_group();
            *done = true;
        }
    }

    /// The leader was reaped without a watcher: its group id is no longer ours to signal.
    fn reaped(&self) {
        *self.done.lock().unwrap_or_else(|p| p.into_inner()) = true;
    }

    fn signal_group(&self) {
        if let Some(pgid) = self.pgid {
            // SAFETY: kill(2) on the process group we created, whose leader is not reaped yet (see
            // `done`); no memory is involved.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
    }
}

/// The leader's end, as seen before it is reaped. `None`: learnt from the reap (no watcher).
#[derive(Clone)]
struct Exited(Option<watch::Receiver<bool>>);

impl Exited {
    async fn wait(self) {
        match self.0 {
            Some(mut rx) => {
                let _ = rx.wait_for(|ended| *ended).await;
            }
            None => std::future::pending().await,
        }
    }
}

/// Every server is forked from one thread that lives as long as the process, because Linux sends
/// `PR_SET_PDEATHSIG` when the forking *thread* ends: a server forked from a runtime worker or a
/// blocking-pool thread would be killed when that thread is retired.
#[cfg(target_os = "linux")]
mod spawner {
    use std::sync::OnceLock;
    use std::sync::mpsc;

    use tokio::process::{Child, Command};

    type Job = Box<dyn FnOnce() + Send>;

    static JOBS: OnceLock<Option<mpsc::Sender<Job>>> = OnceLock::new();

    pub(super) fn spawn(mut cmd: Command) -> std::io::Result<Child> {
        let jobs = JOBS.get_or_init(|| {
            let (tx, rx) = mpsc::channel::<Job>();
            let thread = std::thread::Builder::new().name("taskdeck-spawner".into()).spawn(move || {
                for job in rx {
                    job();
                }
            });
            thread.ok().map(|_| tx)
        });
        let Some(jobs) = jobs else {
            return Err(std::io::Error::other("cannot start the thread that starts servers"));
        };
        // The child registers with this runtime's process driver, so it is spawned inside it.
        let runtime = tokio::runtime::Handle::try_current().map_err(std::io::Error::other)?;
        let (tx, rx) = mpsc::sync_channel(1);
        let job: Job = Box::new(move || {
            let _entered = runtime.enter();
            let _ = tx.send(cmd.spawn());
        });
        jobs.send(job).map_err(|_| std::io::Error::other("the thread that starts servers has ended"))?;
        // A fork takes milliseconds; waiting for it here keeps `spawn` synchronous for its callers.
        rx.recv().map_err(|_| std::io::Error::other("the thread that starts servers has ended"))?
    }
}

/// The server and its descendants, as one thing to kill: a Job Object that closes with its last
/// handle, so the tree also goes when Taskdeck itself ends however it ends.
#[cfg(windows)]
struct Tree {
    job: windows_job::Job,
}

#[cfg(windows)]
impl Tree {
    fn prepare(cmd: &mut Command) {
        // A GUI host must not flash a console window for every console server it starts.
        cmd.creation_flags(windows_sys::Win32::System::Threading::CREATE_NO_WINDOW);
    }

    fn spawn(mut cmd: Command) -> std::io::Result<Child> {
        cmd.spawn()
    }

    /// A Windows process is not reaped: its handle stays valid, and the job names no ids that could
    /// be reused. So the end is learnt from the wait itself.
    fn exited(&self, _child: &Child) -> Exited {
        Exited(None)
    }

    /// A server's end takes what it started along: the job's processes all go. (A handle names
    /// the process on Windows, so there is no reuse hazard and no need to do it before the wait.)
    fn reaped(&self) {
        self.job.terminate();
    }

    fn leader_ended(&self) {
        self.job.terminate();
    }

    fn adopt(child: &Child) -> std::io::Result<Tree> {
        let job = windows_job::Job::kill_on_close()?;
        // Processes the server starts from here on are in the job too. One it started in the
        // instant before this call is not: std gives no handle to a suspended child's thread to
        // close that gap with.
        let handle = child.raw_handle().ok_or_else(|| std::io::Error::other("the process has already ended"))?;
        job.assign(handle)?;
        Ok(Tree { job })
    }

    fn kill(&self) {
        self.job.terminate();
    }
}

#[cfg(windows)]
mod windows_job {
    use std::os::windows::io::RawHandle;

    use windows_sys::Win32::Foundation::{CloseHandle, HANDLE};
    use windows_sys::Win32::System::JobObjects::{
        AssignProcessToJobObject, CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
        JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JobObjectExtendedLimitInformation, SetInformationJobObject,
        TerminateJobObject,
    };

    pub struct Job(HANDLE);

    // SAFETY: a job handle is a kernel object reference, usable from any thread.
    unsafe impl Send for Job {}
    // SAFETY: as above; the calls made through it are thread-safe in the kernel.
    unsafe impl Sync for Job {}

    impl Job {
        pub fn kill_on_close() -> std::io::Result<Job> {
            // SAFETY: null attributes and name ask for an anonymous job with default security.
            let handle = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
            if handle.is_null() {
                return Err(std::io::Error::last_os_error());
            }
            let job = Job(handle);
            // SAFETY: a zeroed limit structure is valid: no limits, then we set one flag.
            let mut info: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
            info.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
            // SAFETY: `info` lives across the call and the size passed is its own.
            let ok = unsafe {
                SetInformationJobObject(
                    job.0,
                    JobObjectExtendedLimitInformation,
                    (&raw const info).cast(),
                    std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
                )
            };
            if ok == 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(job)
        }

        pub fn assign(&self, process: RawHandle) -> std::io::Result<()> {
            // SAFETY: both handles are open: the job is ours, the process handle is the child's.
            if unsafe { AssignProcessToJobObject(self.0, process as HANDLE) } == 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        }

        pub fn terminate(&self) {
            // SAFETY: the job handle is open until drop.
            unsafe {
                TerminateJobObject(self.0, 1);
            }
        }
    }

    impl Drop for Job {
        fn drop(&mut self) {
            // SAFETY: closed once, here; with KILL_ON_JOB_CLOSE this ends what is left in the job.
            unsafe {
                CloseHandle(self.0);
            }
        }
    }
}
