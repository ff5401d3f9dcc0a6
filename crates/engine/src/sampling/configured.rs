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

    fn complete<'a>(
        &'a self,
        request: &'a CreateMessageParams,
    ) -> Pin<Box<dyn Future<Output = Result<Completion, ModelError>> + Send + 'a>> {
        Box::pin(self.sample(request))
    }
}

/// The models of a data directory's settings: none when no provider is configured (so that every
/// request is the user's to answer and `auto` asks), else every configured one behind the seam.
pub fn from_settings(data_dir: &Path) -> Models {
    let configured = SettingsFile::in_dir(data_dir).read().map(|s| !s.models.providers.is_empty()).unwrap_or(false);
    if configured { Models::new(vec![Arc::new(ConfiguredModels::new(data_dir))]) } else { Models::none() }
}
