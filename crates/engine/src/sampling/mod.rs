//! Sampling: a server asking the host's language model for a reply. It is a question on its task
//! like any other (see `taskdeck_protocol::sampling`); this module holds what the engine decides
//! about one beside that: the per-server [`SamplingPolicy`], the seam a model provider plugs into
//! ([`ModelProvider`], chosen among by [`Models`]), the reading of the user's reply
//! ([`reply_to`]), and the note every answered sampling request leaves in its task's event log
//! ([`Note`]), with the completions sampled for the user meanwhile ([`sampled`]).
//!
//! The providers are `taskdeck_models`'s, behind [`configured::ConfiguredModels`]: the engine opens
//! with them when settings.json's `models` section names any, else with [`Models::none`], so that a
//! request is asked of the user and `auto` behaves as `ask`.

pub(crate) mod auto;
pub mod configured;
pub(crate) mod sampled;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value, json};
use taskdeck_client::{Question, Reply};
use taskdeck_protocol::ErrorObject;
use taskdeck_protocol::sampling::{self, CreateMessageParams, CreateMessageResult, ModelPreferences};

/// What a server's sampling requests get (`"sampling"` in its config entry).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SamplingPolicy {
    /// Every request is a question for the user (the default).
    #[default]
    Ask,
    /// Sent to the configured model without asking, while the task's completions stay within
    /// `max_tokens_per_task` (see [`auto`] for how they are counted); past it, with no model
    /// configured, or when the model fails, asked like [`SamplingPolicy::Ask`].
    Auto { max_tokens_per_task: u64 },
    /// Refused at once, with an error the server reads.
    Refuse,
}

impl SamplingPolicy {
    /// Reads `"ask"`, `"refuse"` or `{"auto": {"maxTokensPerTask": N}}`.
    pub fn from_config(value: &Value) -> Result<SamplingPolicy, String> {
        const EXPECTED: &str = "expected \"ask\", \"refuse\" or {\"auto\": {\"maxTokensPerTask\": N}}";
        match value {
            Value::String(s) if s == "ask" => Ok(SamplingPolicy::Ask),
            Value::String(s) if s == "refuse" => Ok(SamplingPolicy::Refuse),
            Value::Object(o) if o.len() == 1 && o.contains_key("auto") => {
                let budget = o.get("auto").and_then(|a| a.get("maxTokensPerTask"));
                match budget.and_then(Value::as_u64) {
                    Some(n) if n > 0 => Ok(SamplingPolicy::Auto { max_tokens_per_task: n }),
                    _ => Err(format!("\"auto\" needs a positive integer \"maxTokensPerTask\"; {EXPECTED}")),
                }
            }
            other => Err(format!("{other} is not a sampling policy: {EXPECTED}")),
        }
    }
}

/// Tokens a completion used, as the provider counted them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TokenUsage {
    pub input: u64,
    pub output: u64,
}

/// A model's reply to a sampling request.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// What goes back to the server; its `model` names the model that wrote it, and its
    /// `stopReason` why it stopped.
    pub result: CreateMessageResult,
    pub usage: Option<TokenUsage>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    #[error(
        "no model is configured for sampling: write the reply by hand (answer --json '{{\"text\": \"...\"}}') or decline"
    )]
    NoModel,
    /// The provider cannot serve this request as asked (tool use it does not support, say).
    #[error("the model cannot serve this request: {0}")]
    Unsupported(String),
    #[error("the model failed: {0}")]
    Failed(String),
}

/// The seam a model provider (an OpenAI-compatible endpoint, the Anthropic Messages API) plugs
/// into. `complete` sends the request as the server made it (messages, system prompt, `maxTokens`,
/// tools where the provider takes them) and returns the reply with the model's name, the stop
/// reason and the tokens used; it refuses, never drops, what it cannot pass on.
pub trait ModelProvider: Send + Sync + 'static {
    /// The model's name as the user configured it; matched against the server's model hints.
    fn name(&self) -> &str;

    /// Whether it can answer now (the configured providers: whether the settings name any, which
    /// the user may change while the engine runs).
    fn available(&self) -> bool {
        true
    }

    fn complete<'a>(
        &'a self,
        request: &'a CreateMessageParams,
    ) -> Pin<Box<dyn Future<Output = Result<Completion, ModelError>> + Send + 'a>>;
}

