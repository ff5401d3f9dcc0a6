//! A server asking the user something, decoded once into what it asks. A legacy server sends the
//! question as a request of its own (`elicitation/create`); a modern one lists it in a task's
//! `inputRequests`. Both become a [`Question`] through [`Question::decode`], and everything after
//! that (the store, the engine, the notifications, the CLI, the UI through its TypeScript twin)
//! reads its fields instead of the raw JSON.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::RequestId;
use crate::elicitation::{ElicitAction, ElicitMode, ElicitRequestParams, ElicitResult};
use crate::form::FormModel;
use crate::url_check::UrlCheck;
use crate::{limits, methods};

/// How a question is answered: legacy questions are open JSON-RPC requests from the server;
/// modern ones are keys of a task's `inputRequests`, answered with `tasks/update`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "value")]
pub enum QuestionKey {
    Request(RequestId),
    InputKey(String),
}

impl std::fmt::Display for QuestionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QuestionKey::Request(id) => write!(f, "request {id}"),
            QuestionKey::InputKey(k) => write!(f, "input {k:?}"),
        }
    }
}

impl QuestionKey {
    /// The key as the store and the CLI's JSON have always written it: its own JSON, as a string.
    pub fn to_text(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads [`QuestionKey::to_text`]. Text that is not a key (no version of Taskdeck wrote one)
    /// is taken as a legacy request id: the answer then waits for the server to ask again, which
    /// is the safe way to find out.
    pub fn from_text(text: &str) -> QuestionKey {
        serde_json::from_str(text).unwrap_or_else(|_| QuestionKey::Request(RequestId::String(text.to_owned())))
    }
}

/// The request a question came in, exactly as the server sent it (`{method, params}`, the shape
/// of an `inputRequests` entry), so what the server said is never lost to the decoding.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionRequest {
    pub method: String,
    #[serde(default)]
    pub params: Value,
}

/// What a question asks of the user.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Asks {
    /// A form elicitation: `schema` is its `requestedSchema` as sent (the engine checks answers
    /// against it), `form` the one reading of it that the CLI and the UI ask from.
    Form { schema: Value, form: FormModel },
    /// A URL-mode elicitation: the user visits `url`; accepting only says they agreed to.
    Url { url: String, elicitation_id: String },
    /// `sampling/createMessage` (a legacy request, or a modern `inputRequests` entry): the server
    /// wants a language model's reply. `sampling` is what the review shows of it; the messages
    /// themselves are in the question's `request` (see [`crate::sampling`]).
    Sampling { sampling: Box<crate::sampling::SamplingAsk> },
    /// `roots/list` in a modern `inputRequests`: the server wants the client's roots.
    Roots,
    /// A request whose params do not have the shape its method requires (an elicitation without
    /// a message, say). A legacy server is answered with an error; a modern one can be declined.
    Malformed { reason: String },
    /// A method Taskdeck does not know how to answer.
    Unsupported { reason: String },
    /// A question whose params are over [`limits::QUESTION_BYTES`] as JSON (`size` bytes): not
    /// shown and not kept (its `request` keeps the method only), so it can only be declined or
    /// cancelled.
    TooLarge {
        #[cfg_attr(feature = "ts", ts(type = "number"))]
        size: usize,
    },
}

/// A server asking the user something.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Question {
    /// Written as [`QuestionKey::to_text`]: the key's identity, which is all the UI needs of it.
    #[serde(serialize_with = "key_as_text")]
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub key: QuestionKey,
    /// The task the question belongs to, when the server said so (legacy related-task `_meta`, or
    /// the task whose `inputRequests` carried it).
    pub task_id: Option<String>,
    /// What the server says to the user, when the request carries a message.
    pub message: Option<String>,
    pub asks: Asks,
    pub request: QuestionRequest,
    /// For a URL-mode elicitation, where its address would take the user: what the CLI and the
    /// app's consent dialog show and refuse, worked out here once. Not stored: read back, it is
    /// worked out again by today's rules. Boxed: most questions have none, and a question travels
    /// inside every session event.
    #[cfg_attr(feature = "ts", ts(optional = nullable))]
    pub url_check: Option<Box<UrlCheck>>,
}

fn key_as_text<S: serde::Serializer>(key: &QuestionKey, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&key.to_text())
}

