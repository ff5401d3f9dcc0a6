//! The UI imports the TypeScript twins of the IPC types from `ui/src/lib/bindings/`. They are committed so
//! the UI builds without Rust; this test fails when they drift from the Rust types.
//! Regenerate with `TASKDECK_UPDATE_BINDINGS=1 cargo test -p taskdeck-app --test bindings` (`make bindings`).

use std::path::{Path, PathBuf};

use taskdeck_app::bridge::{EngineBatch, ServerLogLine};
use taskdeck_app::commands::{
    AnswerAction, AnswerPayload, AppInfo, CommandError, ModelTest, SignInEnd, SignInResult, TaskDetail, TaskSummary,
};
use taskdeck_app::history::{DeleteScope, ExportScope, MatchRange, PageCursor, Snippet, TaskFilter, TaskPage};
use taskdeck_app::links::OfferedUrl;
use taskdeck_engine::{
    AuthState, EngineEvent, ErrorCode, LogLine, Mode, ServerPhase, ServerStatus, SignInPrompt, SignInState, TaskError,
    TaskEvent, TaskRecord, ToolInfo,
};
use taskdeck_engine::{NotificationSettings, RetentionSettings, Settings, SettingsProblem, SettingsUpdate, Theme};
use taskdeck_protocol::form::{Choice, Field, FieldKind, FormModel, TextFormat};
use taskdeck_protocol::question::{Asks, QuestionRequest};
use taskdeck_protocol::sampling::{IncludeContext, SamplingAsk};
use taskdeck_protocol::types::TaskSupport;
use taskdeck_protocol::url_check::{UrlCheck, UrlWarning, UrlWarningKind};
use taskdeck_protocol::{Era, TaskStatus};
use taskdeck_store::{
    Answer, EventKind, FailureReason, Progress, PurgeLine, PurgeReason, Purged, Question, QuestionBrief, StatusCounts,
};
use ts_rs::{Config, TS};

fn bindings_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../ui/src/lib/bindings")
}

