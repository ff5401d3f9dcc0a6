//! The server child process: spawned so that it and everything it starts can be ended together
//! (a process group of its own on Unix, a Job Object on Windows), and killed with that whole tree
//! when its last handle goes.

use std::collections::BTreeMap;
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
    tree: Tree,
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
    let mut cmd = Command::new(&spec.command);
    cmd.args(&spec.args)
        .envs(&spec.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(cwd) = &spec.cwd {
        cmd.current_dir(cwd);
    }
    Tree::prepare(&mut cmd);
    let mut child: Child = cmd.spawn().map_err(|e| {
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
    tokio::spawn(async move {
        let status = tokio::select! {
            status = child.wait() => status,
            () = kill_requested.notified() => {
                let _ = child.start_kill();
                child.wait().await
            }
        };
        let status = match status {
            Ok(s) => s.to_string(),
            Err(e) => format!("unknown exit ({e})"),
        };
        let _ = tx.send(Some(status));
    });
    Ok(Spawned { stdin, stdout, stderr, process: ProcessHandle { pid, exit: ExitWatch(rx), kill_leader, tree } })
}

/// The server and its descendants, as one thing to kill.
#[cfg(unix)]
struct Tree {
    pgid: Option<i32>,
}

#[cfg(unix)]
impl Tree {
    fn prepare(cmd: &mut Command) {
        // The server leads a new process group, which its children join unless they leave it.
        cmd.process_group(0);
    }

    fn adopt(child: &Child) -> std::io::Result<Tree> {
        Ok(Tree { pgid: child.id().and_then(|pid| i32::try_from(pid).ok()) })
    }

    fn kill(&self) {
        if let Some(pgid) = self.pgid {
            // SAFETY: kill(2) on a process group we created; no memory is involved.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
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
