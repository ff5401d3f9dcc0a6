//! Signing in to a remote MCP server: the MCP authorization spec of both eras (2025-11-25 and
//! 2026-07-28, with the 2025-03-26 fallbacks), as protocol logic with no UI in it.
//!
//! The path of one sign-in, top-down:
//! 1. The server answers 401 (or 403 `insufficient_scope`); [`BearerChallenge::from_header`]
//!    reads its `WWW-Authenticate`.
//! 2. [`discover`] finds the protected resource metadata (RFC 9728) and the authorization
//!    server's metadata (RFC 8414 / OpenID discovery), and refuses what the spec says to refuse.
//! 3. [`registration::client_for`] picks the client: pre-registered from the config, one
//!    registered before with the same issuer, or a new dynamic registration (RFC 7591).
//! 4. [`sign_in`] runs the authorization code flow with PKCE S256, `state`, `resource` (RFC 8707)
//!    and a loopback redirect listener, opening the browser through a replaceable function.
//! 5. [`authorization_for`] gives the header for each request, renewing the token through
//!    [`refresh`] when it is about to expire; a refused refresh is [`AuthError::SignInAgain`].
//! 6. [`TokenStore`] keeps what must outlive the process, never in SQLite, the config or a log:
//!    [`default_store`] picks the OS keyring, or a 0600 file when there is none.

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
pub use discovery::{AuthServerMetadata, Discovery, ResourceMetadata, canonical_resource, discover};
pub use error::AuthError;
pub use flow::{
    Authorization, PendingAuthorization, SignInOptions, authorization_for, exchange_code, refresh, select_scopes,
    sign_in, step_up_scopes,
};
pub use http::AuthHttp;
pub use keyring::{KeyringStore, default_store};
pub use redirect::{Callback, Loopback};
pub use registration::{ClientConfig, ClientOrigin, RegisteredClient, TokenAuthMethod};
pub use tokens::{FileStore, MemoryStore, Secret, StoredAuth, TokenSet, TokenStore};
