//! Full-text search (SQLite FTS5): what a user types becomes a query that can only mean "these
//! words", and a task's row in the index follows the task in the transactions that change it.
//!
//! What is searchable is the view `task_search_source` (migration `20261201150200_search.sql`,
//! which says the bounds); the index is `task_search`, tied to tasks by `task_search_rows`.

use rusqlite::Connection;

use crate::error::Result;

/// The FTS5 query for what a user typed, or `None` when none of it can match anything (only
/// punctuation). Each whitespace-separated word becomes one quoted string, so nothing a user types
/// is FTS5 syntax: `service=payments` is the phrase "service payments", `"Q3"` the word q3, `AND`,
/// `NEAR(`, `col:` and `^` are words like any other. A word ending in `*` matches as a prefix. All
/// words must match, anywhere in the task.
pub(crate) fn fts_query(text: &str) -> Option<String> {
    let phrases: Vec<String> = text
        .split_whitespace()
        .filter_map(|word| {
            let prefix = word.ends_with('*');
            let word = word.trim_end_matches('*');
            // The tokenizer keeps letters and digits only; a word without any is no word to it,
            // and an empty phrase would make the whole query match nothing.
            if !word.chars().any(char::is_alphanumeric) {
                return None;
            }
            let quoted = format!("\"{}\"", word.replace('"', "\"\""));
            Some(if prefix { format!("{quoted}*") } else { quoted })
        })
        .collect();
    (!phrases.is_empty()).then(|| phrases.join(" "))
}

/// Rewrites the task's row in the index from what the task now holds, on the caller's
/// transaction.
pub(crate) fn refresh(conn: &Connection, id: &str) -> Result<()> {
    conn.prepare_cached("INSERT INTO task_search_rows (task_id) VALUES (?1) ON CONFLICT (task_id) DO NOTHING")?
        .execute([id])?;
    conn.prepare_cached(
        "INSERT OR REPLACE INTO task_search (rowid, tool, server, messages, arguments, result, questions)
         SELECT r.row, s.tool, s.server, s.messages, s.arguments, s.result, s.questions
         FROM task_search_source AS s JOIN task_search_rows AS r ON r.task_id = s.task_id
         WHERE s.task_id = ?1",
    )?
    .execute([id])?;
    Ok(())
}

/// Removes the task's row from the index, on the caller's transaction.
pub(crate) fn remove(conn: &Connection, id: &str) -> Result<()> {
    conn.prepare_cached("DELETE FROM task_search WHERE rowid = (SELECT row FROM task_search_rows WHERE task_id = ?1)")?
        .execute([id])?;
    conn.prepare_cached("DELETE FROM task_search_rows WHERE task_id = ?1")?.execute([id])?;
    Ok(())
}

/// FTS5's own default for `deletemerge`: a segment is rewritten once a tenth of its rows are
/// deleted.
const DELETE_MERGE_DEFAULT: i64 = 10;

/// Turns FTS5's delete-merge off or back on (to its default). While it is on, every commit that
/// deletes rows rewrites each segment in which a tenth of the rows are now deleted, so removing
/// most of the index in chunks rewrites the same segments over and over: half a large prune's
/// time. A large prune turns it off for its pass and then [`optimize`]s once. A process that dies
/// in between leaves it off, which costs space in the index only (deleted rows are still dropped
/// when segments merge as new rows come), until the next large prune puts it back.
pub(crate) fn set_delete_merge(conn: &Connection, on: bool) -> Result<()> {
    let value = if on { DELETE_MERGE_DEFAULT } else { 0 };
    conn.prepare_cached("INSERT INTO task_search (task_search, rank) VALUES ('deletemerge', ?1)")?.execute([value])?;
    Ok(())
}

/// Merges the index into one segment, leaving out every row deleted: after a large prune, what
/// gives the index's share of the file back.
pub(crate) fn optimize(conn: &Connection) -> Result<()> {
    conn.execute("INSERT INTO task_search (task_search) VALUES ('optimize')", [])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::fts_query;

    #[test]
    fn what_a_user_types_is_quoted_word_by_word() {
        assert_eq!(fts_query("Q3 report").as_deref(), Some(r#""Q3" "report""#));
        assert_eq!(fts_query("service=payments").as_deref(), Some(r#""service=payments""#));
        assert_eq!(fts_query(r#""Q3""#).as_deref(), Some(r#""""Q3""""#));
        assert_eq!(fts_query("pay*").as_deref(), Some(r#""pay"*"#));
        assert_eq!(fts_query("  = * \" ( ").as_deref(), None);
        assert_eq!(fts_query("").as_deref(), None);
    }
}
