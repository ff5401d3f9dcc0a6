-- Legacy HTTP sessions Taskdeck left open on remote servers, one per server, so that the next
-- process carries a session on instead of initializing a new one: a server that keeps its tasks in
-- its session (as the reference server does) knows them on that session only. `url` is where the
-- session lives: a server whose config now points elsewhere does not resume it. `info` is what the
-- `initialize` answer taught (JSON), which a resumed session uses without asking again. The
-- session id is not a credential but private to the session; the file is the user's only (0600).

CREATE TABLE http_sessions (
    server           TEXT PRIMARY KEY NOT NULL,
    url              TEXT NOT NULL,
    session_id       TEXT NOT NULL,
    protocol_version TEXT NOT NULL,
    info             TEXT NOT NULL CHECK (json_valid(info)),
    updated_at       TEXT NOT NULL
) STRICT;
