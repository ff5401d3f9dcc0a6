//! `publish_notes`: a plain call that asks before it acts. In 2026-07-28 it answers the call with
//! an `InputRequiredResult` (multi-round-trip requests): a confirmation form, and the client's
//! roots where the client offers them, with a `requestState` naming how far the confirmations
//! got; the client sends the call again with the answers, and the server, holding nothing in
//! between, reads everything from that retry. In 2025-11-25 it publishes without asking.
//!
//! The state is not secret and needs no integrity protection: forged, it can only make this
//! call fail or ask again (the spec allows leaving it unprotected then). It is tied to the call's
//! arguments, so a state presented with other arguments is refused.

use serde_json::{Map, Value, json};
use taskdeck_protocol::elicitation::{ElicitAction, ElicitResult};
use taskdeck_protocol::modern::request_meta::RequestEnvelope;
use taskdeck_protocol::modern::result_type;
use taskdeck_protocol::types::CallToolResult;
use taskdeck_protocol::{ErrorObject, codes, methods};

use crate::server::invalid_params;

/// The most confirmations one call may be made to ask for (`rounds`).
pub const MAX_ROUNDS: i64 = 20;
const STATE_PREFIX: &str = "publish_notes/v1/";
/// The logger of the entries it sends.
pub const LOGGER: &str = "demo.publish";
const ROOTS_KEY: &str = "destination";
const BLURB_KEY: &str = "blurb";

