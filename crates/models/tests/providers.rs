//! The providers against a loopback stand-in that speaks the OpenAI chat-completions and the
//! Anthropic Messages wire formats. No model can run here, so the stand-in answers as scripted,
//! and checks what it was sent: each test asserts the model, messages, system prompt, max tokens
//! and the key's header, so a wrong request fails.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::StreamExt;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use taskdeck_client::auth::{FileStore, TokenStore};
use taskdeck_models::{ModelEntry, ModelError, ModelsSettings, Pick, ProviderConfig, ProviderKind, keys, sample};
use tokio::net::TcpListener;

const KEY: &str = "sk-test-4f2a9c";

#[derive(Debug, Clone)]
struct Received {
    path: String,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

#[derive(Clone)]
enum Reply {
    Json {
        status: u16,
        headers: Vec<(&'static str, String)>,
        body: String,
    },
    /// 17 MiB, streamed without a length.
    Huge,
    /// The start of an answer, then nothing, forever.
    Never,
}

fn ok(body: Value) -> Reply {
    Reply::Json { status: 200, headers: Vec::new(), body: body.to_string() }
}

struct Stand {
    addr: SocketAddr,
    received: Arc<Mutex<Vec<Received>>>,
}

impl Stand {
    async fn start(reply: Reply) -> Stand {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let received = Arc::new(Mutex::new(Vec::new()));
        let log = received.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let log = log.clone();
                let reply = reply.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                        let log = log.clone();
                        let reply = reply.clone();
                        async move {
                            let path = req.uri().path().to_owned();
                            let headers = req
                                .headers()
                                .iter()
                                .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
                                .collect();
                            let bytes = req.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                            let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                            log.lock().expect("log").push(Received { path, headers, body });
                            Ok::<_, Infallible>(respond(reply))
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Stand { addr, received }
    }

    fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn only(&self) -> Received {
        let r = self.received.lock().expect("log");
        assert_eq!(r.len(), 1, "one request expected, got {r:?}");
        r[0].clone()
    }

    fn count(&self) -> usize {
        self.received.lock().expect("log").len()
    }
}

fn respond(reply: Reply) -> hyper::Response<BoxBody<Bytes, Infallible>> {
    match reply {
        Reply::Json { status, headers, body } => {
            let mut r = hyper::Response::builder().status(status).header("content-type", "application/json");
            for (n, v) in headers {
                r = r.header(n, v);
            }
            r.body(Full::new(Bytes::from(body)).boxed()).expect("response")
        }
        Reply::Huge => {
            let chunks = futures_util::stream::iter(
                (0..17).map(|_| Ok::<_, Infallible>(Frame::data(Bytes::from(vec![b' '; 1024 * 1024])))),
            );
            hyper::Response::new(BodyExt::boxed(StreamBody::new(chunks)))
        }
        Reply::Never => {
            let start = futures_util::stream::once(async {
                Ok::<_, Infallible>(Frame::data(Bytes::from_static(b"{\"choices\":")))
            });
            hyper::Response::new(BodyExt::boxed(StreamBody::new(start.chain(futures_util::stream::pending()))))
        }
    }
}

fn provider(name: &str, kind: ProviderKind, base: String, models: &[&str]) -> ProviderConfig {
    ProviderConfig {
        name: name.into(),
        kind,
        base_url: base,
        models: models.iter().map(|m| ModelEntry::new(*m)).collect(),
        timeout_secs: Some(2),
    }
}

/// A file store (as `TASKDECK_SIGN_IN_STORE=file` gives) holding `KEY` for each provider.
fn store_with_key(dir: &tempfile::TempDir, providers: &[&str]) -> Arc<dyn TokenStore> {
    let store = FileStore::in_dir(dir.path());
    for p in providers {
        keys::save_key(&store, p, KEY).expect("save key");
    }
    Arc::new(store)
}

fn request() -> Value {
    json!({
        "systemPrompt": "You are terse.",
        "maxTokens": 100,
        "temperature": 0.5,
        "stopSequences": ["###"],
        "messages": [
            {"role": "user", "content": {"type": "text", "text": "What is 2+2?"}},
            {"role": "assistant", "content": {"type": "text", "text": "Four."}},
            {"role": "user", "content": [
                {"type": "text", "text": "And this?"},
                {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"}
            ]}
        ]
    })
}

fn openai_answer() -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-test-0613",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "A picture of hello."}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 31, "completion_tokens": 5, "total_tokens": 36}
    })
}

fn anthropic_answer() -> Value {
    json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test-1",
        "content": [{"type": "text", "text": "Hello, in a picture."}],
        "stop_reason": "stop_sequence", "stop_sequence": "###",
        "usage": {"input_tokens": 40, "output_tokens": 6}
    })
}