/// The models the user configured, in their order.
#[derive(Clone, Default)]
pub struct Models {
    providers: Vec<Arc<dyn ModelProvider>>,
}

impl std::fmt::Debug for Models {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.providers.iter().map(|p| p.name().to_owned())).finish()
    }
}

impl Models {
    /// No model: every sampling request is the user's to answer.
    pub fn none() -> Models {
        Models::default()
    }

    pub fn new(providers: Vec<Arc<dyn ModelProvider>>) -> Models {
        Models { providers }
    }

    /// No model can answer now.
    pub fn is_empty(&self) -> bool {
        !self.providers.iter().any(|p| p.available())
    }

    /// The model for a request: the first server hint (in the server's order) that is part of a
    /// configured model's name, case-insensitively, as the spec reads hints; else the first
    /// model configured.
    pub fn pick(&self, preferences: Option<&ModelPreferences>) -> Result<Arc<dyn ModelProvider>, ModelError> {
        let hints = preferences.and_then(|p| p.hints.as_ref()).into_iter().flatten();
        for hint in hints.filter_map(|h| h.name.as_deref()).filter(|h| !h.is_empty()) {
            let hint = hint.to_lowercase();
            if let Some(p) = self.providers.iter().find(|p| p.name().to_lowercase().contains(&hint)) {
                return Ok(p.clone());
            }
        }
        self.providers.first().cloned().ok_or(ModelError::NoModel)
    }
}

/// What a sampling request arriving on a task gets, by the server's policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    Ask,
    Refuse,
    /// Sent to a model without asking.
    Auto,
}

/// `spent` is what the task's earlier automatic completions were allowed (their `maxTokens`).
pub fn arrival(policy: SamplingPolicy, models: &Models, request: &CreateMessageParams, spent: u64) -> Arrival {
    match policy {
        SamplingPolicy::Ask => Arrival::Ask,
        SamplingPolicy::Refuse => Arrival::Refuse,
        SamplingPolicy::Auto { .. } if models.is_empty() => Arrival::Ask,
        SamplingPolicy::Auto { max_tokens_per_task } => {
            if spent.saturating_add(request.max_tokens) <= max_tokens_per_task { Arrival::Auto } else { Arrival::Ask }
        }
    }
}

/// Who let a reply go back to the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovedBy {
    /// The user sent it (written, edited or as the model wrote it) or declined.
    User,
    /// The server's `auto` policy, within its budget.
    Policy,
}

/// What the task's event log keeps of an answered sampling request, beside the reply itself
/// (the `answer` event's `response`) and the request (its `question` event).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Note {
    pub approved_by: ApprovedBy,
    /// The model that wrote the reply (`human` for one the user wrote), or whose completion the
    /// user edited into it; none when declined.
    pub model: Option<String>,
    /// What the model's completion used, as the provider counted it: for an edited reply, the
    /// completion before the edit (what was spent to get it).
    pub tokens: Option<TokenUsage>,
    /// `declined`, `cancelled`, `refused` (the policy) or `sent`.
    pub outcome: &'static str,
    /// For a model's completion: the `maxTokens` its request allowed, which counts against the
    /// task's budget when the policy sent it and the provider did not say what it used
    /// (`auto::spent`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// The user changed the model's completion before it went back, so the reply (`human`, in
    /// the answer's `response`) is no longer the model's own.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub edited: bool,
}

impl Note {
    /// The note of a model's completion that went back to the server, whoever let it go: the
    /// policy, or the user who asked the model and returned its completion, `edited` or not. The
    /// one place both paths say which model, the tokens it used and what it was allowed.
    pub fn completion(
        approved_by: ApprovedBy,
        completion: &Completion,
        request: &CreateMessageParams,
        edited: bool,
    ) -> Note {
        Note {
            approved_by,
            model: Some(completion.result.model.clone()),
            tokens: completion.usage,
            outcome: "sent",
            max_tokens: Some(request.max_tokens),
            edited,
        }
    }

