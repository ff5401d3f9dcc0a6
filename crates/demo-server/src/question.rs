//! What a task asks its client, as the store keeps it. `diagnose_incident` has always stored its
//! elicitation's params alone; a request of another kind is stored as `{method, params}`, and
//! several asked at once (a modern task's `inputRequests`) as `{"inputRequests": {key: {method,
//! params}}}`, whose answer is then the map of the responses given so far.

use serde_json::{Map, Value, json};
use taskdeck_protocol::methods;

use crate::store::TaskRow;

/// One request a task waits on.
#[derive(Debug, Clone, PartialEq)]
pub struct Asked {
    pub key: String,
    pub method: String,
    pub params: Value,
}

/// One request of `method`, as stored.
pub fn one(method: &str, params: Value) -> Value {
    json!({ "method": method, "params": params })
}

/// Several requests at once, as stored: `(key, method, params)`.
pub fn several(requests: Vec<(String, &str, Value)>) -> Value {
    let map: Map<String, Value> = requests.into_iter().map(|(k, m, p)| (k, one(m, p))).collect();
    json!({ "inputRequests": map })
}

/// Whether the stored question asks several things at once.
pub fn is_several(question: &Value) -> bool {
    question.get("inputRequests").is_some_and(Value::is_object)
}

/// Every request the stored question makes, with its key.
pub fn requests(key: &str, question: &Value) -> Vec<Asked> {
    let request = |key: &str, v: &Value| match (v.get("method").and_then(Value::as_str), v.get("params")) {
        (Some(method), Some(params)) => {
            Asked { key: key.to_owned(), method: method.to_owned(), params: params.clone() }
        }
        // The shape before other kinds: an elicitation's params.
        _ => Asked { key: key.to_owned(), method: methods::ELICITATION_CREATE.into(), params: v.clone() },
    };
    match question.get("inputRequests").and_then(Value::as_object) {
        Some(map) => map.iter().map(|(k, v)| request(k, v)).collect(),
        None => vec![request(key, question)],
    }
}

/// The requests of the task's question that have no answer yet.
pub fn pending(row: &TaskRow) -> Vec<Asked> {
    let (Some(key), Some(question)) = (&row.question_key, &row.question) else { return Vec::new() };
    let all = requests(key, question);
    if is_several(question) {
        let answered = row.answer.as_ref().and_then(Value::as_object);
        all.into_iter().filter(|a| answered.is_none_or(|m| !m.contains_key(&a.key))).collect()
    } else if row.answer.is_some() {
        Vec::new()
    } else {
        all
    }
}

/// Whether `response` is a result `method` can be answered with: an elicitation's result; for a
/// sampling request a `CreateMessageResult`, or the decline of an elicitation result (the one
/// refusal an input response can carry).
pub fn fits(method: &str, response: &Value) -> bool {
    use taskdeck_protocol::elicitation::ElicitResult;
    use taskdeck_protocol::sampling::CreateMessageResult;
    let elicit = serde_json::from_value::<ElicitResult>(response.clone()).is_ok();
    match method {
        methods::SAMPLING_CREATE_MESSAGE => {
            elicit || serde_json::from_value::<CreateMessageResult>(response.clone()).is_ok()
        }
        _ => elicit,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_elicitation_stored_alone_one_request_and_several_read_back_with_their_keys() {
        let alone = requests("service-1", &json!({"message": "m", "requestedSchema": {}}));
        assert_eq!(alone[0].method, "elicitation/create");
        let wrapped = requests("summary-1", &one("sampling/createMessage", json!({"maxTokens": 5})));
        assert_eq!((wrapped[0].key.as_str(), wrapped[0].method.as_str()), ("summary-1", "sampling/createMessage"));
        let both = several(vec![
            ("a".into(), "elicitation/create", json!({})),
            ("b".into(), "sampling/createMessage", json!({})),
        ]);
        let keys: Vec<String> = requests("plan-1", &both).into_iter().map(|a| a.key).collect();
        assert_eq!(keys, ["a", "b"]);
    }

    #[test]
    fn a_sampling_request_takes_a_message_or_a_decline_and_nothing_else() {
        let reply = json!({"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"});
        assert!(fits("sampling/createMessage", &reply));
        assert!(fits("sampling/createMessage", &json!({"action": "decline"})));
        assert!(!fits("sampling/createMessage", &json!({"text": "x"})));
        assert!(!fits("elicitation/create", &reply));
    }
}
