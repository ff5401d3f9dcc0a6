-- The first schema: one row per task, and the append-only log of everything that happened to it.
-- Timestamps are RFC 3339 UTC with milliseconds ("2026-11-30T09:15:00.000Z"): fixed width, so text
-- order is time order and `updated_at < ?` works without parsing.

PRAGMA application_id = 1414744900;

CREATE TABLE tasks (
    id               TEXT PRIMARY KEY NOT NULL,
    server           TEXT NOT NULL,
    tool             TEXT NOT NULL,
    arguments        TEXT NOT NULL,
    idempotency_key  TEXT NOT NULL UNIQUE,
    mode             TEXT NOT NULL CHECK (mode IN ('task', 'call')),
    era              TEXT CHECK (era IN ('legacy', 'modern')),
    remote_task_id   TEXT,
    status           TEXT NOT NULL
                     CHECK (status IN ('working', 'input_required', 'completed', 'failed', 'cancelled')),
    status_message   TEXT,
    progress         REAL,
    progress_total   REAL,
    progress_message TEXT,
    question_key     TEXT,
    question         TEXT,
    answer_key       TEXT,
    answer           TEXT,
    result           TEXT,
    error_code       INTEGER,
    error_message    TEXT,
    error_reason     TEXT,
    ttl_ms           INTEGER,
    poll_interval_ms INTEGER,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL
) STRICT;

-- Resume and reclaim look for non-terminal tasks by age; list shows newest first.
CREATE INDEX tasks_by_status ON tasks (status, updated_at);
CREATE INDEX tasks_by_created ON tasks (created_at);

CREATE TABLE task_events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id     TEXT NOT NULL REFERENCES tasks (id),
    at          TEXT NOT NULL,
    kind        TEXT NOT NULL,
    from_status TEXT,
    to_status   TEXT,
    data        TEXT NOT NULL DEFAULT '{}'
) STRICT;

CREATE INDEX task_events_by_task ON task_events (task_id, id);

-- The log is evidence of what servers said; enforce append-only in the file itself so that no
-- code path, present or future, can rewrite history.
CREATE TRIGGER task_events_no_update BEFORE UPDATE ON task_events
BEGIN
    SELECT RAISE(ABORT, 'task_events is append-only');
END;

CREATE TRIGGER task_events_no_delete BEFORE DELETE ON task_events
BEGIN
    SELECT RAISE(ABORT, 'task_events is append-only');
END;
