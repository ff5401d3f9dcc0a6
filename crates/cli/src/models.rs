//! `models list|add|remove|test|sample`: the model providers behind sampling, kept in the
//! `models` section of `settings.json` with their keys in the sign-in store (the OS keyring, or
//! the 0600 file); and the editor `answer TASK --sample --edit` opens on a completion.
//!
//! A key is never an argument (it would show in `ps` and the shell's history): `add
//! --key-stdin` reads it from standard input.

use std::io::{BufRead, Read};
use std::path::Path;
use std::sync::Arc;

use clap::Subcommand;
use serde_json::{Value, json};
use taskdeck_client::auth::TokenStore;
use taskdeck_engine::settings::{SettingsFile, SettingsUpdate};
use taskdeck_models::{ModelEntry, ModelsSettings, Pick, ProviderConfig, ProviderKind, Sampled, keys};

use crate::error::{CliError, EXIT_COMPLETED, EXIT_USAGE, Result};
use crate::terminal;

#[derive(Debug, Subcommand)]
pub enum ModelsCommand {
    /// The providers and their models; whether a key is kept, never the key.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Adds a provider, or replaces the one of that name (keeping its key unless --key-stdin).
    Add {
        name: String,
        /// openai (any OpenAI-compatible chat-completions server: Ollama, LM Studio, llama.cpp,
        /// vLLM, hosted services) or anthropic.
        #[arg(long, value_parser = parse_kind)]
        kind: ProviderKind,
        /// Default: the hosted service (https://api.openai.com/v1, https://api.anthropic.com).
        /// Ollama: http://localhost:11434/v1.
        #[arg(long, value_name = "URL")]
        base_url: Option<String>,
        /// A model id, optionally rated for the servers' preferences: ID@COST,SPEED,INTELLIGENCE
        /// (each 0-10). Repeatable; the first is the default.
        #[arg(long = "model", value_name = "ID", required = true, value_parser = parse_model)]
        models: Vec<ModelEntry>,
        /// Reads the API key from the first line of standard input.
        #[arg(long)]
        key_stdin: bool,
        /// Seconds one request may take (default 120).
        #[arg(long, value_name = "SECS")]
        timeout: Option<u32>,
    },
    /// Removes a provider and its key.
    Remove { name: String },
    /// Asks the provider's first model for one word, to check the URL, model and key.
    Test { name: String },
    /// Reads `sampling/createMessage` params (JSON) from standard input, sends them to the
    /// model the preferences choose (or the one given) and prints the `CreateMessageResult`.
    Sample {
        #[arg(long, value_name = "NAME")]
        provider: Option<String>,
        #[arg(long, value_name = "ID", requires = "provider")]
        model: Option<String>,
    },
}

fn parse_kind(s: &str) -> std::result::Result<ProviderKind, String> {
    ProviderKind::parse(s).ok_or_else(|| format!("{s:?} is not a provider kind: openai or anthropic"))
}

/// `ID` or `ID@COST,SPEED,INTELLIGENCE`.
fn parse_model(s: &str) -> std::result::Result<ModelEntry, String> {
    let (id, ratings) = match s.rsplit_once('@') {
        Some((id, r)) => (id, Some(r)),
        None => (s, None),
    };
    if id.trim().is_empty() {
        return Err("a model id is empty".into());
    }
    let mut entry = ModelEntry::new(id.trim());
    if let Some(r) = ratings {
        let parts: Vec<&str> = r.split(',').collect();
        let [cost, speed, intelligence] = parts.as_slice() else {
            return Err(format!("{s:?}: ratings are COST,SPEED,INTELLIGENCE, each 0-10"));
        };
        let rate = |t: &str| -> std::result::Result<Option<u8>, String> {
            if t.trim().is_empty() {
                return Ok(None);
            }
            t.trim()
                .parse::<u8>()
                .ok()
                .filter(|n| *n <= 10)
                .map(Some)
                .ok_or_else(|| format!("{s:?}: {t:?} is not 0-10"))
        };
        entry.cost = rate(cost)?;
        entry.speed = rate(speed)?;
        entry.intelligence = rate(intelligence)?;
    }
    Ok(entry)
}

fn settings_error(e: impl std::fmt::Display) -> CliError {
    CliError::runtime(e.to_string())
}

fn model_error(e: taskdeck_models::ModelError) -> CliError {
    let usage = matches!(
        e,
        taskdeck_models::ModelError::NoModel(_)
            | taskdeck_models::ModelError::Config { .. }
            | taskdeck_models::ModelError::Request(_)
            | taskdeck_models::ModelError::Unsupported { .. }
    );
    CliError { exit: if usage { EXIT_USAGE } else { crate::error::EXIT_FAILED }, message: e.to_string() }
}

