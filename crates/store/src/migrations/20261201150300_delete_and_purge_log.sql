-- Tasks can be deleted (by the user, or by a retention policy), and the append-only rule becomes
-- precise: an event is never changed once written; it is removed only in two cases:
--   1. it is a `dropped` marker that a newer marker of the same task replaces (as before, see
--      20261201130000_dropped_marker_moves.sql);
--   2. its task is gone: the task's row was deleted earlier in the same transaction.
-- Deleting a task's row while any of its events remain fails at commit (the events' foreign key,
-- checked at commit by the store's delete, which defers it), and deleting an event while its task
-- remains fails at once (this trigger): the two go together or not at all. The store's delete also
-- removes the task's search row and appends one line to `purge_log`, in the same transaction.
--
-- A task that is still working or waiting for input cannot be deleted at all: the engine cancels
-- it first (or refuses), so a deleted task never has a server still working on it unknown to
-- Taskdeck.
--
-- `purge_log` says that something was removed without keeping what: the task's id, tool and
-- server, when, and why (`user`: a delete someone asked for; `policy`: retention). It is
-- append-only like the event log.

DROP TRIGGER task_events_no_delete;

CREATE TRIGGER task_events_no_delete BEFORE DELETE ON task_events
WHEN EXISTS (SELECT 1 FROM tasks WHERE tasks.id = OLD.task_id)
 AND (OLD.kind <> 'dropped' OR NOT EXISTS (
        SELECT 1 FROM task_events AS newer
        WHERE newer.task_id = OLD.task_id AND newer.kind = 'dropped' AND newer.id > OLD.id
     ))
BEGIN
    SELECT RAISE(ABORT, 'task_events is append-only: an event goes only with its task');
END;

CREATE TRIGGER tasks_no_live_delete BEFORE DELETE ON tasks
WHEN OLD.status IN ('working', 'input_required')
BEGIN
    SELECT RAISE(ABORT, 'a task that is working or waiting for input cannot be deleted');
END;

CREATE TABLE purge_log (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id   TEXT NOT NULL,
    tool      TEXT NOT NULL,
    server    TEXT NOT NULL,
    purged_at TEXT NOT NULL,
    why       TEXT NOT NULL CHECK (why IN ('user', 'policy'))
) STRICT;

CREATE TRIGGER purge_log_no_update BEFORE UPDATE ON purge_log
BEGIN
    SELECT RAISE(ABORT, 'purge_log is append-only');
END;

CREATE TRIGGER purge_log_no_delete BEFORE DELETE ON purge_log
BEGIN
    SELECT RAISE(ABORT, 'purge_log is append-only');
END;

-- Retention looks for finished, unpinned tasks by when they ended.
CREATE INDEX tasks_by_pinned_updated ON tasks (pinned, updated_at);
