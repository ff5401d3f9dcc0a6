/// Why a sign-in, a discovery or a refresh did not succeed. Every message names what to do or
/// what was wrong; none carries a token, a code or a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// A URL the sign-in would use is not https (plain http is allowed on loopback only).
    #[error("{url} is not https: sign-in uses https only (plain http only on this machine)")]
    Insecure { url: String },
    #[error("{url} is not a usable URL: {detail}")]
    BadUrl { url: String, detail: String },
    #[error("could not reach {url}: {detail}")]
    Unreachable { url: String, detail: String },
    #[error("{url} answered HTTP {status}")]
    Status { url: String, status: u16 },
    /// A redirect to another host, which a sign-in never follows.
    #[error("{url} redirected to {to}, another host, which sign-in does not follow")]
    Redirected { url: String, to: String },
    #[error("{url} sent more than {limit} bytes")]
    TooLarge { url: String, limit: usize },
    #[error("{url} sent a document that could not be read: {detail}")]
    Malformed { url: String, detail: String },
    /// The protected resource metadata speaks for another resource than the server's URL.
    #[error("the server's metadata is for {got}, not for {expected}: refused")]
    ResourceMismatch { expected: String, got: String },
    /// The authorization server's metadata names another issuer than the one it was asked for.
    #[error("the authorization server metadata names issuer {got}, not {expected}: refused")]
    IssuerMismatch { expected: String, got: String },
    /// The authorization server does not say it supports PKCE with S256, which MCP requires.
    #[error("the authorization server {issuer} does not support PKCE with S256, which MCP sign-in requires")]
    NoPkce { issuer: String },
    /// No way to get a client id: none in the config and no registration endpoint.
    #[error(
        "the authorization server {issuer} offers no client registration: set oauth.clientId (and clientSecret) for this server in the config"
    )]
    NoRegistration { issuer: String },
    #[error("the authorization server refused to register Taskdeck: {detail}")]
    Registration { detail: String },
    /// The user, or the authorization server, said no in the browser.
    #[error("the sign-in was refused: {error}{}", description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Denied { error: String, description: Option<String> },
    /// The authorization response came from another issuer (RFC 9207): a possible mix-up attack.
    #[error("the sign-in answer came from {got}, not from {expected}: refused")]
    WrongIssuer { expected: String, got: String },
    #[error("the authorization server {issuer} sends its issuer in every answer, but this one had none: refused")]
    MissingIssuer { issuer: String },
    #[error("no sign-in came back within {seconds}s (was the browser closed?)")]
    TimedOut { seconds: u64 },
    #[error("could not open the browser ({detail}); open this address to sign in: {url}")]
    Browser { url: String, detail: String },
    #[error("could not listen for the sign-in redirect on 127.0.0.1:{port}: {detail}")]
    Listener { port: u16, detail: String },
    /// The token endpoint refused the exchange of a code.
    #[error("the authorization server refused the token request: {error}{}", description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Token { error: String, description: Option<String> },
    /// The refresh token no longer works: the user has to sign in again.
    #[error("the sign-in has expired and could not be renewed ({reason}): sign in again")]
    SignInAgain { reason: String },
    #[error("could not keep the sign-in: {detail}")]
    Store { detail: String },
}

impl AuthError {
    /// True when the user signing in (again) is the way out.
    pub fn needs_sign_in(&self) -> bool {
        matches!(self, AuthError::SignInAgain { .. })
    }
}