/// A question reads back through [`Question::decode`], so what was stored is read by the same rules
/// as what a server sends today (and `asks`, `message`, written for other readers, are not trusted).
impl<'de> Deserialize<'de> for Question {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Stored {
            key: String,
            #[serde(default)]
            task_id: Option<String>,
            request: QuestionRequest,
            #[serde(default)]
            message: Option<String>,
            #[serde(default)]
            asks: Option<StoredAsks>,
        }
        /// The one kind read back as written: a question too large to keep has no params to decide
        /// from again.
        #[derive(Deserialize)]
        #[serde(tag = "kind", rename_all = "snake_case")]
        enum StoredAsks {
            TooLarge {
                size: usize,
            },
            #[serde(other)]
            Other,
        }
        let s = Stored::deserialize(d)?;
        let key = QuestionKey::from_text(&s.key);
        Ok(match s.asks {
            Some(StoredAsks::TooLarge { size }) => {
                Question::too_large(key, s.task_id, s.request.method, s.message, size)
            }
            _ => Question::decode(key, s.task_id, s.request),
        })
    }
}

impl Question {
    /// The one constructor: reads what `request` asks for. It never fails; a request it cannot read
    /// is a question that asks something [`Asks::Malformed`] or [`Asks::Unsupported`].
    pub fn decode(key: QuestionKey, task_id: Option<String>, request: QuestionRequest) -> Question {
        if let Some(size) = limits::question_too_large(&request.params) {
            let message = request.params.get("message").and_then(Value::as_str).map(str::to_owned);
            return Question::too_large(key, task_id, request.method, message, size);
        }
        let (message, asks) = asks(&request);
        let url_check = match &asks {
            Asks::Url { url, .. } => Some(Box::new(UrlCheck::of(url))),
            _ => None,
        };
        Question { key, task_id, message, asks, request, url_check }
    }

    /// A question over [`limits::QUESTION_BYTES`]: only its method and its message (cut to the
    /// bound of a status message) are kept, and what it asks is [`Asks::TooLarge`].
    pub fn too_large(
        key: QuestionKey,
        task_id: Option<String>,
        method: String,
        message: Option<String>,
        size: usize,
    ) -> Question {
        let message = limits::cut_opt(message, limits::STATUS_MESSAGE_BYTES);
        let request = QuestionRequest { method, params: Value::Null };
        Question { key, task_id, message, asks: Asks::TooLarge { size }, request, url_check: None }
    }

    /// The size of a question too large to keep, in bytes of JSON.
    pub fn too_large_size(&self) -> Option<usize> {
        match self.asks {
            Asks::TooLarge { size } => Some(size),
            _ => None,
        }
    }

    /// Whether this is an elicitation (well formed or not).
    pub fn is_elicitation(&self) -> bool {
        self.request.method == methods::ELICITATION_CREATE
    }

    /// Whether the user is asked this (an elicitation or a sampling request, well formed or not);
    /// anything else a server lists (roots, a method Taskdeck does not know) is answered without
    /// asking anyone.
    pub fn asks_the_user(&self) -> bool {
        self.is_elicitation() || self.is_sampling()
    }

    /// Whether this is a sampling request (well formed or not).
    pub fn is_sampling(&self) -> bool {
        self.request.method == methods::SAMPLING_CREATE_MESSAGE
    }

    /// The sampling request's params, for a well-formed sampling question.
    pub fn sampling_params(&self) -> Option<crate::sampling::CreateMessageParams> {
        match self.asks {
            Asks::Sampling { .. } => crate::sampling::CreateMessageParams::deserialize(&self.request.params).ok(),
            _ => None,
        }
    }

    /// The schema an accepted answer must satisfy, for a form elicitation.
    pub fn schema(&self) -> Option<&Value> {
        match &self.asks {
            Asks::Form { schema, .. } => Some(schema),
            _ => None,
        }
    }

    /// The accept for this question. A URL-mode accept only says the user agreed to visit, so it
    /// carries no `content` (both schemas: "omitted for out-of-band mode responses").
    pub fn accept(&self, content: serde_json::Map<String, Value>) -> ElicitResult {
        match self.asks {
            Asks::Url { .. } => ElicitResult { action: ElicitAction::Accept, content: None, extra: Default::default() },
            _ => ElicitResult::accept(content),
        }
    }

    /// The form to ask, for a form elicitation whose schema a form can express.
    pub fn form(&self) -> Option<&FormModel> {
        match &self.asks {
            Asks::Form { form, .. } => Some(form),
            _ => None,
        }
    }
}