#[tokio::test]
async fn an_openai_compatible_request_carries_the_model_messages_system_prompt_and_bearer_key() {
    let stand = Stand::start(ok(openai_answer())).await;
    let dir = tempfile::tempdir().expect("dir");
    let settings = ModelsSettings {
        providers: vec![provider("local", ProviderKind::OpenAi, format!("{}/v1", stand.base()), &["gpt-test"])],
    };
    let out =
        sample(&settings, store_with_key(&dir, &["local"]), &request(), Pick::ByPreferences).await.expect("sampled");

    let got = stand.only();
    assert_eq!(got.path, "/v1/chat/completions");
    assert_eq!(got.header("authorization"), Some(format!("Bearer {KEY}").as_str()));
    assert_eq!(got.body["model"], "gpt-test");
    assert_eq!(got.body["max_tokens"], 100);
    assert_eq!(got.body["temperature"], 0.5);
    assert_eq!(got.body["stop"], json!(["###"]));
    assert_eq!(
        got.body["messages"],
        json!([
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "What is 2+2?"},
            {"role": "assistant", "content": "Four."},
            {"role": "user", "content": [
                {"type": "text", "text": "And this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGVsbG8="}}
            ]}
        ])
    );

    assert_eq!(
        out.result,
        json!({"role": "assistant", "content": {"type": "text", "text": "A picture of hello."}, "model": "gpt-test-0613", "stopReason": "endTurn"})
    );
    assert_eq!(out.provider, "local");
    let usage = out.completion.usage.expect("usage");
    assert_eq!((usage.input_tokens, usage.output_tokens), (31, 5));
}

#[tokio::test]
async fn an_anthropic_request_carries_the_key_version_system_prompt_and_blocks() {
    let stand = Stand::start(ok(anthropic_answer())).await;
    let dir = tempfile::tempdir().expect("dir");
    let settings =
        ModelsSettings { providers: vec![provider("claude", ProviderKind::Anthropic, stand.base(), &["claude-test"])] };
    let out =
        sample(&settings, store_with_key(&dir, &["claude"]), &request(), Pick::ByPreferences).await.expect("sampled");

    let got = stand.only();
    assert_eq!(got.path, "/v1/messages");
    assert_eq!(got.header("x-api-key"), Some(KEY));
    assert_eq!(got.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(got.header("authorization"), None, "the key goes in x-api-key only");
    assert_eq!(got.body["model"], "claude-test");
    assert_eq!(got.body["max_tokens"], 100);
    assert_eq!(got.body["system"], "You are terse.");
    assert_eq!(got.body["stop_sequences"], json!(["###"]));
    assert_eq!(
        got.body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "What is 2+2?"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Four."}]},
            {"role": "user", "content": [
                {"type": "text", "text": "And this?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "aGVsbG8="}}
            ]}
        ])
    );

    assert_eq!(out.result["stopReason"], "stopSequence");
    assert_eq!(out.result["model"], "claude-test-1");
    assert_eq!(out.completion.text(), "Hello, in a picture.");
    let usage = out.completion.usage.expect("usage");
    assert_eq!((usage.input_tokens, usage.output_tokens), (40, 6));
}

