//! The `models` section of `settings.json`: the user's providers. Keys are never here; they are
//! in the sign-in store ([`crate::keys`]) under the provider's name.

use serde::{Deserialize, Serialize};

use crate::ModelError;

/// Which wire format a provider speaks.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProviderKind {
    /// `POST {base_url}/chat/completions` with `Authorization: Bearer`: OpenAI, Ollama, LM Studio,
    /// llama.cpp's server, vLLM and most hosted services. `base_url` ends in `/v1` for most.
    #[serde(rename = "openai")]
    OpenAi,
    /// `POST {base_url}/v1/messages` with `x-api-key` and `anthropic-version`.
    #[serde(rename = "anthropic")]
    Anthropic,
}

impl ProviderKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Anthropic => "anthropic",
        }
    }

    pub fn parse(s: &str) -> Option<ProviderKind> {
        match s {
            "openai" => Some(ProviderKind::OpenAi),
            "anthropic" => Some(ProviderKind::Anthropic),
            _ => None,
        }
    }

    /// Where the hosted service is, for a provider added without a base URL.
    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "https://api.openai.com/v1",
            ProviderKind::Anthropic => "https://api.anthropic.com",
        }
    }
}

/// The highest rating a model's `cost`, `speed` or `intelligence` can have.
pub const MAX_RATING: u8 = 10;
/// What an unrated attribute counts as.
pub const MIDDLE_RATING: u8 = 5;
/// A request with no timeout of its own waits this long for the whole answer.
pub const DEFAULT_TIMEOUT_SECS: u32 = 120;
const MAX_TIMEOUT_SECS: u32 = 3600;

/// One model of a provider, with how the user rates it (0..=10; unrated counts as 5) for the
/// server's cost / speed / intelligence priorities.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelEntry {
    /// The provider's model id (`gpt-4o-mini`, `claude-sonnet-4-5`, `llama3.2`).
    pub id: String,
    /// How expensive it is: 10 is the dearest.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub cost: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub speed: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub intelligence: Option<u8>,
}

impl ModelEntry {
    pub fn new(id: impl Into<String>) -> ModelEntry {
        ModelEntry { id: id.into(), ..Default::default() }
    }
}

/// One provider the user configured.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderConfig {
    /// The user's name for it; also the key's name in the sign-in store.
    pub name: String,
    pub kind: ProviderKind,
    pub base_url: String,
    /// In the user's order, which breaks ties in the choice (see [`crate::choose`]).
    pub models: Vec<ModelEntry>,
    /// Seconds one request may take, answer included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub timeout_secs: Option<u32>,
}

impl ProviderConfig {
    pub fn timeout_secs(&self) -> u32 {
        self.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS)
    }

    /// Plain http to another machine: a key sent there crosses the network unencrypted (a local
    /// server on the LAN is a fair choice, so this is a warning, not a refusal).
    pub fn sends_key_in_clear(&self) -> bool {
        let Ok(url) = reqwest::Url::parse(&self.base_url) else { return false };
        let host = url.host_str().unwrap_or("").trim_start_matches('[').trim_end_matches(']');
        let loopback =
            host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
        url.scheme() == "http" && !loopback
    }

    fn check(&self) -> Result<(), ModelError> {
        let problem = |detail: String| ModelError::Config { provider: self.name.clone(), detail };
        if self.name.trim().is_empty() || self.name.len() > 100 || self.name.chars().any(char::is_control) {
            return Err(problem("a provider needs a name of 1 to 100 printable characters".into()));
        }
        let url =
            reqwest::Url::parse(&self.base_url).map_err(|e| problem(format!("base URL {:?}: {e}", self.base_url)))?;
        if !matches!(url.scheme(), "http" | "https") || !url.username().is_empty() || url.password().is_some() {
            return Err(problem(format!(
                "base URL {:?} must be http or https, without a user name or password (the key goes in the store)",
                self.base_url
            )));
        }
        if self.models.is_empty() {
            return Err(problem("no model is configured".into()));
        }
        for m in &self.models {
            if m.id.trim().is_empty() {
                return Err(problem("a model id is empty".into()));
            }
            if [m.cost, m.speed, m.intelligence].into_iter().flatten().any(|r| r > MAX_RATING) {
                return Err(problem(format!("model {}: ratings go from 0 to {MAX_RATING}", m.id)));
            }
        }
        if self.timeout_secs.is_some_and(|t| t == 0 || t > MAX_TIMEOUT_SECS) {
            return Err(problem(format!("timeout_secs must be from 1 to {MAX_TIMEOUT_SECS}")));
        }
        Ok(())
    }
}

/// The `models` section: every provider, in the user's order.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelsSettings {
    pub providers: Vec<ProviderConfig>,
}

impl ModelsSettings {
    /// Every provider usable and no two with one name.
    pub fn check(&self) -> Result<(), ModelError> {
        for (i, p) in self.providers.iter().enumerate() {
            p.check()?;
            if self.providers[..i].iter().any(|q| q.name == p.name) {
                return Err(ModelError::Config {
                    provider: p.name.clone(),
                    detail: "two providers have this name".into(),
                });
            }
        }
        Ok(())
    }

    pub fn provider(&self, name: &str) -> Option<&ProviderConfig> {
        self.providers.iter().find(|p| p.name == name)
    }

    /// Adds the provider, or replaces the one of the same name where it stood.
    pub fn upsert(&mut self, provider: ProviderConfig) {
        match self.providers.iter_mut().find(|p| p.name == provider.name) {
            Some(old) => *old = provider,
            None => self.providers.push(provider),
        }
    }

    /// Whether there was one to remove.
    pub fn remove(&mut self, name: &str) -> bool {
        let before = self.providers.len();
        self.providers.retain(|p| p.name != name);
        self.providers.len() != before
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(base_url: &str) -> ProviderConfig {
        ProviderConfig {
            name: "p".into(),
            kind: ProviderKind::OpenAi,
            base_url: base_url.into(),
            models: vec![ModelEntry::new("m")],
            timeout_secs: None,
        }
    }

    #[test]
    fn only_plain_http_to_another_machine_sends_the_key_in_clear() {
        assert!(at("http://192.168.1.20:11434/v1").sends_key_in_clear());
        assert!(!at("http://localhost:11434/v1").sends_key_in_clear());
        assert!(!at("http://127.0.0.1:8080/v1").sends_key_in_clear());
        assert!(!at("http://[::1]:8080/v1").sends_key_in_clear());
        assert!(!at("https://api.openai.com/v1").sends_key_in_clear());
    }

    #[test]
    fn two_providers_with_one_name_or_a_rating_past_ten_are_refused() {
        let mut s = ModelsSettings { providers: vec![at("http://h"), at("http://h")] };
        assert!(s.check().is_err());
        s.providers.pop();
        s.providers[0].models[0].cost = Some(11);
        assert!(s.check().is_err());
        s.providers[0].models[0].cost = Some(10);
        assert!(s.check().is_ok());
    }
}
