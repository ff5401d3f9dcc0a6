//! What to show, and when, of the alerts the tasks raise: the one place that decides, without a
//! clock or a notification server, so it is tested as a table.
//!
//! A server decides how often its tasks finish or ask, so nothing here trusts it to be reasonable:
//! alerts that arrive together become one notification ("3 tasks need you"), a task's newer alert
//! replaces its older one while both wait, and at most [`MAX_PER_WINDOW`] notifications are shown in
//! any [`RATE_WINDOW`]; whatever waits beyond that is shown as one, later.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Alerts arriving within this much of the first one waiting are shown together.
pub const GATHER: Duration = Duration::from_millis(400);
/// At most [`MAX_PER_WINDOW`] notifications in any window this long.
pub const RATE_WINDOW: Duration = Duration::from_secs(10);
pub const MAX_PER_WINDOW: usize = 3;
/// Alerts kept while they wait; beyond this the oldest are only counted.
pub const MAX_PENDING: usize = 256;
/// How many tasks a grouped notification names before "and N more".
pub const NAMED_IN_GROUP: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlertKind {
    Done,
    Failed,
    NeedsInput,
}

/// One task's news, already cut to size and made plain (see `super::text`).
#[derive(Debug, Clone, PartialEq)]
pub struct Alert {
    pub task_id: String,
    pub kind: AlertKind,
    pub summary: String,
    pub body: String,
}

/// One notification to put on screen. `body` is plain text; the backend escapes it for a server
/// that reads markup.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    pub summary: String,
    pub body: String,
    /// The task a click brings forward; a group brings the window forward only.
    pub task_id: Option<String>,
}

#[derive(Debug, PartialEq)]
pub enum Step {
    Show(Notice),
    /// Nothing to show before then.
    WaitUntil(Instant),
    /// Nothing waits.
    Idle,
}

#[derive(Debug, Default)]
pub struct Planner {
    /// At most one per task, oldest first.
    pending: VecDeque<Alert>,
    /// Tasks pushed out of `pending` by [`MAX_PENDING`], still counted in the next group.
    overflow: usize,
    /// When the oldest alert waiting arrived.
    since: Option<Instant>,
    /// When the notifications of the last [`RATE_WINDOW`] were shown.
    shown: VecDeque<Instant>,
}

impl Planner {
    pub fn push(&mut self, alert: Alert, now: Instant) {
        if let Some(i) = self.pending.iter().position(|a| a.task_id == alert.task_id) {
            // The task moved on while its alert waited: only its latest state is news.
            self.pending.remove(i);
        } else if self.pending.len() == MAX_PENDING {
            self.pending.pop_front();
            self.overflow += 1;
        }
        self.pending.push_back(alert);
        self.since.get_or_insert(now);
    }

    /// Withdraws the waiting alerts of tasks that were deleted: a notification must not bring
    /// forward a task that is gone.
    pub fn forget(&mut self, ids: &[String]) {
        self.pending.retain(|a| !ids.contains(&a.task_id));
        if self.pending.is_empty() && self.overflow == 0 {
            self.since = None;
        }
    }

    /// What to do at `now`: show one notification (call again after), or wait.
    pub fn next(&mut self, now: Instant) -> Step {
        let Some(since) = self.since else { return Step::Idle };
        while self.shown.front().is_some_and(|&at| now.saturating_duration_since(at) >= RATE_WINDOW) {
            self.shown.pop_front();
        }
        let mut at = since + GATHER;
        if self.shown.len() >= MAX_PER_WINDOW
            && let Some(&oldest) = self.shown.front()
        {
            at = at.max(oldest + RATE_WINDOW);
        }
        if now < at {
            return Step::WaitUntil(at);
        }
        let alerts: Vec<Alert> = self.pending.drain(..).collect();
        let overflow = std::mem::take(&mut self.overflow);
        self.since = None;
        self.shown.push_back(now);
        Step::Show(notice(alerts, overflow))
    }
}