fn asks(request: &QuestionRequest) -> (Option<String>, Asks) {
    let message = || request.params.get("message").and_then(Value::as_str).map(str::to_owned);
    match request.method.as_str() {
        methods::ELICITATION_CREATE => match ElicitRequestParams::deserialize(&request.params) {
            Ok(p) => {
                let asks = match p.mode {
                    ElicitMode::Form { requested_schema } => {
                        let form = FormModel::from_schema(&requested_schema);
                        Asks::Form { schema: requested_schema, form }
                    }
                    ElicitMode::Url { elicitation_id, url } => Asks::Url { url, elicitation_id },
                };
                (Some(p.message), asks)
            }
            Err(e) => (message(), Asks::Malformed { reason: format!("invalid elicitation: {e}") }),
        },
        methods::SAMPLING_CREATE_MESSAGE => crate::sampling::asks(&request.params),
        methods::ROOTS_LIST => (None, Asks::Roots),
        other => (message(), Asks::Unsupported { reason: format!("Taskdeck does not answer {other}") }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::form::FieldKind;
    use serde_json::json;

    fn request(method: &str, params: Value) -> QuestionRequest {
        QuestionRequest { method: method.into(), params }
    }

    fn elicit(params: Value) -> Question {
        Question::decode(
            QuestionKey::Request(RequestId::Number(7)),
            Some("t1".into()),
            request("elicitation/create", params),
        )
    }

    #[test]
    fn a_form_elicitation_with_mode_omitted_asks_its_form() {
        let schema = json!({"type": "object", "properties": {"service": {"type": "string", "enum": ["a", "b"]}},
            "required": ["service"]});
        let q = elicit(json!({"message": "Which service?", "requestedSchema": schema}));
        assert_eq!(q.message.as_deref(), Some("Which service?"));
        assert_eq!(q.schema(), Some(&schema));
        let fields = q.form().and_then(FormModel::fields).expect("a form");
        assert_eq!((fields[0].name.as_str(), fields[0].required), ("service", true));
        assert!(matches!(fields[0].kind, FieldKind::Choice { .. }));
        assert!(q.is_elicitation());
    }

    #[test]
    fn a_url_elicitation_asks_for_a_visit() {
        let q =
            elicit(json!({"mode": "url", "message": "Sign in", "url": "https://a.example/x", "elicitationId": "e1"}));
        assert_eq!(q.asks, Asks::Url { url: "https://a.example/x".into(), elicitation_id: "e1".into() });
        assert_eq!(q.message.as_deref(), Some("Sign in"));
        assert_eq!(q.schema(), None);
        let check = q.url_check.as_ref().expect("a URL question is checked");
        assert_eq!(check.registrable_domain.as_deref(), Some("a.example"));
        assert_eq!(serde_json::to_value(&q).unwrap()["url_check"]["host"], "a.example");
        assert_eq!(elicit(json!({"message": "m", "requestedSchema": {}})).url_check, None);
    }

    #[test]
    fn accepting_a_url_question_sends_no_content_and_a_form_its_answers() {
        let url =
            elicit(json!({"mode": "url", "message": "Sign in", "url": "https://a.example/", "elicitationId": "e"}));
        let accept = serde_json::to_value(url.accept(serde_json::Map::new())).unwrap();
        assert_eq!(accept, json!({"action": "accept"}));
        let form = elicit(json!({"message": "m", "requestedSchema": {"properties": {"n": {"type": "integer"}}}}));
        let answers = json!({"n": 3}).as_object().cloned().unwrap();
        assert_eq!(
            serde_json::to_value(form.accept(answers)).unwrap(),
            json!({"action": "accept", "content": {"n": 3}})
        );
    }

    #[test]
    fn a_url_question_for_a_javascript_address_is_refused_when_decoded() {
        let q = elicit(json!({"mode": "url", "message": "Click", "url": "javascript:alert(1)", "elicitationId": "e"}));
        let check = q.url_check.expect("checked");
        assert!(!check.can_open());
        assert_eq!(check.warnings[0].kind, crate::url_check::UrlWarningKind::NotWeb);
    }

    #[test]
    fn a_malformed_elicitation_is_malformed_and_keeps_what_was_sent() {
        for params in [
            json!({"requestedSchema": {}}),
            json!({"message": "m", "mode": "url", "url": "https://x"}),
            json!({"message": "m", "mode": "telepathy"}),
            json!({"message": "m", "requestedSchema": "text"}),
            Value::Null,
        ] {
            let q = elicit(params.clone());
            assert!(
                matches!(&q.asks, Asks::Malformed { reason } if reason.starts_with("invalid elicitation")),
                "{q:?}"
            );
            assert_eq!(q.request.params, params);
        }
        // The message is still shown when there is one.
        assert_eq!(elicit(json!({"message": "m", "mode": "x"})).message.as_deref(), Some("m"));
    }

    #[test]
    fn a_form_whose_schema_a_form_cannot_express_is_still_a_form_question() {
        let q = elicit(json!({"message": "m", "requestedSchema": {"properties": {"a": {"type": "object"}}}}));
        assert_eq!(q.form(), Some(&FormModel::Unsupported { reason: "a: type object".into() }));
    }

    #[test]
    fn sampling_roots_and_unknown_methods_are_named_and_kept_raw() {
        let key = QuestionKey::InputKey("k".into());
        let sampling = request("sampling/createMessage", json!({"messages": [], "maxTokens": 10}));
        let q = Question::decode(key.clone(), None, sampling.clone());
        assert!(matches!(&q.asks, Asks::Sampling { sampling } if sampling.max_tokens == 10), "{q:?}");
        assert_eq!(q.request, sampling);
        assert!(q.asks_the_user() && q.is_sampling() && q.sampling_params().is_some());
        assert_eq!(Question::decode(key.clone(), None, request("roots/list", Value::Null)).asks, Asks::Roots);
        let q = Question::decode(key, None, request("tea/brew", json!({"message": "Milk?"})));
        assert_eq!(q.asks, Asks::Unsupported { reason: "Taskdeck does not answer tea/brew".into() });
        assert_eq!(q.message.as_deref(), Some("Milk?"));
        assert!(!q.is_elicitation());
    }

    #[test]
    fn a_question_reads_back_what_it_wrote_with_the_key_as_text() {
        let q = elicit(json!({"message": "m", "requestedSchema": {"properties": {"n": {"type": "integer"}}}}));
        let v = serde_json::to_value(&q).unwrap();
        assert_eq!(v["key"], r#"{"kind":"request","value":7}"#);
        assert_eq!(v["request"]["method"], "elicitation/create");
        assert_eq!(v["asks"]["kind"], "form");
        assert_eq!(v["asks"]["form"]["fields"][0]["kind"]["type"], "number");
        let back: Question = serde_json::from_value(v).unwrap();
        assert_eq!(back, q);
    }

    #[test]
    fn a_question_over_the_bound_is_too_large_keeps_no_body_and_reads_back_as_such() {
        let options: Vec<String> = (0..40_000).map(|i| format!("option-{i}")).collect();
        let schema = json!({"type": "object", "properties": {"pick": {"type": "string", "enum": options}}});
        let q = elicit(json!({"message": "Pick one", "requestedSchema": schema}));
        let size = q.too_large_size().expect("too large");
        assert!(size > limits::QUESTION_BYTES, "{size}");
        assert_eq!(q.message.as_deref(), Some("Pick one"));
        assert_eq!((q.request.method.as_str(), &q.request.params), ("elicitation/create", &Value::Null));
        assert_eq!((q.schema(), q.form()), (None, None));
        assert!(q.is_elicitation());
        let v = serde_json::to_value(&q).unwrap();
        assert_eq!(v["asks"], json!({"kind": "too_large", "size": size}));
        let back: Question = serde_json::from_value(v).unwrap();
        assert_eq!(back, q);
        // A huge message alone makes a question too large; what is kept of it is cut.
        let q = elicit(json!({"message": "m".repeat(limits::QUESTION_BYTES), "requestedSchema": {}}));
        assert!(q.too_large_size().is_some());
        assert!(q.message.unwrap().len() <= limits::STATUS_MESSAGE_BYTES);
    }

    #[test]
    fn keys_round_trip_as_text_and_foreign_text_is_a_request_id() {
        for key in [
            QuestionKey::Request(RequestId::Number(0)),
            QuestionKey::Request("r-1".into()),
            QuestionKey::InputKey("x".into()),
        ] {
            assert_eq!(QuestionKey::from_text(&key.to_text()), key);
        }
        assert_eq!(QuestionKey::from_text("nonsense"), QuestionKey::Request("nonsense".into()));
    }
}
