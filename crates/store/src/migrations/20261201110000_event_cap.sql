-- A task keeps at most a bounded number of events (crates/store/src/state.rs, EVENTS_PER_TASK); past
-- it, the events a server can repeat without end are dropped and one `dropped` event per task says
-- how many. That marker is the one event that changes after it is written (its count grows), so the
-- append-only trigger lets exactly that through: a `dropped` event staying a `dropped` event of the
-- same task under the same id. Everything else stays as written. The version this bumps also keeps
-- an older Taskdeck, which knows no such event kind, from reading the file.

DROP TRIGGER task_events_no_update;

CREATE TRIGGER task_events_no_update BEFORE UPDATE ON task_events
WHEN OLD.kind <> 'dropped' OR NEW.kind <> 'dropped' OR NEW.id <> OLD.id OR NEW.task_id <> OLD.task_id
BEGIN
    SELECT RAISE(ABORT, 'task_events is append-only');
END;
