/// Why a completion could not be had. Each names the provider (as the user named it) and never
/// holds the key: provider error texts are cut and have the key scrubbed out before they land here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// The sampling request itself cannot be read.
    #[error("the sampling request cannot be used: {0}")]
    Request(String),
    /// No provider is configured, or none by the name asked for.
    #[error("{0}")]
    NoModel(String),
    /// The provider's settings are not usable (a bad base URL, no model).
    #[error("model provider {provider}: {detail}")]
    Config { provider: String, detail: String },
    /// The request holds something this provider's API cannot take.
    #[error("model provider {provider} cannot take {what}")]
    Unsupported { provider: String, what: String },
    #[error("model provider {provider} could not be reached: {detail}")]
    Unreachable { provider: String, detail: String },
    #[error("model provider {provider} did not answer within {secs} s")]
    Timeout { provider: String, secs: u64 },
    /// 401 or 403: the key is missing, wrong or lacks access.
    #[error(
        "model provider {provider} refused the API key (HTTP {status}); set it again with `taskdeck-cli models add`"
    )]
    BadKey { provider: String, status: u16 },
    #[error("model provider {provider} is rate limiting Taskdeck (HTTP 429){}", retry_note(*.retry_after_secs))]
    RateLimited { provider: String, retry_after_secs: Option<u64> },
    #[error("model provider {provider} failed (HTTP {status}): {message}")]
    Server { provider: String, status: u16, message: String },
    /// Another 4xx: the provider refused the request (an unknown model, a field it does not take).
    #[error("model provider {provider} refused the request (HTTP {status}): {message}")]
    Refused { provider: String, status: u16, message: String },
    #[error("model provider {provider} sent more than {limit} bytes")]
    TooLarge { provider: String, limit: usize },
    #[error("model provider {provider} sent an answer that cannot be read: {detail}")]
    Malformed { provider: String, detail: String },
    /// The sign-in store (keyring or file) failed.
    #[error("the API key store: {0}")]
    Store(String),
}

fn retry_note(secs: Option<u64>) -> String {
    match secs {
        Some(s) => format!("; try again in {s} s"),
        None => String::new(),
    }
}

impl ModelError {
    /// The provider it is about, when it is about one.
    pub fn provider(&self) -> Option<&str> {
        match self {
            ModelError::Config { provider, .. }
            | ModelError::Unsupported { provider, .. }
            | ModelError::Unreachable { provider, .. }
            | ModelError::Timeout { provider, .. }
            | ModelError::BadKey { provider, .. }
            | ModelError::RateLimited { provider, .. }
            | ModelError::Server { provider, .. }
            | ModelError::Refused { provider, .. }
            | ModelError::TooLarge { provider, .. }
            | ModelError::Malformed { provider, .. } => Some(provider),
            ModelError::Request(_) | ModelError::NoModel(_) | ModelError::Store(_) => None,
        }
    }

    /// Worth trying again later unchanged (rate limits, outages, timeouts).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            ModelError::RateLimited { .. }
                | ModelError::Server { .. }
                | ModelError::Timeout { .. }
                | ModelError::Unreachable { .. }
        )
    }
}
