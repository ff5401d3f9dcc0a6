-- Legacy client-hosted tasks: a server that asks Taskdeck a question (`sampling/createMessage`,
-- `elicitation/create`) with `params.task` follows it as a task Taskdeck keeps, with `tasks/get`,
-- `tasks/result` and `tasks/cancel`, perhaps hours later and on a later connection that resumed
-- its session. One row per task, per server: `request_id` is the JSON of the server's request id
-- (the question's key), `task` the task as `tasks/get` answers it (JSON), `outcome` what
-- `tasks/result` answers once the user has (`{"result": ...}` or `{"error": ...}`). Rows belong
-- to the server's stored session: a new session, or none, takes them away.
CREATE TABLE hosted_tasks (
    server     TEXT NOT NULL,
    task_id    TEXT NOT NULL,
    request_id TEXT NOT NULL,
    task       TEXT NOT NULL CHECK (json_valid(task)),
    outcome    TEXT CHECK (outcome IS NULL OR json_valid(outcome)),
    terminal   INTEGER NOT NULL DEFAULT 0,
    seq        INTEGER NOT NULL,
    PRIMARY KEY (server, task_id)
) STRICT;
