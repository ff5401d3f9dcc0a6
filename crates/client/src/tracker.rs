//! Which status notifications are news. Real servers send them early (before the task handle),
//! twice, out of order, and after the end (server-quirks 1 and 9): the tracker keeps the newest
//! state per task and says what to do with each arrival.

use std::collections::{HashMap, VecDeque};

use chrono::{DateTime, FixedOffset};
use taskdeck_protocol::TaskStatus;

use taskdeck_protocol::modern::tasks::TaskProgress;

use crate::model::{Discard, TaskSnapshot};

/// How many statuses for not-yet-known tasks are held, waiting for their task handle.
const MAX_HELD: usize = 256;

#[derive(Debug, PartialEq)]
pub(crate) enum Verdict {
    Deliver,
    /// For a task not known yet; kept until its handle arrives.
    Held,
    Discard(Discard, String),
}

#[derive(Debug, Clone)]
struct Seen {
    status: TaskStatus,
    at: String,
    message: Option<String>,
    /// A modern task's progress (in its `_meta`): a server may push it without changing anything
    /// else, and that is news.
    progress: Option<TaskProgress>,
}

impl Seen {
    fn of(s: &TaskSnapshot) -> Seen {
        Seen {
            status: s.status,
            at: s.last_updated_at.clone(),
            message: s.status_message.clone(),
            progress: s.progress.clone(),
        }
    }
}

#[derive(Default)]
pub(crate) struct TaskTracker {
    known: HashMap<String, Seen>,
    held: HashMap<String, TaskSnapshot>,
    held_order: VecDeque<String>,
}

fn parse(at: &str) -> Option<DateTime<FixedOffset>> {
    DateTime::parse_from_rfc3339(at).ok()
}

/// `Some(true)` if `a` is strictly older than `b`; `None` when either timestamp is unreadable.
fn older(a: &str, b: &str) -> Option<bool> {
    Some(parse(a)? < parse(b)?)
}

impl TaskTracker {
    pub fn observe(&mut self, s: &TaskSnapshot) -> Verdict {
        let Some(seen) = self.known.get_mut(&s.task_id) else {
            if let Some(prev) = self.held.get(&s.task_id) {
                if prev.status.is_terminal() {
                    return Verdict::Discard(
                        Discard::AfterTerminal,
                        format!("task {} is already {}; ignoring {}", s.task_id, prev.status, s.status),
                    );
                }
                if older(&s.last_updated_at, &prev.last_updated_at) == Some(true) {
                    return Verdict::Discard(Discard::Stale, format!("task {}: older status held already", s.task_id));
                }
            } else {
                if self.held_order.len() >= MAX_HELD
                    && let Some(evicted) = self.held_order.pop_front()
                {
                    self.held.remove(&evicted);
                }
                self.held_order.push_back(s.task_id.clone());
            }
            self.held.insert(s.task_id.clone(), s.clone());
            return Verdict::Held;
        };
        if seen.status.is_terminal() {
            return Verdict::Discard(
                Discard::AfterTerminal,
                format!("task {} is already {}; ignoring {}", s.task_id, seen.status, s.status),
            );
        }
        if seen.status == s.status
            && seen.at == s.last_updated_at
            && seen.message == s.status_message
            && seen.progress == s.progress
        {
            return Verdict::Discard(Discard::Duplicate, format!("task {}: {} again", s.task_id, s.status));
        }
        if older(&s.last_updated_at, &seen.at) == Some(true) {
            return Verdict::Discard(
                Discard::Stale,
                format!(
                    "task {}: {} at {} is older than {} at {}",
                    s.task_id, s.status, s.last_updated_at, seen.status, seen.at
                ),
            );
        }
        *seen = Seen::of(s);
        Verdict::Deliver
    }