fn tool_request() -> Value {
    json!({
        "maxTokens": 50,
        "messages": [
            {"role": "user", "content": {"type": "text", "text": "Weather in Oslo?"}},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "call_1", "name": "weather", "input": {"city": "Oslo"}}]},
            {"role": "user", "content": [{"type": "tool_result", "toolUseId": "call_1", "content": [{"type": "text", "text": "-3 C"}]}]}
        ],
        "tools": [{"name": "weather", "description": "The weather", "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}],
        "toolChoice": {"mode": "required"}
    })
}

#[tokio::test]
async fn tools_pass_through_to_chat_completions_and_a_tool_call_comes_back_as_tool_use() {
    let answer = json!({
        "model": "gpt-test",
        "choices": [{"message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "call_2", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Bergen\"}"}}]},
            "finish_reason": "tool_calls"}]
    });
    let stand = Stand::start(ok(answer)).await;
    let dir = tempfile::tempdir().expect("dir");
    let settings = ModelsSettings { providers: vec![provider("o", ProviderKind::OpenAi, stand.base(), &["gpt-test"])] };
    let out =
        sample(&settings, store_with_key(&dir, &["o"]), &tool_request(), Pick::ByPreferences).await.expect("sampled");

    let got = stand.only();
    assert_eq!(got.body["tool_choice"], "required");
    assert_eq!(got.body["tools"][0]["function"]["name"], "weather");
    assert_eq!(got.body["tools"][0]["function"]["parameters"]["properties"]["city"]["type"], "string");
    assert_eq!(got.body["messages"][1]["tool_calls"][0]["function"]["arguments"], "{\"city\":\"Oslo\"}");
    assert_eq!(got.body["messages"][2], json!({"role": "tool", "tool_call_id": "call_1", "content": "-3 C"}));

    assert_eq!(out.result["stopReason"], "toolUse");
    assert_eq!(
        out.result["content"],
        json!({"type": "tool_use", "id": "call_2", "name": "weather", "input": {"city": "Bergen"}})
    );
}

#[tokio::test]
async fn tools_pass_through_to_the_messages_api_with_required_as_any() {
    let answer = json!({
        "model": "claude-test", "stop_reason": "tool_use",
        "content": [{"type": "text", "text": "Checking."}, {"type": "tool_use", "id": "tu_1", "name": "weather", "input": {"city": "Bergen"}}],
        "usage": {"input_tokens": 1, "output_tokens": 2}
    });
    let stand = Stand::start(ok(answer)).await;
    let dir = tempfile::tempdir().expect("dir");
    let settings =
        ModelsSettings { providers: vec![provider("a", ProviderKind::Anthropic, stand.base(), &["claude-test"])] };
    let out =
        sample(&settings, store_with_key(&dir, &["a"]), &tool_request(), Pick::ByPreferences).await.expect("sampled");

    let got = stand.only();
    assert_eq!(got.body["tool_choice"], json!({"type": "any"}));
    assert_eq!(got.body["tools"][0]["input_schema"]["type"], "object");
    assert_eq!(
        got.body["messages"][2]["content"][0],
        json!({"type": "tool_result", "tool_use_id": "call_1", "content": [{"type": "text", "text": "-3 C"}], "is_error": false})
    );
    assert_eq!(out.result["stopReason"], "toolUse");
    assert_eq!(out.result["content"][1]["type"], "tool_use");
}

fn audio_request(mime: &str) -> Value {
    json!({"maxTokens": 10, "messages": [{"role": "user", "content": {"type": "audio", "data": "UklGRg==", "mimeType": mime}}]})
}

