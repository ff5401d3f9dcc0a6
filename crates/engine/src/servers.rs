//! The configured servers, by name, swapped together with the config when it changes.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use taskdeck_client::{FollowOptions, SessionOptions};

use crate::config::Config;
use crate::gate::lock;
use crate::supervisor::{Router, Server};

pub(crate) struct Servers {
    set: Mutex<ServerSet>,
    session: SessionOptions,
    router: Arc<dyn Router>,
    /// Where each server's stderr file is kept.
    log_dir: PathBuf,
}

struct ServerSet {
    config: Config,
    by_name: HashMap<String, Arc<Server>>,
}

impl Servers {
    pub fn new(config: Config, session: SessionOptions, router: Arc<dyn Router>, log_dir: PathBuf) -> Servers {
        let by_name = config
            .servers
            .iter()
            .map(|server| (server.name.clone(), Server::new(server.clone(), &session, router.clone(), Some(&log_dir))))
            .collect();
        Servers { set: Mutex::new(ServerSet { config, by_name }), session, router, log_dir }
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

    /// The pid of the server's process now, if it runs.
    pub fn pid(&self, name: &str) -> Option<u32> {
        self.get(name).and_then(|s| s.current_session()).and_then(|s| s.pid())
    }

    /// Swaps in a new config: unchanged servers (same endpoint, same settings) are kept as they are. Returns the servers to stop
    /// (removed or changed) and the new ones to start (those replacing a running one).
    pub fn replace(&self, config: Config) -> (Vec<Arc<Server>>, Vec<Arc<Server>>) {
        let mut set = lock(&self.set);
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
                    let new = Server::new(server.clone(), &self.session, self.router.clone(), Some(&self.log_dir));
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
