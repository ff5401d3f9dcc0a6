//! Signing in to a remote MCP server: the MCP authorization spec of both eras (2025-11-25 and
//! 2026-07-28, with the 2025-03-26 fallbacks), as protocol logic with no UI in it.
//!
//! The path of one sign-in, top-down:
//! 1. The server answers 401 (or 403 `insufficient_scope`); [`BearerChallenge::from_header`]
//!    reads its `WWW-Authenticate`.
//! 2. [`discover`] finds the protected resource metadata (RFC 9728) and the authorization
//!    server's metadata (RFC 8414 / OpenID discovery), and refuses what the spec says to refuse.
//! 3. [`registration::reusable_client`] picks the client: pre-registered from the config, a
//!    Client ID Metadata Document URL where the server takes one, or one registered before with
//!    the same issuer; else [`registration::register`] makes a new one (RFC 7591).
//! 4. [`sign_in`] runs the authorization code flow with PKCE S256, `state`, `resource` (RFC 8707)
//!    and a loopback redirect listener, opening the browser through a replaceable function.
//! 5. [`authorization_for`] gives the header for each request, renewing the token through
//!    [`refresh`] when it is about to expire; a refused refresh is [`AuthError::SignInAgain`].
//! 6. [`TokenStore`] keeps what must outlive the process, never in SQLite, the config or a log:
//!    [`default_store`] picks the OS keyring, or a 0600 file when there is none.
//!
//! How the HTTP transport uses it (`transport::http::StoredSignIn`, put in by the engine):
//! - Before each request: [`authorization_for`] on the server's [`StoredAuth`] (loaded from the
//!   [`TokenStore`] once), saving it back when it says it changed; the header goes on every POST,
//!   GET and DELETE.
//! - On 401 ([`HttpFailure::SignInNeeded`](crate::transport::http::HttpFailure::SignInNeeded)):
//!   with a stored sign-in, one [`refresh`] and a retry; [`AuthError::SignInAgain`] (or no
//!   sign-in at all) means "sign-in needed" for the engine, and `taskdeck-cli login SERVER` or
//!   the app runs [`sign_in`] with the challenge from `www_authenticate`.
//! - On 403 with [`BearerChallenge::is_insufficient_scope`]: [`sign_in`] again with the stored
//!   sign-in as `previous` (a step-up: the union of scopes), at most a few times per operation.
//! - The store's calls may block (the keyring is D-Bus on Linux): run them on a blocking thread.

pub mod browser;
pub mod challenge;
pub mod discovery;
mod error;
pub mod flow;
mod http;
pub mod keyring;
pub mod pkce;
pub mod redirect;
pub mod registration;
pub mod tokens;

pub use browser::{OpenBrowser, open_in_browser, open_with_browser_var};
pub use challenge::{BearerChallenge, Challenge, parse_challenges};
pub use discovery::{
    AuthServerMetadata, Discovery, ResourceMetadata, canonical_resource, discover, discover_published,
};
pub use error::AuthError;
pub use flow::{
    Authorization, PendingAuthorization, SignInOptions, authorization_for, authorization_host, exchange_code, refresh,
    select_scopes, sign_in, sign_in_discovered, step_up_scopes,
};
pub use http::AuthHttp;
pub use keyring::{KeyringStore, default_store};
pub use redirect::{Callback, Loopback};
pub use registration::{ClientConfig, ClientOrigin, RegisteredClient, TokenAuthMethod};
pub use tokens::{FileStore, MemoryStore, Secret, StoredAuth, TokenSet, TokenStore};
