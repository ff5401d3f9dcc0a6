-- Full-text search over every task (crates/store/src/search.rs). One FTS5 row per task holds what
-- a user may look for: the tool, the server, the status messages (and failure and cancel reasons)
-- the task went through, its arguments, its result's text and structured content, and the
-- questions it asked with the answers given. The index keeps no copy of the text
-- (`content=''`, so the file does not hold every result twice) and allows its rows to be replaced
-- and deleted (`contentless_delete=1`); `task_search_rows` ties each row to its task under an
-- INTEGER PRIMARY KEY, which, unlike the rowid of `tasks`, no VACUUM renumbers.
--
-- What is searchable is defined once, by the view `task_search_source`: the store refreshes a
-- task's row from it in the transaction that creates the task, records its question or answer, or
-- ends it (status messages are indexed then, all of them), and this migration builds the index of
-- an existing store from it. Text comes out of JSON as `key value` pairs of every scalar
-- (so `service=payments` finds `{"service": "payments"}`); in a result only the text, URIs, names,
-- titles and descriptions of its content blocks (never base64 data) and the structured content. A
-- cell that is not valid JSON adds nothing rather than failing the write. Each column is bounded
-- in characters: messages 16,384, arguments 32,768, result 196,608, questions and answers 16,384,
-- tool and server 1,024 (about 256 KiB per task at most).

CREATE VIRTUAL TABLE task_search USING fts5 (
    tool, server, messages, arguments, result, questions,
    content = '', contentless_delete = 1, tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TABLE task_search_rows (
    row     INTEGER PRIMARY KEY,
    task_id TEXT NOT NULL UNIQUE REFERENCES tasks (id)
) STRICT;

CREATE VIEW task_search_source AS
SELECT
    t.id AS task_id,
    substr(t.tool, 1, 1024) AS tool,
    substr(t.server, 1, 1024) AS server,
    (SELECT substr(group_concat(m, ' '), 1, 16384) FROM (
        SELECT CASE WHEN json_valid(e.data) THEN coalesce(
                   json_extract(e.data, '$.message'), json_extract(e.data, '$.error.message'),
                   json_extract(e.data, '$.reason')) END AS m
        FROM task_events AS e
        WHERE e.task_id = t.id AND e.kind IN ('status', 'question', 'failed', 'cancelled', 'reclaimed')
        ORDER BY e.id
    ) WHERE typeof(m) = 'text') AS messages,
    (SELECT substr(group_concat(
                CASE WHEN j.parent IS NOT NULL AND typeof(j.key) = 'text' THEN j.key || ' ' ELSE '' END
                || CASE WHEN j.type IN ('text', 'integer', 'real') THEN j.atom ELSE '' END, ' '), 1, 32768)
     FROM json_tree(CASE WHEN json_valid(t.arguments) THEN t.arguments ELSE 'null' END) AS j
     WHERE (j.parent IS NOT NULL AND typeof(j.key) = 'text') OR j.type IN ('text', 'integer', 'real')) AS arguments,
    (SELECT substr(group_concat(x, ' '), 1, 196608) FROM (
        SELECT j.atom AS x
        FROM json_tree(CASE WHEN json_valid(t.result) THEN t.result ELSE 'null' END, '$.content') AS j
        WHERE j.type = 'text' AND j.key IN ('text', 'uri', 'name', 'title', 'description')
        UNION ALL
        SELECT CASE WHEN j.parent IS NOT NULL AND typeof(j.key) = 'text' THEN j.key || ' ' ELSE '' END
               || CASE WHEN j.type IN ('text', 'integer', 'real') THEN j.atom ELSE '' END
        FROM json_tree(CASE WHEN json_valid(t.result) THEN t.result ELSE 'null' END, '$.structuredContent') AS j
        WHERE (j.parent IS NOT NULL AND typeof(j.key) = 'text') OR j.type IN ('text', 'integer', 'real')
        UNION ALL
        SELECT t.error_message
    ) WHERE typeof(x) = 'text') AS result,
    (SELECT substr(group_concat(x, ' '), 1, 16384) FROM (
        SELECT CASE WHEN json_valid(e.data) THEN json_extract(e.data, '$.request.params.message') END AS x
        FROM task_events AS e WHERE e.task_id = t.id AND e.kind = 'question'
        UNION ALL
        SELECT CASE WHEN j.parent IS NOT NULL AND typeof(j.key) = 'text' THEN j.key || ' ' ELSE '' END
               || CASE WHEN j.type IN ('text', 'integer', 'real') THEN j.atom ELSE '' END
        FROM task_events AS e,
             json_tree(CASE WHEN json_valid(e.data) THEN e.data ELSE 'null' END, '$.response.content') AS j
        WHERE e.task_id = t.id AND e.kind = 'answer' AND ((j.parent IS NOT NULL AND typeof(j.key) = 'text') OR j.type IN ('text', 'integer', 'real'))
    ) WHERE typeof(x) = 'text') AS questions
FROM tasks AS t;

INSERT INTO task_search_rows (task_id) SELECT id FROM tasks ORDER BY created_at, rowid;

INSERT INTO task_search (rowid, tool, server, messages, arguments, result, questions)
SELECT r.row, s.tool, s.server, s.messages, s.arguments, s.result, s.questions
FROM task_search_rows AS r JOIN task_search_source AS s ON s.task_id = r.task_id;
