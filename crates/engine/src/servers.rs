//! The configured servers, by name, swapped together with the config when it changes.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use taskdeck_client::{FollowOptions, Session, SessionOptions};

use crate::config::Config;
use crate::gate::lock;
use crate::supervisor::{Router, Server, SignIns};

/// What a legacy question is open on, as a number to compare: the server's process for a local
/// server (a new process knows none of the old one's requests); for a remote one, its HTTP session,
/// since a request the server sent stays open on the session whichever connection carries it, so a
/// reconnection that resumed the session can still answer it. `None` where nothing holds a legacy
/// request open (a modern server's questions are keyed by the task).
pub(crate) fn connection_key(session: &Session) -> Option<u32> {
    if let Some(pid) = session.pid() {
        return Some(pid);
    }
    let id = session.resumable()?.session_id;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    std::hash::Hash::hash(&id, &mut hasher);
    Some(std::hash::Hasher::finish(&hasher) as u32)
}

pub(crate) struct Servers {
    set: Mutex<ServerSet>,
    session: SessionOptions,
    router: Arc<dyn Router>,
    /// Where each server's stderr file is kept.
    log_dir: PathBuf,
    /// Where every remote server's sign-in is kept.
    pub sign_ins: Arc<SignIns>,
}

struct ServerSet {
    config: Config,
    by_name: HashMap<String, Arc<Server>>,
}

impl Servers {
    pub fn new(config: Config, session: SessionOptions, router: Arc<dyn Router>, log_dir: PathBuf) -> Servers {
        let sign_ins = Arc::new(SignIns::default());
        let by_name = config
            .servers
            .iter()
            .map(|server| {
                let s = Server::new(server.clone(), &session, router.clone(), Some(&log_dir), sign_ins.clone());
                (server.name.clone(), s)
            })
            .collect();
        Servers { set: Mutex::new(ServerSet { config, by_name }), session, router, log_dir, sign_ins }
    }

    pub fn config(&self) -> Config {
        lock(&self.set).config.clone()
    }

    pub fn get(&self, name: &str) -> Option<Arc<Server>> {
        lock(&self.set).by_name.get(name).cloned()
    }

    /// Every server, in config order.
    pub fn all(&self) -> Vec<Arc<Server>> {
        let set = lock(&self.set);
        set.config.servers.iter().filter_map(|s| set.by_name.get(&s.name).cloned()).collect()
    }

    /// How a task of `name` is polled: the engine's policy within the server's own bounds.
    pub fn follow_options(&self, name: &str, base: FollowOptions) -> FollowOptions {
        self.get(name).map_or(base, |s| s.config.settings.follow(base))
    }

    /// What `name`'s sampling requests get (see [`crate::sampling::SamplingPolicy`]).
    pub fn sampling_policy(&self, name: &str) -> crate::sampling::SamplingPolicy {
        self.get(name).map(|s| s.config.settings.sampling).unwrap_or_default()
    }

    /// The connection a legacy question asked now is open on, if one is: see [`connection_key`].
    pub fn connection(&self, name: &str) -> Option<u32> {
        self.get(name).and_then(|s| s.current_session()).as_ref().and_then(connection_key)
    }

    /// Swaps in a new config: unchanged servers (same endpoint, same settings) are kept as they are,
    /// and so is a server whose entry the edit made unreadable: a typo must not stop what runs,
    /// and the entry's error is listed beside it until it is fixed. Returns the servers to stop
    /// (removed or changed) and the new ones to start (those replacing a running one).
    pub fn replace(&self, mut config: Config) -> (Vec<Arc<Server>>, Vec<Arc<Server>>) {
        let mut set = lock(&self.set);
        for bad in &config.unreadable {
            if let Some(kept) = set.config.servers.iter().find(|s| s.name == bad.name) {
                config.servers.push(kept.clone());
            }
        }
        let mut by_name = HashMap::new();
        let mut stopped = Vec::new();
        let mut started = Vec::new();
        for server in &config.servers {
            match set.by_name.remove(&server.name) {
                Some(old) if old.config == *server => {
                    by_name.insert(server.name.clone(), old);
                }
                old => {
                    let was_running = old.as_ref().is_some_and(|o| o.current_session().is_some());
                    stopped.extend(old);
                    let new = Server::new(
                        server.clone(),
                        &self.session,
                        self.router.clone(),
                        Some(&self.log_dir),
                        self.sign_ins.clone(),
                    );
                    if was_running {
                        started.push(new.clone());
                    }
                    by_name.insert(server.name.clone(), new);
                }
            }
        }
        stopped.extend(set.by_name.drain().map(|(_, s)| s));
        *set = ServerSet { config, by_name };
        (stopped, started)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use taskdeck_client::SessionEvent;

    use super::*;
    use crate::supervisor::{LogLine, ServerStatus};

    struct Quiet;
    impl Router for Quiet {
        fn session_event(&self, _: &str, _: SessionEvent) {}
        fn server_changed(&self, _: ServerStatus) {}
        fn server_log(&self, _: &str, _: LogLine) {}
    }

    fn config(text: &str) -> Config {
        Config::parse(Path::new("/etc/x/servers.json"), text).unwrap()
    }

    fn names(servers: &Servers) -> Vec<String> {
        servers.all().iter().map(|s| s.config.name.clone()).collect()
    }

    #[test]
    fn an_edit_that_breaks_an_entry_keeps_its_server_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let first = config(r#"{"mcpServers": {"a": {"command": "a"}, "b": {"command": "b", "timeout": 5}}}"#);
        let servers = Servers::new(first, SessionOptions::default(), Arc::new(Quiet), dir.path().to_owned());
        let b = servers.get("b").unwrap();

        let (stopped, _) = servers.replace(config(r#"{"mcpServers": {"a": {"command": "a"}, "b": {"command": 3}}}"#));
        assert!(stopped.is_empty(), "nothing stopped for a typo");
        assert!(Arc::ptr_eq(&servers.get("b").unwrap(), &b), "the same server, untouched");
        assert_eq!(names(&servers), ["a", "b"]);
        assert_eq!(servers.config().unreadable[0].name, "b", "and its entry's error is listed");

        let (stopped, _) =
            servers.replace(config(r#"{"mcpServers": {"a": {"command": "a"}, "b": {"command": "b2"}}}"#));
        assert!(stopped.iter().any(|s| Arc::ptr_eq(s, &b)), "the fixed entry replaces it");
        assert!(servers.config().unreadable.is_empty());

        // A broken entry for a server that was not there starts nothing.
        let (_, started) = servers.replace(config(r#"{"mcpServers": {"a": {"command": "a"}, "c": {"url": 1}}}"#));
        assert!(started.is_empty());
        assert_eq!(names(&servers), ["a"]);
    }
}
