//! The model providers behind sampling: a server's `sampling/createMessage` sent to a model the
//! user configured, and its completion back as a `CreateMessageResult`.
//!
//! Free of the engine: it takes the `models` settings section ([`ModelsSettings`]), the sign-in
//! store the keys are in ([`keys`]) and the request's params as JSON ([`wire`], the one place the
//! wire format is read and written), and gives back the result JSON with the provider, model and
//! tokens used for the task's event log. The path of one request:
//! 1. [`wire::request_from_params`] reads the params;
//! 2. [`choose::choose`] picks a configured model by the server's `modelPreferences` (or the
//!    caller names one, [`Pick::Model`]);
//! 3. [`keys::load_key`] reads the provider's key (blocking: the keyring is D-Bus on Linux);
//! 4. [`openai`] or [`anthropic`] writes the provider's request, [`http::post_json`] sends it
//!    (timeout, 16 MiB bound, typed errors naming the provider) and reads the answer;
//! 5. [`wire::result_json`] writes the result.

pub mod anthropic;
pub mod choose;
pub mod config;
mod error;
pub mod http;
pub mod keys;
pub mod openai;
pub mod wire;

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use taskdeck_client::auth::{Secret, TokenStore};

pub use config::{ModelEntry, ModelsSettings, ProviderConfig, ProviderKind};
pub use error::ModelError;
pub use wire::{Completion, SamplingRequest, StopReason, Usage};

/// Which model answers.
#[derive(Debug, Clone, Copy, Default)]
pub enum Pick<'a> {
    /// By the request's `modelPreferences` (see [`choose`]).
    #[default]
    ByPreferences,
    /// This provider; this model of it, or its first.
    Model { provider: &'a str, model: Option<&'a str> },
}

/// A completion and what the event log keeps of it.
#[derive(Debug, Clone)]
pub struct Sampled {
    /// The provider as the user named it.
    pub provider: String,
    /// The model that answered, as the provider names it.
    pub model: String,
    pub completion: Completion,
    /// The `CreateMessageResult` to send back.
    pub result: Value,
}

/// The provider-facing part of answering a sampling request: `params` are the request's, the
/// answer carries the result JSON to return.
pub async fn sample(
    settings: &ModelsSettings,
    keys: Arc<dyn TokenStore>,
    params: &Value,
    pick: Pick<'_>,
) -> Result<Sampled, ModelError> {
    let request = wire::request_from_params(params)?;
    let (provider, model) = match pick {
        Pick::ByPreferences => {
            let c = choose::choose(settings, &request.preferences).ok_or_else(|| {
                ModelError::NoModel("no model is configured: add one with `taskdeck-cli models add`".into())
            })?;
            (c.provider, c.model.id.as_str())
        }
        Pick::Model { provider, model } => {
            let p = settings
                .provider(provider)
                .ok_or_else(|| ModelError::NoModel(format!("no model provider is named {provider:?}")))?;
            let m = match model {
                Some(m) => m,
                None => p.models.first().map(|m| m.id.as_str()).ok_or_else(|| ModelError::Config {
                    provider: p.name.clone(),
                    detail: "no model is configured".into(),
                })?,
            };
            (p, m)
        }
    };
    let key = load_key_blocking(keys, &provider.name).await?;
    let completion = complete(provider, model, key.as_ref(), &request).await?;
    let result = wire::result_json(&completion);
    Ok(Sampled { provider: provider.name.clone(), model: completion.model.clone(), completion, result })
}

/// Reads the key on a blocking thread.
pub async fn load_key_blocking(keys: Arc<dyn TokenStore>, provider: &str) -> Result<Option<Secret>, ModelError> {
    let name = provider.to_owned();
    tokio::task::spawn_blocking(move || keys::load_key(keys.as_ref(), &name))
        .await
        .map_err(|e| ModelError::Store(format!("the key could not be read: {e}")))?
}

/// One completion from one model of one provider.
pub async fn complete(
    provider: &ProviderConfig,
    model: &str,
    key: Option<&Secret>,
    request: &SamplingRequest,
) -> Result<Completion, ModelError> {
    let name = provider.name.as_str();
    if reqwest::Url::parse(&provider.base_url).is_err() {
        return Err(ModelError::Config {
            provider: name.into(),
            detail: format!("base URL {:?} is not a URL", provider.base_url),
        });
    }
    let (path, body, headers) = match provider.kind {
        ProviderKind::OpenAi => {
            let headers = match key {
                Some(k) => vec![("authorization", format!("Bearer {}", k.expose()))],
                None => Vec::new(),
            };
            (openai::PATH, openai::body(name, model, request)?, headers)
        }
        ProviderKind::Anthropic => {
            let mut headers = vec![("anthropic-version", anthropic::VERSION.to_owned())];
            if let Some(k) = key {
                headers.push(("x-api-key", k.expose().to_owned()));
            }
            (anthropic::PATH, anthropic::body(name, model, request)?, headers)
        }
    };
    let answer = http::post_json(http::Post {
        provider: name,
        url: http::join(&provider.base_url, path),
        headers,
        body,
        timeout: Duration::from_secs(u64::from(provider.timeout_secs())),
        key,
    })
    .await?;
    let mut completion = match provider.kind {
        ProviderKind::OpenAi => openai::completion(name, model, &answer)?,
        ProviderKind::Anthropic => anthropic::completion(name, model, &answer)?,
    };
    completion.model = tidy_model_name(&completion.model, model);
    Ok(completion)
}

/// A provider names its model as it likes; what is shown and logged is short and printable.
fn tidy_model_name(answered: &str, asked: &str) -> String {
    let clean: String = answered.chars().filter(|c| !c.is_control()).take(200).collect();
    if clean.trim().is_empty() { asked.to_owned() } else { clean }
}

/// Whether a provider answers with this key: a one-word completion from its first model.
pub async fn test_provider(provider: &ProviderConfig, key: Option<&Secret>) -> Result<Completion, ModelError> {
    let model = provider.models.first().ok_or_else(|| ModelError::Config {
        provider: provider.name.clone(),
        detail: "no model is configured".into(),
    })?;
    let request = wire::request_from_params(&serde_json::json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": "Reply with the single word OK."}}],
        "maxTokens": 8,
    }))?;
    complete(provider, &model.id, key, &request).await
}