    /// Makes a task known (its handle arrived, or the caller re-attached). Returns a status that
    /// arrived early and is newer than `s`, for delivery.
    pub fn claim(&mut self, s: &TaskSnapshot) -> Option<TaskSnapshot> {
        self.record(s);
        let early = self.held.remove(&s.task_id)?;
        self.held_order.retain(|id| id != &s.task_id);
        (self.observe(&early) == Verdict::Deliver).then_some(early)
    }

    /// The newest status known for a task: delivered, polled or claimed.
    pub fn status(&self, task_id: &str) -> Option<TaskStatus> {
        self.known.get(task_id).map(|seen| seen.status)
    }

    /// Records what a poll said, unless it is older than what we know or the task already ended.
    pub fn record(&mut self, s: &TaskSnapshot) {
        let fresh = Seen::of(s);
        match self.known.get_mut(&s.task_id) {
            None => {
                self.known.insert(s.task_id.clone(), fresh);
            }
            Some(seen) if !seen.status.is_terminal() && older(&s.last_updated_at, &seen.at) != Some(true) => {
                *seen = fresh
            }
            Some(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(id: &str, status: TaskStatus, at: &str) -> TaskSnapshot {
        TaskSnapshot { last_updated_at: at.into(), ..TaskSnapshot::bare(id, status, "2026-01-01T00:00:00Z") }
    }

    #[test]
    fn a_push_that_moves_only_the_progress_is_delivered_and_the_same_again_is_not() {
        let mut t = TaskTracker::default();
        let at = "2026-01-01T00:00:01Z";
        t.record(&snap("a", TaskStatus::Working, at));
        let with = |p: f64| TaskSnapshot {
            progress: Some(TaskProgress { progress: p, total: Some(10.0), message: None }),
            ..snap("a", TaskStatus::Working, at)
        };
        assert_eq!(t.observe(&with(3.0)), Verdict::Deliver);
        assert!(matches!(t.observe(&with(3.0)), Verdict::Discard(Discard::Duplicate, _)));
        assert_eq!(t.observe(&with(4.0)), Verdict::Deliver);
    }

    #[test]
    fn early_status_is_held_and_delivered_when_the_handle_arrives() {
        let mut t = TaskTracker::default();
        let early = snap("a", TaskStatus::InputRequired, "2026-01-01T00:00:02Z");
        assert_eq!(t.observe(&early), Verdict::Held);
        let handle = snap("a", TaskStatus::Working, "2026-01-01T00:00:01Z");
        assert_eq!(t.claim(&handle), Some(early));
    }

    #[test]
    fn duplicates_stale_and_after_terminal_are_discarded() {
        let mut t = TaskTracker::default();
        t.claim(&snap("a", TaskStatus::Working, "2026-01-01T00:00:01Z"));
        let next = snap("a", TaskStatus::InputRequired, "2026-01-01T00:00:03Z");
        assert_eq!(t.observe(&next), Verdict::Deliver);
        assert!(matches!(t.observe(&next), Verdict::Discard(Discard::Duplicate, _)));
        let stale = snap("a", TaskStatus::Working, "2026-01-01T00:00:02Z");
        assert!(matches!(t.observe(&stale), Verdict::Discard(Discard::Stale, _)));
        assert_eq!(t.observe(&snap("a", TaskStatus::Cancelled, "2026-01-01T00:00:04Z")), Verdict::Deliver);
        let late = snap("a", TaskStatus::Completed, "2026-01-01T00:00:09Z");
        assert!(matches!(t.observe(&late), Verdict::Discard(Discard::AfterTerminal, _)));
    }

    #[test]
    fn held_statuses_are_bounded() {
        let mut t = TaskTracker::default();
        for i in 0..(MAX_HELD * 3) {
            t.observe(&snap(&format!("t{i}"), TaskStatus::Working, "2026-01-01T00:00:01Z"));
        }
        assert_eq!(t.held.len(), MAX_HELD);
        assert_eq!(t.held_order.len(), MAX_HELD);
    }
}