/// The answer to one `tools/call` of `publish_notes` in the modern era: an `input_required`
/// result, or the tool's result once every confirmation is in.
pub fn modern_call(
    args: &Map<String, Value>,
    params: Option<&Value>,
    envelope: &RequestEnvelope,
    log: &mut Vec<(&'static str, String)>,
) -> Result<Value, ErrorObject> {
    if !envelope.declares_elicitation() {
        return Err(ErrorObject::new(codes::MISSING_REQUIRED_CLIENT_CAPABILITY, "Missing required client capability")
            .with_data(json!({"requiredCapabilities": {"elicitation": {"form": {}}}})));
    }
    let rounds = args.get("rounds").and_then(Value::as_i64).unwrap_or(1).clamp(1, MAX_ROUNDS);
    let digest = digest(args);
    let (confirmed, earlier) = match params.and_then(|p| p.get("requestState")) {
        None => (0, None),
        Some(Value::String(s)) => read_state(s, &digest)?,
        Some(_) => return Err(invalid_params("params.requestState: must be a string")),
    };
    let responses = match params.and_then(|p| p.get("inputResponses")) {
        None => Map::new(),
        Some(Value::Object(r)) => r.clone(),
        Some(_) => return Err(invalid_params("params.inputResponses: must be an object")),
    };
    // The destination comes with the first round's answers; later rounds carry it in their state.
    let destination = responses
        .get(ROOTS_KEY)
        .and_then(|r| r.get("roots"))
        .and_then(Value::as_array)
        .and_then(|r| r.first())
        .and_then(|r| r.get("uri"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or(earlier);
    let key = confirm_key(confirmed);
    let Some(answer) = responses.get(&key) else {
        // The first call, or a retry without the answer asked for: ask (again), as the spec says.
        log.push(("debug", format!("asking for confirmation {} of {rounds}", confirmed + 1)));
        return Ok(ask(args, confirmed, rounds, &digest, destination.as_deref(), envelope));
    };
    let answer: ElicitResult = serde_json::from_value(answer.clone())
        .map_err(|e| invalid_params(format!("params.inputResponses.{key}: not an elicitation result: {e}")))?;
    let yes = answer.action == ElicitAction::Accept
        && answer.content.as_ref().and_then(|c| c.get("publish")).and_then(Value::as_bool) == Some(true);
    if !yes {
        let mut result = CallToolResult::text("Nothing was published: the user did not confirm.");
        result.structured_content = Some(json!({"published": false, "confirmations": confirmed}));
        return Ok(complete(result));
    }
    if confirmed + 1 < rounds {
        log.push(("debug", format!("asking for confirmation {} of {rounds}", confirmed + 2)));
        return Ok(ask(args, confirmed + 1, rounds, &digest, destination.as_deref(), envelope));
    }
    // Asked with the last confirmation: a model's line to publish them with.
    let blurb = responses
        .get(BLURB_KEY)
        .and_then(|r| r.get("content"))
        .and_then(|c| c.get("text"))
        .and_then(Value::as_str)
        .map(|t| t.chars().take(500).collect::<String>());
    if wants_blurb(args, envelope) && blurb.is_none() {
        return Ok(ask(args, confirmed, rounds, &digest, destination.as_deref(), envelope));
    }
    let title = title(args);
    let to = destination.as_deref().unwrap_or("the demo shelf");
    log.push(("info", format!("published {} notes as {title:?}", crate::work::NOTES.len())));
    let mut result = CallToolResult::text(format!(
        "Published {} demo notes as {title:?} to {to} after {rounds} confirmation(s).",
        crate::work::NOTES.len()
    ));
    result.structured_content = Some(json!({
        "published": true,
        "title": title,
        "confirmations": rounds,
        "destination": destination,
        "blurb": blurb,
    }));
    Ok(complete(result))
}

/// The legacy era has no input before a call returns: the notes are published at once.
pub fn legacy_call(args: &Map<String, Value>, log: &mut Vec<(&'static str, String)>) -> CallToolResult {
    let title = title(args);
    log.push(("debug", "publishing without asking (2025-11-25)".to_owned()));
    log.push(("info", format!("published {} notes as {title:?}", crate::work::NOTES.len())));
    let mut result = CallToolResult::text(format!(
        "Published {} demo notes as {title:?} (2025-11-25: published without asking).",
        crate::work::NOTES.len()
    ));
    result.structured_content = Some(json!({"published": true, "title": title, "confirmations": 0}));
    result
}

fn title(args: &Map<String, Value>) -> String {
    args.get("title").and_then(Value::as_str).unwrap_or("Demo notes").to_owned()
}

fn complete(result: CallToolResult) -> Value {
    let mut v = serde_json::to_value(result).unwrap_or(Value::Null);
    if let Some(obj) = v.as_object_mut() {
        obj.insert("resultType".into(), Value::from(result_type::COMPLETE));
    }
    v
}

fn confirm_key(confirmed: i64) -> String {
    format!("confirm-{}", confirmed + 1)
}

fn ask(
    args: &Map<String, Value>,
    confirmed: i64,
    rounds: i64,
    digest: &str,
    destination: Option<&str>,
    envelope: &RequestEnvelope,
) -> Value {
    let title = title(args);
    let message = if rounds > 1 {
        format!("Publish the demo notes as {title:?}? (confirmation {} of {rounds})", confirmed + 1)
    } else {
        format!("Publish the demo notes as {title:?}?")
    };
    let mut requests = Map::new();
    requests.insert(
        confirm_key(confirmed),
        json!({
            "method": methods::ELICITATION_CREATE,
            "params": {
                "mode": "form",
                "message": message,
                "requestedSchema": {
                    "type": "object",
                    "properties": {
                        "publish": {"type": "boolean", "title": "Publish", "description": "Publish them now.", "default": false}
                    },
                    "required": ["publish"]
                }
            }
        }),
    );
    // Where to publish, from the client's roots, asked with the first confirmation only.
    if confirmed == 0 && declares_roots(envelope) {
        requests.insert(ROOTS_KEY.into(), json!({"method": methods::ROOTS_LIST, "params": {}}));
    }
    if confirmed + 1 == rounds && wants_blurb(args, envelope) {
        let prompt = format!("Write one line announcing the demo notes published as {title:?}.");
        requests.insert(
            BLURB_KEY.into(),
            json!({"method": methods::SAMPLING_CREATE_MESSAGE, "params": {
                "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
                "maxTokens": 60,
            }}),
        );
    }
    json!({
        "resultType": result_type::INPUT_REQUIRED,
        "inputRequests": requests,
        "requestState": format!("{STATE_PREFIX}{confirmed}/{digest}/{}", destination.unwrap_or_default()),
    })
}

/// `blurb: true`, from a client that can be asked for a model's reply.
fn wants_blurb(args: &Map<String, Value>, envelope: &RequestEnvelope) -> bool {
    args.get("blurb").and_then(Value::as_bool) == Some(true) && envelope.declares_sampling()
}

fn declares_roots(envelope: &RequestEnvelope) -> bool {
    envelope.client_capabilities.as_ref().and_then(|c| c.get("roots")).is_some_and(Value::is_object)
}

/// How many confirmations the state says were given, and the destination an earlier round learnt;
/// refused unless it is this server's for these arguments.
fn read_state(state: &str, digest: &str) -> Result<(i64, Option<String>), ErrorObject> {
    let refused = || invalid_params("params.requestState: not a state this server gave for these arguments");
    let rest = state.strip_prefix(STATE_PREFIX).ok_or_else(refused)?;
    let mut parts = rest.splitn(3, '/');
    let (Some(confirmed), Some(made_for), Some(destination)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(refused());
    };
    if made_for != digest {
        return Err(refused());
    }
    let confirmed = confirmed.parse::<i64>().ok().filter(|n| (0..MAX_ROUNDS).contains(n)).ok_or_else(refused)?;
    Ok((confirmed, Some(destination.to_owned()).filter(|d| !d.is_empty())))
}

/// A digest of the arguments (FNV-1a over their JSON): enough to tell another call's state.
fn digest(args: &Map<String, Value>) -> String {
    let text = serde_json::to_string(args).unwrap_or_default();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}