/// Every type the webview receives or sends; a new command's types are added here.
fn rendered() -> Vec<(String, String)> {
    // JSON numbers, not BigInt: serde writes i64 as plain numbers.
    let cfg = Config::new().with_large_int("number");
    vec![
        render::<AppInfo>(&cfg),
        render::<CommandError>(&cfg),
        render::<ErrorCode>(&cfg),
        render::<TaskDetail>(&cfg),
        render::<AnswerPayload>(&cfg),
        render::<AnswerAction>(&cfg),
        render::<EngineBatch>(&cfg),
        render::<ServerLogLine>(&cfg),
        render::<EngineEvent>(&cfg),
        render::<TaskRecord>(&cfg),
        render::<TaskSummary>(&cfg),
        render::<QuestionBrief>(&cfg),
        render::<TaskFilter>(&cfg),
        render::<PageCursor>(&cfg),
        render::<TaskPage>(&cfg),
        render::<Snippet>(&cfg),
        render::<MatchRange>(&cfg),
        render::<DeleteScope>(&cfg),
        render::<ExportScope>(&cfg),
        render::<StatusCounts>(&cfg),
        render::<Purged>(&cfg),
        render::<PurgeLine>(&cfg),
        render::<PurgeReason>(&cfg),
        render::<OfferedUrl>(&cfg),
        render::<SignInState>(&cfg),
        render::<SignInPrompt>(&cfg),
        render::<SignInResult>(&cfg),
        render::<SignInEnd>(&cfg),
        render::<TaskEvent>(&cfg),
        render::<EventKind>(&cfg),
        render::<TaskError>(&cfg),
        render::<FailureReason>(&cfg),
        render::<Progress>(&cfg),
        render::<Question>(&cfg),
        render::<QuestionRequest>(&cfg),
        render::<Asks>(&cfg),
        render::<SamplingAsk>(&cfg),
        render::<IncludeContext>(&cfg),
        render::<UrlCheck>(&cfg),
        render::<UrlWarning>(&cfg),
        render::<UrlWarningKind>(&cfg),
        render::<FormModel>(&cfg),
        render::<Field>(&cfg),
        render::<FieldKind>(&cfg),
        render::<Choice>(&cfg),
        render::<TextFormat>(&cfg),
        render::<Answer>(&cfg),
        render::<Mode>(&cfg),
        render::<TaskStatus>(&cfg),
        render::<Era>(&cfg),
        render::<TaskSupport>(&cfg),
        render::<ServerStatus>(&cfg),
        render::<ServerPhase>(&cfg),
        render::<AuthState>(&cfg),
        render::<LogLine>(&cfg),
        render::<taskdeck_engine::logs::LogLevel>(&cfg),
        render::<ToolInfo>(&cfg),
        render::<taskdeck_app::commands::ImportChoice>(&cfg),
        render::<taskdeck_engine::import::Found>(&cfg),
        render::<taskdeck_engine::import::FoundEntry>(&cfg),
        render::<taskdeck_engine::import::EntryStatus>(&cfg),
        render::<taskdeck_engine::import::InputNeeded>(&cfg),
        render::<taskdeck_engine::import::Host>(&cfg),
        render::<taskdeck_engine::import::ImportReport>(&cfg),
        render::<taskdeck_engine::config_edit::NewServer>(&cfg),
        render::<taskdeck_engine::config_edit::SettingsEdit>(&cfg),
        render::<serde_json::Value>(&cfg),
        render::<Settings>(&cfg),
        render::<SettingsUpdate>(&cfg),
        render::<NotificationSettings>(&cfg),
        render::<Theme>(&cfg),
        render::<RetentionSettings>(&cfg),
        render::<SettingsProblem>(&cfg),
        render::<taskdeck_models::ModelsSettings>(&cfg),
        render::<taskdeck_models::ProviderConfig>(&cfg),
        render::<taskdeck_models::ProviderKind>(&cfg),
        render::<taskdeck_models::ModelEntry>(&cfg),
        render::<ModelTest>(&cfg),
        render::<taskdeck_app::commands::SampledReply>(&cfg),
    ]
}

/// The registry's `invoke` map, beside the types it names.
fn rendered_commands() -> (String, String) {
    let cfg = Config::new().with_large_int("number");
    ("Commands.ts".to_owned(), taskdeck_app::registry::typescript(&cfg))
}

fn render<T: TS + 'static>(cfg: &Config) -> (String, String) {
    // Where ts-rs's own imports expect the file (`serde_json/JsonValue.ts`, for one).
    let file = T::output_path().map(|p| p.display().to_string()).unwrap_or_else(|| format!("{}.ts", T::name(cfg)));
    (file, T::export_to_string(cfg).expect("type renders to TypeScript"))
}

#[test]
fn typescript_bindings_match_the_rust_types() {
    let dir = bindings_dir();
    let update = std::env::var_os("TASKDECK_UPDATE_BINDINGS").is_some_and(|v| v != "0");
    let mut stale = Vec::new();
    for (file, text) in rendered().into_iter().chain([rendered_commands()]) {
        let path = dir.join(&file);
        if update {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &text).unwrap();
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            stale.push(file);
        }
    }
    assert!(
        stale.is_empty(),
        "stale TypeScript bindings in ui/src/lib/bindings: {stale:?}; run `make bindings` and commit the result"
    );
}

/// A command the webview cannot reach is a dead button; one it can reach without being listed is
/// a hole. The capability must grant exactly the app's commands.
#[test]
fn the_capability_grants_exactly_the_apps_commands() {
    let cap: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("capabilities/main.json")).unwrap(),
    )
    .unwrap();
    let granted: Vec<String> = cap["permissions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p.as_str())
        .filter(|p| p.starts_with("allow-"))
        .map(str::to_owned)
        .collect();
    let expected: Vec<String> =
        taskdeck_app::registry::COMMANDS.iter().map(|c| format!("allow-{}", c.replace('_', "-"))).collect();
    assert_eq!(granted, expected);
}