fn read_models(data_dir: &Path) -> Result<ModelsSettings> {
    let settings = SettingsFile::in_dir(data_dir).read().map_err(settings_error)?;
    for p in settings.problems.iter().filter(|p| p.section == "models") {
        terminal::err(&format!("warning: settings.json: models: {}\n", p.message));
    }
    Ok(settings.models)
}

fn write_models(data_dir: &Path, models: ModelsSettings) -> Result<()> {
    let update = SettingsUpdate { models: Some(models), ..Default::default() };
    SettingsFile::in_dir(data_dir).update(&update).map_err(|e| match e.path() {
        Some(_) => CliError::usage(e.to_string()),
        None => settings_error(e),
    })?;
    Ok(())
}

/// The sign-in store, picked as the engine picks it (`TASKDECK_SIGN_IN_STORE=file` included).
async fn key_store(data_dir: &Path) -> Result<Arc<dyn TokenStore>> {
    let dir = data_dir.to_owned();
    let (store, note) = tokio::task::spawn_blocking(move || taskdeck_engine::supervisor::sign_in_store(&dir))
        .await
        .map_err(|e| CliError::runtime(format!("the key store could not be opened: {e}")))?;
    if let Some(note) = note {
        tracing::info!("{note}");
    }
    Ok(store)
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> std::result::Result<T, taskdeck_models::ModelError> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| CliError::runtime(format!("the key store failed: {e}")))?
        .map_err(model_error)
}

pub async fn run(data_dir: &Path, command: ModelsCommand) -> Result<u8> {
    match command {
        ModelsCommand::List { json } => list(data_dir, json).await,
        ModelsCommand::Add { name, kind, base_url, models, key_stdin, timeout } => {
            let provider = ProviderConfig {
                name: name.clone(),
                kind,
                base_url: base_url.unwrap_or_else(|| kind.default_base_url().to_owned()),
                models,
                timeout_secs: timeout,
            };
            let mut all = read_models(data_dir)?;
            all.upsert(provider);
            all.check().map_err(|e| CliError::usage(e.to_string()))?;
            let key = if key_stdin { Some(read_key()?) } else { None };
            if key.is_some()
                && let Some(p) = all.provider(&name)
                && p.sends_key_in_clear()
            {
                terminal::err(&format!(
                    "warning: {} is plain http to another machine: the key crosses the network unencrypted\n",
                    p.base_url
                ));
            }
            let store = key_store(data_dir).await?;
            if let Some(key) = key {
                let (s, n) = (store.clone(), name.clone());
                blocking(move || keys::save_key(s.as_ref(), &n, &key)).await?;
            }
            write_models(data_dir, all)?;
            let kept = if key_stdin { format!("; its key is kept in {}", store.describe()) } else { String::new() };
            terminal::err(&format!("Model provider {name} saved{kept}.\n"));
            Ok(EXIT_COMPLETED)
        }
        ModelsCommand::Remove { name } => {
            let mut all = read_models(data_dir)?;
            if !all.remove(&name) {
                return Err(CliError::usage(format!("no model provider is named {name:?}")));
            }
            write_models(data_dir, all)?;
            let store = key_store(data_dir).await?;
            blocking(move || keys::delete_key(store.as_ref(), &name)).await?;
            terminal::err("Model provider removed, with its key.\n");
            Ok(EXIT_COMPLETED)
        }
        ModelsCommand::Test { name } => {
            let all = read_models(data_dir)?;
            let provider =
                all.provider(&name).ok_or_else(|| CliError::usage(format!("no model provider is named {name:?}")))?;
            let store = key_store(data_dir).await?;
            let key = taskdeck_models::load_key_blocking(store, &name).await.map_err(model_error)?;
            let c = taskdeck_models::test_provider(provider, key.as_ref()).await.map_err(model_error)?;
            terminal::out(&format!("{name}: {} answered {:?}\n", c.model, c.text()));
            Ok(EXIT_COMPLETED)
        }
        ModelsCommand::Sample { provider, model } => {
            let mut text = String::new();
            std::io::stdin()
                .take(taskdeck_models::http::MAX_BODY_BYTES as u64)
                .read_to_string(&mut text)
                .map_err(|e| CliError::usage(format!("standard input: {e}")))?;
            let params: Value =
                serde_json::from_str(&text).map_err(|e| CliError::usage(format!("standard input is not JSON: {e}")))?;
            let pick = match provider.as_deref() {
                Some(p) => Pick::Model { provider: p, model: model.as_deref() },
                None => Pick::ByPreferences,
            };
            let sampled = sample(data_dir, &params, pick).await?;
            crate::output::print_json(&sampled.result);
            Ok(EXIT_COMPLETED)
        }
    }
}

