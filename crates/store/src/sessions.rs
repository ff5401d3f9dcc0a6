//! The legacy HTTP sessions Taskdeck left open on remote servers (one per server), kept so that a
//! later process resumes a session instead of initializing a new one, which on a server that keeps
//! its tasks in the session would find none of them. Each change is one transaction.

use rusqlite::{OptionalExtension, params};
use serde_json::Value;

use crate::error::Result;
use crate::store::{LIVE, Store};
use crate::time;

/// One server's open session, as stored.
#[derive(Clone, PartialEq)]
pub struct HttpSession {
    /// The server's name in the config.
    pub server: String,
    /// The endpoint the session lives at; a session stored for another URL is not this server's.
    pub url: String,
    /// Private to the session: never shown or logged (Debug leaves it out).
    pub session_id: String,
    /// The version `initialize` negotiated.
    pub protocol_version: String,
    /// What the handshake taught, as the client keeps it (JSON).
    pub info: Value,
}

impl std::fmt::Debug for HttpSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpSession")
            .field("server", &self.server)
            .field("url", &self.url)
            .field("session_id", &"(hidden)")
            .field("protocol_version", &self.protocol_version)
            .field("info", &self.info)
            .finish()
    }
}

impl Store {
    /// The session stored for `server`, if any.
    pub fn http_session(&self, server: &str) -> Result<Option<HttpSession>> {
        let conn = self.conn();
        let row = conn
            .prepare_cached("SELECT url, session_id, protocol_version, info FROM http_sessions WHERE server = ?1")?
            .query_row([server], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?, r.get::<_, String>(3)?))
            })
            .optional()?;
        let Some((url, session_id, protocol_version, info)) = row else { return Ok(None) };
        // A cell nobody can read is a session nobody can resume: as good as none.
        let Ok(info) = serde_json::from_str(&info) else { return Ok(None) };
        Ok(Some(HttpSession { server: server.to_owned(), url, session_id, protocol_version, info }))
    }

    /// Stores `session` as its server's, replacing the one stored before. The hosted tasks of a
    /// session it replaces go with it: no later connection can be asked about them.
    pub fn keep_http_session(&self, session: &HttpSession) -> Result<()> {
        let mut conn = self.writer()?;
        let tx = conn.transaction()?;
        tx.prepare_cached(
            "DELETE FROM hosted_tasks WHERE server = ?1 AND NOT EXISTS
                 (SELECT 1 FROM http_sessions WHERE server = ?1 AND session_id = ?2)",
        )?
        .execute(params![session.server, session.session_id])?;
        tx.prepare_cached(
            "INSERT INTO http_sessions (server, url, session_id, protocol_version, info, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (server) DO UPDATE SET url = excluded.url, session_id = excluded.session_id,
                 protocol_version = excluded.protocol_version, info = excluded.info,
                 updated_at = excluded.updated_at",
        )?
        .execute(params![
            session.server,
            session.url,
            session.session_id,
            session.protocol_version,
            session.info.to_string(),
            time::format(&time::now())
        ])?;
        tx.commit()?;
        Ok(())
    }

    /// Removes the session stored for `server`, and its hosted tasks; returns whether there was one.
    pub fn forget_http_session(&self, server: &str) -> Result<bool> {
        let mut conn = self.writer()?;
        let tx = conn.transaction()?;
        tx.prepare_cached("DELETE FROM hosted_tasks WHERE server = ?1")?.execute([server])?;
        let removed = tx.prepare_cached("DELETE FROM http_sessions WHERE server = ?1")?.execute([server])?;
        tx.commit()?;
        Ok(removed > 0)
    }

    /// Whether any task of `server` is still working or waiting for input: what a session that
    /// holds tasks must stay open for.
    pub fn has_live_tasks(&self, server: &str) -> Result<bool> {
        let conn = self.conn();
        let sql = format!("SELECT EXISTS (SELECT 1 FROM tasks WHERE server = ?1 AND {LIVE})");
        Ok(conn.prepare_cached(&sql)?.query_row([server], |r| r.get(0))?)
    }
}
