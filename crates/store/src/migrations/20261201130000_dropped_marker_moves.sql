-- The `dropped` marker (see 20261201110000_event_cap.sql) no longer changes in place: an event, once
-- written under its id, is never changed, so a reader that holds it (the app's detail pane reads
-- only the events after the last id it holds) never misses a change. When the count grows, a new
-- marker with the new count is appended and the one before it removed, in the same transaction:
-- the only delete the log allows is that of a `dropped` marker a newer one of its task replaces.

DROP TRIGGER task_events_no_update;

CREATE TRIGGER task_events_no_update BEFORE UPDATE ON task_events
BEGIN
    SELECT RAISE(ABORT, 'task_events is append-only');
END;

DROP TRIGGER task_events_no_delete;

CREATE TRIGGER task_events_no_delete BEFORE DELETE ON task_events
WHEN OLD.kind <> 'dropped' OR NOT EXISTS (
    SELECT 1 FROM task_events AS newer
    WHERE newer.task_id = OLD.task_id AND newer.kind = 'dropped' AND newer.id > OLD.id
)
BEGIN
    SELECT RAISE(ABORT, 'task_events is append-only');
END;