async fn list(data_dir: &Path, json: bool) -> Result<u8> {
    let all = read_models(data_dir)?;
    let store = key_store(data_dir).await?;
    let mut rows = Vec::new();
    for p in &all.providers {
        let (s, n) = (store.clone(), p.name.clone());
        let has_key = blocking(move || keys::load_key(s.as_ref(), &n)).await?.is_some();
        rows.push((p, has_key));
    }
    if json {
        let out: Vec<Value> = rows
            .iter()
            .map(|(p, has_key)| {
                let mut v = serde_json::to_value(p).unwrap_or(Value::Null);
                if let Some(o) = v.as_object_mut() {
                    o.insert("has_key".into(), json!(has_key));
                }
                v
            })
            .collect();
        crate::output::print_json(&out);
    } else if rows.is_empty() {
        terminal::err(
            "no model providers; add one with `taskdeck-cli models add NAME --kind openai|anthropic --model ID`\n",
        );
    } else {
        let mut text = String::new();
        for (p, has_key) in rows {
            let models: Vec<&str> = p.models.iter().map(|m| m.id.as_str()).collect();
            text.push_str(&format!(
                "{}\t{}\t{}\t{}\t{}\n",
                p.name,
                p.kind.as_str(),
                p.base_url,
                models.join(","),
                if has_key { "key kept" } else { "no key" }
            ));
        }
        terminal::out(&text);
    }
    Ok(EXIT_COMPLETED)
}

fn read_key() -> Result<String> {
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .take(u64::try_from(keys::MAX_KEY_BYTES * 2).unwrap_or(u64::MAX))
        .read_line(&mut line)
        .map_err(|e| CliError::usage(format!("the key could not be read from standard input: {e}")))?;
    let key = line.trim().to_owned();
    if key.is_empty() {
        return Err(CliError::usage("--key-stdin: standard input holds no key"));
    }
    Ok(key)
}

/// The provider-facing part of answering a sampling request: the request's params in, the
/// completion (its `result` is the `CreateMessageResult`) out.
async fn sample(data_dir: &Path, params: &Value, pick: Pick<'_>) -> Result<Sampled> {
    let all = read_models(data_dir)?;
    let store = key_store(data_dir).await?;
    taskdeck_models::sample(&all, store, params, pick).await.map_err(model_error)
}

/// Opens the text in the user's editor and reads it back (`answer --sample --edit`).
pub(crate) fn edit_text(data_dir: &Path, text: &str) -> Result<String> {
    let editor = std::env::var("VISUAL")
        .ok()
        .filter(|e| !e.trim().is_empty())
        .or_else(|| std::env::var("EDITOR").ok().filter(|e| !e.trim().is_empty()))
        .ok_or_else(|| CliError::usage("--edit needs $VISUAL or $EDITOR"))?;
    taskdeck_store::private_fs::create_dir_all(data_dir).map_err(|e| CliError::runtime(e.to_string()))?;
    let path = data_dir.join(format!("sampling-edit-{}.txt", std::process::id()));
    taskdeck_store::private_fs::write_atomic(&path, text.as_bytes()).map_err(|e| CliError::runtime(e.to_string()))?;
    let status = editor_command(&editor, &path).status();
    let read = std::fs::read_to_string(&path);
    let _ = std::fs::remove_file(&path);
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => return Err(CliError::runtime(format!("the editor ({editor}) ended with {s}; nothing was sent"))),
        Err(e) => return Err(CliError::runtime(format!("the editor ({editor}) could not start: {e}"))),
    }
    let edited = read.map_err(|e| CliError::runtime(format!("the edited text could not be read: {e}")))?;
    // Editors add a final newline; the model's text had none of its own there.
    Ok(if text.ends_with('\n') { edited } else { edited.strip_suffix('\n').unwrap_or(&edited).to_owned() })
}

/// `$EDITOR` may carry arguments (`code --wait`): the shell splits it, the file is its own word.
fn editor_command(editor: &str, file: &Path) -> std::process::Command {
    #[cfg(unix)]
    {
        let mut c = std::process::Command::new("sh");
        c.arg("-c").arg(format!("{editor} \"$1\"")).arg("sh").arg(file);
        c
    }
    #[cfg(not(unix))]
    {
        let mut parts = editor.split_whitespace();
        let mut c = std::process::Command::new(parts.next().unwrap_or("notepad"));
        c.args(parts).arg(file);
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_may_carry_its_ratings_and_ids_keep_their_colons() {
        let m = parse_model("llama3.2:3b@2,9,").expect("model");
        assert_eq!((m.id.as_str(), m.cost, m.speed, m.intelligence), ("llama3.2:3b", Some(2), Some(9), None));
        assert!(parse_model("x@1,2").is_err());
        assert!(parse_model("x@11,0,0").is_err());
        assert_eq!(parse_model("gpt-4o").expect("model"), ModelEntry::new("gpt-4o"));
    }
}
