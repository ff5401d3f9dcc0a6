//! The schema's history. Each file is applied once, in order, inside one transaction with the bump
//! of `user_version`; a released file is never edited, only followed by a new one.

use rusqlite_migration::{M, Migrations};

const LIST: &[M<'static>] = &[
    M::up(include_str!("migrations/20261130091500_init.sql")),
    M::up(include_str!("migrations/20261201090000_typed_questions.sql")),
    M::up(include_str!("migrations/20261201110000_event_cap.sql")),
    M::up(include_str!("migrations/20261201130000_dropped_marker_moves.sql")),
    M::up(include_str!("migrations/20261201150000_http_sessions.sql")),
    M::up(include_str!("migrations/20261201150100_task_pages.sql")),
    M::up(include_str!("migrations/20261201150200_search.sql")),
    M::up(include_str!("migrations/20261201150300_delete_and_purge_log.sql")),
    M::up(include_str!("migrations/20261201160000_pending_questions.sql")),
    M::up(include_str!("migrations/20261201170000_hosted_tasks.sql")),
];

pub(crate) const MIGRATIONS: Migrations<'static> = Migrations::from_slice(LIST);

/// The `user_version` a fully migrated file has; anything above was written by a newer Taskdeck.
pub(crate) const LATEST: i64 = LIST.len() as i64;
