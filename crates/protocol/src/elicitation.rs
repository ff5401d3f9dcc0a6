//! `elicitation/create`: a server asking the user for input, as a form or by sending them to a URL.
//! The same shapes serve both eras: legacy sends it as a server-to-client request, modern embeds it
//! in a task's `inputRequests`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "lowercase")]
pub enum ElicitMode {
    Form {
        #[serde(rename = "requestedSchema")]
        requested_schema: Value,
    },
    Url {
        #[serde(rename = "elicitationId")]
        elicitation_id: String,
        url: String,
    },
}

/// `elicitation/create` params. `mode` may be omitted on the wire, meaning `form`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ElicitRequestParams {
    pub message: String,
    #[serde(flatten)]
    pub mode: ElicitMode,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl<'de> Deserialize<'de> for ElicitRequestParams {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut obj = Map::<String, Value>::deserialize(d)?;
        let message = match obj.remove("message") {
            Some(Value::String(s)) => s,
            _ => return Err(D::Error::custom("elicitation needs a string \"message\"")),
        };
        let mode = match obj.remove("mode") {
            None => "form".to_owned(),
            Some(Value::String(s)) => s,
            Some(_) => return Err(D::Error::custom("\"mode\" must be a string")),
        };
        let mode = match mode.as_str() {
            "form" => {
                let schema = obj
                    .remove("requestedSchema")
                    .ok_or_else(|| D::Error::custom("form elicitation needs \"requestedSchema\""))?;
                if !schema.is_object() {
                    return Err(D::Error::custom("\"requestedSchema\" must be an object"));
                }
                ElicitMode::Form { requested_schema: schema }
            }
            "url" => {
                let take = |obj: &mut Map<String, Value>, k: &str| match obj.remove(k) {
                    Some(Value::String(s)) => Ok(s),
                    _ => Err(D::Error::custom(format!("URL elicitation needs a string {k:?}"))),
                };
                let elicitation_id = take(&mut obj, "elicitationId")?;
                let url = take(&mut obj, "url")?;
                ElicitMode::Url { elicitation_id, url }
            }
            other => return Err(D::Error::custom(format!("unknown elicitation mode {other:?}"))),
        };
        Ok(Self { message, mode, extra: obj })
    }
}

impl ElicitRequestParams {
    pub fn form(message: impl Into<String>, requested_schema: Value) -> Self {
        Self { message: message.into(), mode: ElicitMode::Form { requested_schema }, extra: Map::new() }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    Accept,
    Decline,
    Cancel,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitResult {
    pub action: ElicitAction,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Map<String, Value>>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ElicitResult {
    pub fn accept(content: Map<String, Value>) -> Self {
        Self { action: ElicitAction::Accept, content: Some(content), extra: Map::new() }
    }
    pub fn decline() -> Self {
        Self { action: ElicitAction::Decline, content: None, extra: Map::new() }
    }
    pub fn cancel() -> Self {
        Self { action: ElicitAction::Cancel, content: None, extra: Map::new() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn mode_defaults_to_form_and_unknown_members_survive() {
        let p: ElicitRequestParams = serde_json::from_value(json!({
            "message": "Which service?", "requestedSchema": {"type": "object", "properties": {}},
            "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "t"}}
        }))
        .unwrap();
        assert!(matches!(p.mode, ElicitMode::Form { .. }));
        let back = serde_json::to_value(&p).unwrap();
        assert_eq!(back["mode"], "form");
        assert_eq!(back["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], "t");
    }

    #[test]
    fn url_mode_needs_its_fields() {
        let err =
            serde_json::from_value::<ElicitRequestParams>(json!({"mode": "url", "message": "m", "url": "https://x"}));
        assert!(err.unwrap_err().to_string().contains("elicitationId"));
    }
}
