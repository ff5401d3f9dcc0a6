-- The task list is read from the store a page at a time (crates/store/src/history.rs): newest first
-- by `created_at`, then `rowid` (the order `list` has always had), optionally by status, server or
-- tool, with counts per status. Each filter the list offers gets an index that serves it in that
-- order, so a page costs its own rows whatever the store holds. `pinned` marks a task the user
-- keeps: retention never removes it.

ALTER TABLE tasks ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0 CHECK (pinned IN (0, 1));

CREATE INDEX tasks_by_status_created ON tasks (status, created_at);
CREATE INDEX tasks_by_server_created ON tasks (server, created_at);
CREATE INDEX tasks_by_tool_created ON tasks (tool, created_at);