fn notice(mut alerts: Vec<Alert>, overflow: usize) -> Notice {
    if alerts.len() == 1 && overflow == 0 {
        let a = alerts.remove(0);
        return Notice { summary: a.summary, body: a.body, task_id: Some(a.task_id) };
    }
    let count = |kind| alerts.iter().filter(|a| a.kind == kind).count();
    let (asking, failed, done) = (count(AlertKind::NeedsInput), count(AlertKind::Failed), count(AlertKind::Done));
    let total = alerts.len() + overflow;
    let summary =
        if asking > 0 || failed > 0 { format!("{total} tasks need you") } else { format!("{total} tasks finished") };
    let mut parts = Vec::new();
    for (n, what) in [(asking, "waiting for your input"), (failed, "failed"), (done, "done")] {
        if n > 0 {
            parts.push(format!("{n} {what}"));
        }
    }
    if overflow > 0 {
        parts.push(format!("{overflow} more"));
    }
    // Newest first, one line per distinct summary: eight runs of one tool are one line, not eight.
    let mut named: Vec<(&str, usize)> = Vec::new();
    for a in alerts.iter().rev() {
        if let Some((_, n)) = named.iter_mut().find(|(s, _)| *s == a.summary) {
            *n += 1;
        } else if named.len() < NAMED_IN_GROUP {
            named.push((&a.summary, 1));
        }
    }
    let mut lines = vec![parts.join(", ")];
    lines.extend(named.iter().map(|&(s, n)| if n > 1 { format!("{s} (×{n})") } else { s.to_owned() }));
    let unnamed = total - named.iter().map(|(_, n)| n).sum::<usize>();
    if unnamed > 0 {
        lines.push(format!("and {unnamed} more"));
    }
    Notice { summary, body: lines.join("\n"), task_id: None }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alert(task: &str, kind: AlertKind) -> Alert {
        let what = match kind {
            AlertKind::Done => "Done",
            AlertKind::Failed => "Failed",
            AlertKind::NeedsInput => "Needs your input",
        };
        Alert {
            task_id: task.into(),
            kind,
            summary: format!("{task} on demo: {what}"),
            body: format!("body of {task}"),
        }
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Feeds `(at ms, task, kind)` alerts and polls every 50 ms until `until_ms`, as the worker
    /// would: returns each notice with the time it was shown.
    fn run(alerts: &[(u64, &str, AlertKind)], until_ms: u64) -> Vec<(u64, Notice)> {
        let t0 = Instant::now();
        let mut p = Planner::default();
        let mut shown = Vec::new();
        let mut next = 0;
        let mut now = 0;
        while now <= until_ms {
            while next < alerts.len() && alerts[next].0 <= now {
                let (_, task, kind) = alerts[next];
                p.push(alert(task, kind), t0 + ms(now));
                next += 1;
            }
            while let Step::Show(n) = p.next(t0 + ms(now)) {
                shown.push((now, n));
            }
            now += 50;
        }
        shown
    }

    #[test]
    fn one_alert_is_shown_alone_after_the_gather_window_and_a_click_brings_its_task() {
        let shown = run(&[(0, "a", AlertKind::Done)], 2000);
        assert_eq!(shown.len(), 1);
        let (at, n) = &shown[0];
        assert_eq!(*at, GATHER.as_millis() as u64);
        assert_eq!(
            n,
            &Notice { summary: "a on demo: Done".into(), body: "body of a".into(), task_id: Some("a".into()) }
        );
    }

    #[test]
    fn alerts_arriving_together_become_one_notification() {
        let shown = run(
            &[(0, "a", AlertKind::NeedsInput), (100, "b", AlertKind::NeedsInput), (200, "c", AlertKind::Done)],
            2000,
        );
        assert_eq!(shown.len(), 1);
        let n = &shown[0].1;
        assert_eq!(n.summary, "3 tasks need you");
        assert_eq!(
            n.body,
            "2 waiting for your input, 1 done\nc on demo: Done\nb on demo: Needs your input\na on demo: Needs your input"
        );
        assert_eq!(n.task_id, None, "a group brings the window forward, not one task");
    }

    #[test]
    fn a_group_names_each_kind_of_news_once_with_its_count() {
        let mut alerts: Vec<(u64, &str, AlertKind)> = Vec::new();
        let ids: Vec<String> = (0..8).map(|i| format!("t{i}")).collect();
        for id in &ids {
            alerts.push((0, id.as_str(), AlertKind::NeedsInput));
        }
        let t0 = Instant::now();
        let mut p = Planner::default();
        for (i, (_, id, kind)) in alerts.iter().enumerate() {
            let mut a = alert(id, *kind);
            a.summary = if i < 6 {
                "diagnose on demo: Needs your input".into()
            } else {
                format!("{id} on demo: Needs your input")
            };
            p.push(a, t0);
        }
        let Step::Show(n) = p.next(t0 + GATHER) else { panic!("nothing shown") };
        assert_eq!(n.summary, "8 tasks need you");
        assert_eq!(
            n.body,
            "8 waiting for your input\nt7 on demo: Needs your input\nt6 on demo: Needs your input\ndiagnose on demo: Needs your input (×6)"
        );
    }

    #[test]
    fn a_group_of_finished_tasks_says_finished() {
        let shown = run(&[(0, "a", AlertKind::Done), (10, "b", AlertKind::Done)], 2000);
        assert_eq!(shown[0].1.summary, "2 tasks finished");
    }

    #[test]
    fn a_tasks_newer_alert_replaces_the_one_still_waiting() {
        let shown = run(&[(0, "a", AlertKind::NeedsInput), (100, "a", AlertKind::Failed)], 2000);
        assert_eq!(shown.len(), 1);
        assert_eq!(shown[0].1.summary, "a on demo: Failed");
    }

    #[test]
    fn a_thousand_questions_make_at_most_the_cap_of_notifications_and_every_task_is_counted() {
        // One question every 10 ms for 10 s: a flood.
        let names: Vec<String> = (0..1000).map(|i| format!("t{i}")).collect();
        let alerts: Vec<(u64, &str, AlertKind)> =
            names.iter().enumerate().map(|(i, n)| (i as u64 * 10, n.as_str(), AlertKind::NeedsInput)).collect();
        let shown = run(&alerts, 30_000);
        let windows = 30_000 / RATE_WINDOW.as_millis() as usize + 1;
        assert!(shown.len() <= MAX_PER_WINDOW * windows, "{} notifications", shown.len());
        for w in shown.windows(MAX_PER_WINDOW + 1) {
            assert!(w[MAX_PER_WINDOW].0 - w[0].0 >= RATE_WINDOW.as_millis() as u64, "more than the cap in one window");
        }
        let counted: usize = shown
            .iter()
            .map(|(_, n)| if n.task_id.is_some() { 1 } else { n.summary.split(' ').next().unwrap().parse().unwrap() })
            .sum();
        assert_eq!(counted, 1000, "every task is in some notification, none twice");
        assert!(shown.iter().all(|(_, n)| n.body.lines().count() <= NAMED_IN_GROUP + 2), "a group names a few tasks");
    }

    #[test]
    fn beyond_the_pending_bound_tasks_are_counted_not_kept() {
        let t0 = Instant::now();
        let mut p = Planner::default();
        for i in 0..(MAX_PENDING + 50) {
            p.push(alert(&format!("t{i}"), AlertKind::Failed), t0);
        }
        assert_eq!(p.pending.len(), MAX_PENDING);
        let Step::Show(n) = p.next(t0 + GATHER) else { panic!("nothing shown") };
        assert_eq!(n.summary, format!("{} tasks need you", MAX_PENDING + 50));
        assert!(n.body.starts_with(&format!("{MAX_PENDING} failed, 50 more\n")), "{}", n.body);
        assert_eq!(p.next(t0 + GATHER), Step::Idle);
    }

    #[test]
    fn waiting_says_until_when() {
        let t0 = Instant::now();
        let mut p = Planner::default();
        assert_eq!(p.next(t0), Step::Idle);
        p.push(alert("a", AlertKind::Done), t0);
        assert_eq!(p.next(t0 + ms(10)), Step::WaitUntil(t0 + GATHER));
        for i in 0..MAX_PER_WINDOW {
            let at = t0 + GATHER + ms(i as u64);
            p.push(alert(&format!("x{i}"), AlertKind::Done), at - GATHER);
            assert!(matches!(p.next(at), Step::Show(_)));
        }
        p.push(alert("late", AlertKind::Done), t0 + ms(1000));
        assert_eq!(p.next(t0 + ms(1500)), Step::WaitUntil(t0 + GATHER + RATE_WINDOW), "the cap holds it back");
    }

    #[test]
    fn a_deleted_tasks_waiting_alert_is_withdrawn() {
        let t0 = Instant::now();
        let alert = |id: &str| Alert {
            task_id: id.into(),
            kind: AlertKind::Done,
            summary: format!("{id} done"),
            body: String::new(),
        };
        let mut p = Planner::default();
        p.push(alert("a"), t0);
        p.push(alert("b"), t0);
        p.forget(&["a".to_owned()]);
        match p.next(t0 + GATHER) {
            Step::Show(n) => assert_eq!(n.task_id.as_deref(), Some("b"), "{n:?}"),
            other => panic!("{other:?}"),
        }
        p.push(alert("c"), t0 + GATHER);
        p.forget(&["c".to_owned()]);
        assert_eq!(p.next(t0 + GATHER * 3), Step::Idle, "nothing left to show");
    }
}