    /// The note of a reply the user gave that no model wrote, or of none (`model: None`).
    fn by_user(model: Option<String>, outcome: &'static str) -> Note {
        Note { approved_by: ApprovedBy::User, model, tokens: None, outcome, max_tokens: None, edited: false }
    }

    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

/// The error a server is answered with when its policy refuses sampling.
pub fn refused_by_policy() -> ErrorObject {
    ErrorObject::new(-1, "sampling is refused for this server by the user's settings")
}

/// The user's answer to a sampling question as the reply to send and its note. `content` is
/// `None` to decline, and `Some` for the reply the user gives (read by
/// [`sampling::reply_from_user`]: a `CreateMessageResult` or `{"text": "..."}`). `sampled` is the
/// completion the configured model gave for this question ([`sampled::Sampled`]), if the user
/// asked it: a reply that is that completion is the model's, any other reply given after it is
/// the completion edited (the user read it and sent something else), and both say what the
/// completion cost.
pub fn reply_to(
    question: &Question,
    content: Option<&Map<String, Value>>,
    sampled: Option<&Completion>,
) -> Result<(Reply, Note), String> {
    let Some(content) = content else {
        return Ok((Reply::Refused(sampling::declined()), Note::by_user(None, "declined")));
    };
    let Some(params) = question.sampling_params() else {
        return Err("this sampling request could not be read, so no reply fits it: decline it".into());
    };
    let result = sampling::reply_from_user(&Value::Object(content.clone()), &params)?;
    let note = match sampled {
        Some(c) => Note::completion(ApprovedBy::User, c, &params, result != c.result),
        None => Note::by_user(Some(result.model.clone()), "sent"),
    };
    Ok((Reply::Result(serde_json::to_value(&result).unwrap_or_default()), note))
}

/// A cancelled sampling question: the server's request is refused as a cancel.
pub fn cancelled() -> (Reply, Note) {
    let note = Note::by_user(None, "cancelled");
    (Reply::Refused(ErrorObject::new(-1, "the user cancelled the sampling request")), note)
}

/// How a refusal is kept as the answer's `response`: the action a person took, as for an
/// elicitation, with the error the server was sent.
pub fn stored_refusal(action: &str, error: &ErrorObject) -> Value {
    json!({ "action": action, "error": error })
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskdeck_client::{QuestionKey, QuestionRequest};

    struct Fixed(&'static str);
    impl ModelProvider for Fixed {
        fn name(&self) -> &str {
            self.0
        }
        fn complete<'a>(
            &'a self,
            _request: &'a CreateMessageParams,
        ) -> Pin<Box<dyn Future<Output = Result<Completion, ModelError>> + Send + 'a>> {
            Box::pin(async move { Ok(Completion { result: CreateMessageResult::text("x", self.0), usage: None }) })
        }
    }

    fn request(max_tokens: u64, hints: &[&str]) -> CreateMessageParams {
        let hints: Vec<Value> = hints.iter().map(|h| json!({"name": h})).collect();
        serde_json::from_value(json!({"messages": [], "maxTokens": max_tokens, "modelPreferences": {"hints": hints}}))
            .unwrap()
    }

    #[test]
    fn a_policy_is_read_from_the_config_and_a_wrong_one_says_what_is_expected() {
        assert_eq!(SamplingPolicy::from_config(&json!("ask")), Ok(SamplingPolicy::Ask));
        assert_eq!(SamplingPolicy::from_config(&json!("refuse")), Ok(SamplingPolicy::Refuse));
        assert_eq!(
            SamplingPolicy::from_config(&json!({"auto": {"maxTokensPerTask": 5000}})),
            Ok(SamplingPolicy::Auto { max_tokens_per_task: 5000 })
        );
        for bad in [json!("always"), json!({"auto": {}}), json!({"auto": {"maxTokensPerTask": 0}}), json!(true)] {
            let err = SamplingPolicy::from_config(&bad).unwrap_err();
            assert!(err.contains("expected \"ask\""), "{bad}: {err}");
        }
    }

