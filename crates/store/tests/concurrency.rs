//! Two writers on one file: the engine and a CLI (or a second Taskdeck) at the same time.

mod common;

use std::process::{Command, Stdio};
use std::thread;

use common::*;
use taskdeck_store::{ListFilter, Progress, Store, TaskStatus, Update};

const PER_WRITER: usize = 60;
const CHILD_ENV: &str = "TASKDECK_STORE_CHILD_DB";

/// Creates tasks and walks each through progress to completion.
fn write_tasks(store: &Store, prefix: &str) {
    for i in 0..PER_WRITER {
        let task = store.create_task(new_task(&format!("{prefix}-{i}"))).unwrap();
        store.apply(&task.id, Update::Progress(Progress { progress: 1.0, total: Some(2.0), message: None })).unwrap();
        store.apply(&task.id, Update::Completed { result: ok_result(), server_status: None }).unwrap();
    }
}

fn assert_all_written(store: &Store, prefixes: &[&str]) {
    let tasks = store.list(&ListFilter::default()).unwrap();
    assert_eq!(tasks.len(), PER_WRITER * prefixes.len());
    for prefix in prefixes {
        let mine = tasks.iter().filter(|t| t.idempotency_key.starts_with(&format!("{prefix}-"))).count();
        assert_eq!(mine, PER_WRITER, "{prefix}");
    }
    for t in &tasks {
        assert_eq!(t.status, TaskStatus::Completed);
        assert_eq!(store.events(&t.id).unwrap().len(), 2, "created + result for {}", t.id);
    }
}

#[test]
fn a_second_connection_reads_and_writes_while_the_first_writes() {
    let f = fixture();
    let writer = {
        let store = f.store.clone();
        thread::spawn(move || write_tasks(&store, "first"))
    };
    let second = Store::open(&f.path).unwrap();
    let reader = {
        let store = second.clone();
        thread::spawn(move || {
            for _ in 0..50 {
                store.list(&ListFilter::default()).unwrap();
                store.non_terminal().unwrap();
            }
        })
    };
    write_tasks(&second, "second");
    writer.join().unwrap();
    reader.join().unwrap();
    assert_all_written(&f.store, &["first", "second"]);
}

/// The body of the child process in the test below; a no-op when run as an ordinary test.
#[test]
fn child_process_writer() {
    if let Some(path) = std::env::var_os(CHILD_ENV) {
        let store = Store::open(path).unwrap();
        write_tasks(&store, "child");
    }
}

#[test]
fn a_second_process_writes_while_this_one_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("taskdeck.sqlite3");
    // Both processes race to create and migrate the file, too.
    let child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_process_writer", "--test-threads=1", "--quiet"])
        .env(CHILD_ENV, &path)
        // Captured, so the child's own "test result" line does not pose as this run's.
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let store = Store::open(&path).unwrap();
    write_tasks(&store, "parent");
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "child process failed: {}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_all_written(&store, &["parent", "child"]);
}

#[test]
fn many_openers_racing_on_a_new_file_all_get_the_same_store() {
    for _ in 0..10 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("taskdeck.sqlite3");
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(6));
        let handles: Vec<_> = (0..6)
            .map(|i| {
                let (path, barrier) = (path.clone(), barrier.clone());
                thread::spawn(move || {
                    barrier.wait();
                    let store = Store::open(&path).unwrap();
                    store.create_task(new_task(&format!("opener-{i}"))).unwrap();
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(Store::open(&path).unwrap().list(&ListFilter::default()).unwrap().len(), 6);
    }
}

#[test]
fn the_store_can_be_shared_across_threads_and_async_tasks() {
    fn shareable<T: Send + Sync + Clone + 'static>() {}
    shareable::<Store>();
}
