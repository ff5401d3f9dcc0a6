-- Questions are typed (crates/protocol/src/question.rs). The `question` column held the server's
-- bare request `{method, params}`, its key beside it in `question_key`; it now holds the question as
-- JSON, which Taskdeck reads back from its `key`, `task_id` and `request`, deciding what it asks
-- afresh. Pending questions written the old way are rewrapped in that shape (the task they belong
-- to is the row's remote task, as the engine would have said). A cell that is not JSON is left as
-- it is, to be reported as corrupt when read rather than to stop the file from opening. The version
-- this bumps also keeps an older Taskdeck from misreading the new shape.

UPDATE tasks
SET question = json_object('key', question_key, 'task_id', remote_task_id, 'request', json(question))
WHERE question IS NOT NULL
  AND question_key IS NOT NULL
  AND json_valid(question)
  AND json_type(question, '$.request') IS NULL;