    #[test]
    fn auto_without_a_model_or_past_its_budget_asks_the_user() {
        let none = Models::none();
        let one = Models::new(vec![Arc::new(Fixed("local-llama"))]);
        let auto = SamplingPolicy::Auto { max_tokens_per_task: 1000 };
        assert_eq!(arrival(auto, &none, &request(10, &[]), 0), Arrival::Ask);
        assert_eq!(arrival(auto, &one, &request(400, &[]), 600), Arrival::Auto);
        assert_eq!(arrival(auto, &one, &request(401, &[]), 600), Arrival::Ask);
        assert_eq!(arrival(SamplingPolicy::Refuse, &one, &request(1, &[]), 0), Arrival::Refuse);
        assert_eq!(arrival(SamplingPolicy::Ask, &one, &request(1, &[]), 0), Arrival::Ask);
    }

    #[test]
    fn the_first_hint_a_configured_model_matches_picks_it() {
        let models = Models::new(vec![Arc::new(Fixed("gpt-4o-mini")), Arc::new(Fixed("Claude-Sonnet"))]);
        let name =
            |hints: &[&str]| models.pick(request(1, hints).model_preferences.as_ref()).unwrap().name().to_owned();
        assert_eq!(name(&["sonnet", "gpt"]), "Claude-Sonnet");
        assert_eq!(name(&["mistral", "gpt"]), "gpt-4o-mini");
        assert_eq!(name(&["mistral"]), "gpt-4o-mini");
        assert_eq!(Models::none().pick(None).err(), Some(ModelError::NoModel));
    }

    /// A sampling request of task `t` that allows 9 tokens.
    fn sampling_question() -> Question {
        Question::decode(
            QuestionKey::InputKey("k".into()),
            Some("t".into()),
            QuestionRequest {
                method: "sampling/createMessage".into(),
                params: json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 9}),
            },
        )
    }

    #[test]
    fn a_reply_declines_or_sends_what_the_user_wrote_with_its_note() {
        let q = sampling_question();
        let (reply, note) = reply_to(&q, None, None).unwrap();
        assert!(matches!(reply, Reply::Refused(ref e) if e.code == -1), "{reply:?}");
        assert_eq!(
            note.to_value(),
            json!({"approved_by": "user", "model": null, "tokens": null, "outcome": "declined"})
        );
        let text = json!({"text": "hello"}).as_object().cloned().unwrap();
        let (reply, note) = reply_to(&q, Some(&text), None).unwrap();
        let Reply::Result(v) = reply else { panic!() };
        assert_eq!(v["content"], json!({"type": "text", "text": "hello"}));
        assert_eq!((note.model.as_deref(), note.outcome), (Some("human"), "sent"));
        let typo = json!({"txt": "hello"}).as_object().cloned().unwrap();
        assert!(reply_to(&q, Some(&typo), None).unwrap_err().contains("unknown member"));
    }

    #[test]
    fn a_reply_after_the_model_was_asked_says_its_model_its_tokens_and_whether_the_user_edited_it() {
        let q = sampling_question();
        let sampled = Completion {
            result: CreateMessageResult::text("Hello there.", "gpt-test"),
            usage: Some(TokenUsage { input: 12, output: 3 }),
        };
        let as_written = serde_json::to_value(&sampled.result).unwrap().as_object().cloned().unwrap();
        let (reply, note) = reply_to(&q, Some(&as_written), Some(&sampled)).unwrap();
        let Reply::Result(v) = reply else { panic!() };
        assert_eq!(v["model"], "gpt-test");
        assert_eq!(
            note.to_value(),
            json!({"approved_by": "user", "model": "gpt-test", "tokens": {"input": 12, "output": 3},
                "outcome": "sent", "max_tokens": 9})
        );

        let edited = json!({"text": "Hello, you."}).as_object().cloned().unwrap();
        let (reply, note) = reply_to(&q, Some(&edited), Some(&sampled)).unwrap();
        let Reply::Result(v) = reply else { panic!() };
        assert_eq!((&v["model"], &v["content"]["text"]), (&json!("human"), &json!("Hello, you.")));
        assert_eq!(
            note.to_value(),
            json!({"approved_by": "user", "model": "gpt-test", "tokens": {"input": 12, "output": 3},
                "outcome": "sent", "max_tokens": 9, "edited": true})
        );
        // The policy's note is built by the same rule.
        let policy = Note::completion(ApprovedBy::Policy, &sampled, &q.sampling_params().unwrap(), false);
        assert_eq!(note.to_value()["tokens"], policy.to_value()["tokens"]);
        assert_eq!(policy.to_value()["approved_by"], "policy");
    }
}
