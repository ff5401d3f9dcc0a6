//! The user's configured providers (`taskdeck_models`, the `models` settings section) behind the
//! [`ModelProvider`] seam, as one provider: it reads the section afresh for every request (a
//! provider added, changed or removed since the engine started is seen), lets
//! `taskdeck_models::choose` pick the model by the request's whole `modelPreferences` (hints, then
//! cost / speed / intelligence against the user's ratings), and reads the key from the sign-in store.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use taskdeck_client::auth::TokenStore;
use taskdeck_protocol::sampling::{CreateMessageParams, CreateMessageResult};

use super::{Completion, ModelError, ModelProvider, Models, TokenUsage};
use crate::settings::SettingsFile;

/// Every configured model, as one [`ModelProvider`].
pub struct ConfiguredModels {
    data_dir: PathBuf,
    // Picked on first use: a keyring probe is a D-Bus round trip no engine start should wait for.
    store: OnceLock<Arc<dyn TokenStore>>,
}

impl ConfiguredModels {
    pub fn new(data_dir: &Path) -> ConfiguredModels {
        ConfiguredModels { data_dir: data_dir.to_owned(), store: OnceLock::new() }
    }

    async fn store(&self) -> Arc<dyn TokenStore> {
        if let Some(s) = self.store.get() {
            return s.clone();
        }
        let dir = self.data_dir.clone();
        let picked = match tokio::task::spawn_blocking(move || crate::supervisor::sign_in_store(&dir).0).await {
            Ok(s) => s,
            Err(_) => Arc::new(taskdeck_client::auth::FileStore::in_dir(&self.data_dir)),
        };
        self.store.get_or_init(|| picked).clone()
    }

    async fn sample(&self, request: &CreateMessageParams) -> Result<Completion, ModelError> {
        let settings = SettingsFile::in_dir(&self.data_dir).read().map_err(|e| ModelError::Failed(e.to_string()))?;
        let params = serde_json::to_value(request).map_err(|e| ModelError::Failed(e.to_string()))?;
        let sampled = taskdeck_models::sample(
            &settings.models,
            self.store().await,
            &params,
            taskdeck_models::Pick::ByPreferences,
        )
        .await
        .map_err(|e| match e {
            taskdeck_models::ModelError::NoModel(_) => ModelError::NoModel,
            e @ (taskdeck_models::ModelError::Unsupported { .. } | taskdeck_models::ModelError::Request(_)) => {
                ModelError::Unsupported(e.to_string())
            }
            e => ModelError::Failed(e.to_string()),
        })?;
        let result: CreateMessageResult = serde_json::from_value(sampled.result).map_err(|e| {
            ModelError::Failed(format!("model provider {}: the completion cannot be read: {e}", sampled.provider))
        })?;
        let usage = sampled.completion.usage.map(|u| TokenUsage { input: u.input_tokens, output: u.output_tokens });
        Ok(Completion { result, usage })
    }
}

impl ModelProvider for ConfiguredModels {
    fn name(&self) -> &str {
        "the configured models"
    }

    fn available(&self) -> bool {
        SettingsFile::in_dir(&self.data_dir).read().is_ok_and(|s| !s.models.providers.is_empty())
    }

    fn complete<'a>(
        &'a self,
        request: &'a CreateMessageParams,
    ) -> Pin<Box<dyn Future<Output = Result<Completion, ModelError>> + Send + 'a>> {
        Box::pin(self.sample(request))
    }
}

/// The models of a data directory's settings, as the settings say at each request: while they
/// name no provider, [`Models::is_empty`] holds (every request is the user's to answer, `auto`
/// asks) and `pick` finds that there is no model.
pub fn from_settings(data_dir: &Path) -> Models {
    Models::new(vec![Arc::new(ConfiguredModels::new(data_dir))])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::SettingsUpdate;
    use taskdeck_models::{ModelEntry, ModelsSettings, ProviderConfig, ProviderKind};

    #[tokio::test]
    async fn the_models_follow_the_settings_and_say_there_is_none_before_one_is_added() {
        let dir = tempfile::tempdir().expect("dir");
        let models = from_settings(dir.path());
        assert!(models.is_empty(), "no provider yet: the user answers");
        let request: CreateMessageParams =
            serde_json::from_value(serde_json::json!({"messages": [], "maxTokens": 5})).expect("params");
        let picked = models.pick(None).expect("the seam's one provider");
        assert_eq!(picked.complete(&request).await.err(), Some(ModelError::NoModel));

        let provider = ProviderConfig {
            name: "local".into(),
            kind: ProviderKind::OpenAi,
            base_url: "http://127.0.0.1:9/v1".into(),
            models: vec![ModelEntry::new("m")],
            timeout_secs: None,
        };
        let update =
            SettingsUpdate { models: Some(ModelsSettings { providers: vec![provider] }), ..Default::default() };
        SettingsFile::in_dir(dir.path()).update(&update).expect("update");
        assert!(!models.is_empty(), "a provider added while the engine runs is seen at once");
    }
}