#[tokio::test]
async fn audio_goes_to_chat_completions_as_input_audio_and_is_refused_by_the_messages_api_before_sending() {
    let stand = Stand::start(ok(openai_answer())).await;
    let dir = tempfile::tempdir().expect("dir");
    let settings =
        ModelsSettings { providers: vec![provider("o", ProviderKind::OpenAi, stand.base(), &["gpt-audio"])] };
    sample(&settings, store_with_key(&dir, &["o"]), &audio_request("audio/wav"), Pick::ByPreferences)
        .await
        .expect("sampled");
    assert_eq!(
        stand.only().body["messages"][0]["content"][0],
        json!({"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}})
    );
    let e = sample(&settings, store_with_key(&dir, &["o"]), &audio_request("audio/ogg"), Pick::ByPreferences)
        .await
        .expect_err("ogg refused");
    assert!(matches!(e, ModelError::Unsupported { .. }), "{e:?}");

    let stand = Stand::start(ok(anthropic_answer())).await;
    let settings =
        ModelsSettings { providers: vec![provider("a", ProviderKind::Anthropic, stand.base(), &["claude-test"])] };
    let e = sample(&settings, store_with_key(&dir, &["a"]), &audio_request("audio/wav"), Pick::ByPreferences)
        .await
        .expect_err("refused");
    assert!(matches!(&e, ModelError::Unsupported { provider, .. } if provider == "a"), "{e:?}");
    assert!(e.to_string().contains("audio"), "{e}");
    assert_eq!(stand.count(), 0, "nothing is sent that the API cannot take");
}

#[tokio::test]
async fn the_models_hints_send_the_request_to_the_provider_whose_model_matches() {
    let openai = Stand::start(ok(openai_answer())).await;
    let anthropic = Stand::start(ok(anthropic_answer())).await;
    let dir = tempfile::tempdir().expect("dir");
    let settings = ModelsSettings {
        providers: vec![
            provider("local", ProviderKind::OpenAi, openai.base(), &["llama3.2"]),
            provider("claude", ProviderKind::Anthropic, anthropic.base(), &["claude-haiku-4-5", "claude-sonnet-4-5"]),
        ],
    };
    let mut req = request();
    req["modelPreferences"] = json!({"hints": [{"name": "gpt-5"}, {"name": "sonnet"}]});
    let out = sample(&settings, store_with_key(&dir, &["local", "claude"]), &req, Pick::ByPreferences)
        .await
        .expect("sampled");
    assert_eq!(out.provider, "claude");
    assert_eq!(anthropic.only().body["model"], "claude-sonnet-4-5");
    assert_eq!(openai.count(), 0);

    // The user's own pick overrides the server's preferences.
    sample(&settings, store_with_key(&dir, &["local", "claude"]), &req, Pick::Model { provider: "local", model: None })
        .await
        .expect("sampled");
    assert_eq!(openai.only().body["model"], "llama3.2");
}

#[tokio::test]
async fn a_provider_without_a_stored_key_is_sent_no_key_header() {
    let stand = Stand::start(ok(openai_answer())).await;
    let dir = tempfile::tempdir().expect("dir");
    let settings =
        ModelsSettings { providers: vec![provider("ollama", ProviderKind::OpenAi, stand.base(), &["llama3.2"])] };
    sample(&settings, store_with_key(&dir, &[]), &request(), Pick::ByPreferences).await.expect("sampled");
    assert_eq!(stand.only().header("authorization"), None);
}

async fn failure(reply: Reply) -> ModelError {
    let stand = Stand::start(reply).await;
    let dir = tempfile::tempdir().expect("dir");
    let mut p = provider("flaky", ProviderKind::OpenAi, stand.base(), &["gpt-test"]);
    p.timeout_secs = Some(1);
    let settings = ModelsSettings { providers: vec![p] };
    let e =
        sample(&settings, store_with_key(&dir, &["flaky"]), &request(), Pick::ByPreferences).await.expect_err("fails");
    let shown = format!("{e} {e:?}");
    assert!(!shown.contains(KEY), "the key leaked: {shown}");
    assert_eq!(e.provider(), Some("flaky"), "{e:?}");
    assert!(e.to_string().contains("flaky"), "{e}");
    e
}

fn status(status: u16, headers: Vec<(&'static str, String)>, body: &str) -> Reply {
    Reply::Json { status, headers, body: body.into() }
}

#[tokio::test]
async fn a_refused_key_is_a_bad_key_error_that_does_not_repeat_the_key() {
    let body =
        format!(r#"{{"error":{{"message":"Incorrect API key provided: {KEY}","type":"invalid_request_error"}}}}"#);
    let e = failure(status(401, Vec::new(), &body)).await;
    assert_eq!(e, ModelError::BadKey { provider: "flaky".into(), status: 401 });
}

#[tokio::test]
async fn a_rate_limit_says_when_to_try_again() {
    let e = failure(status(429, vec![("retry-after", "7".into())], r#"{"error":{"message":"slow down"}}"#)).await;
    assert_eq!(e, ModelError::RateLimited { provider: "flaky".into(), retry_after_secs: Some(7) });
    assert!(e.to_string().contains("7 s"), "{e}");
    assert!(e.is_transient());
}

#[tokio::test]
async fn a_server_error_carries_the_providers_message_with_the_key_scrubbed() {
    let body = format!(r#"{{"error":{{"message":"overloaded while serving {KEY}"}}}}"#);
    let e = failure(status(503, Vec::new(), &body)).await;
    assert_eq!(
        e,
        ModelError::Server {
            provider: "flaky".into(),
            status: 503,
            message: "overloaded while serving <redacted>".into()
        }
    );
}

#[tokio::test]
async fn an_unknown_model_is_a_refused_request() {
    let e = failure(status(404, Vec::new(), r#"{"error":{"message":"model 'gpt-test' not found"}}"#)).await;
    assert!(matches!(&e, ModelError::Refused { status: 404, message, .. } if message.contains("not found")), "{e:?}");
}

#[tokio::test]
async fn a_huge_answer_is_cut_off_at_the_bound() {
    let e = failure(Reply::Huge).await;
    assert_eq!(e, ModelError::TooLarge { provider: "flaky".into(), limit: 16 * 1024 * 1024 });
}

#[tokio::test]
async fn an_answer_that_never_ends_times_out() {
    let started = std::time::Instant::now();
    let e = failure(Reply::Never).await;
    assert_eq!(e, ModelError::Timeout { provider: "flaky".into(), secs: 1 });
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}

#[tokio::test]
async fn malformed_answers_are_typed_errors() {
    let e = failure(status(200, Vec::new(), "{not json")).await;
    assert!(matches!(e, ModelError::Malformed { .. }), "{e:?}");
    let e = failure(ok(json!({"choices": []}))).await;
    assert!(matches!(e, ModelError::Malformed { .. }), "{e:?}");
    let e = failure(ok(json!({"choices": [{"message": {"content": 5}}]}))).await;
    assert!(matches!(e, ModelError::Malformed { .. }), "{e:?}");
}

#[tokio::test]
async fn a_provider_that_is_not_listening_is_unreachable() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    let dir = tempfile::tempdir().expect("dir");
    let settings =
        ModelsSettings { providers: vec![provider("gone", ProviderKind::Anthropic, format!("http://{addr}"), &["m"])] };
    let e =
        sample(&settings, store_with_key(&dir, &["gone"]), &request(), Pick::ByPreferences).await.expect_err("fails");
    assert!(matches!(&e, ModelError::Unreachable { provider, .. } if provider == "gone"), "{e:?}");
}

#[tokio::test]
async fn with_no_provider_configured_the_error_says_how_to_add_one() {
    let dir = tempfile::tempdir().expect("dir");
    let e = sample(&ModelsSettings::default(), store_with_key(&dir, &[]), &request(), Pick::ByPreferences)
        .await
        .expect_err("no model");
    assert!(e.to_string().contains("models add"), "{e}");
}
