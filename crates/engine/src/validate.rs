//! Refuses arguments and answers that break their schema before anything is sent, naming the
//! offending field.

use serde_json::Value;

/// Validates `value` against `schema`; `Err((path, message))` for the first violation. A schema
/// that cannot be compiled (a server's mistake, or a remote `$ref`) is not the user's fault and
/// validates nothing: the server will judge.
pub fn check(schema: &Value, value: &Value) -> Result<(), (String, String)> {
    let Ok(validator) = jsonschema::validator_for(schema) else {
        tracing::debug!("schema does not compile; not validated locally");
        return Ok(());
    };
    match validator.iter_errors(value).next() {
        None => Ok(()),
        Some(e) => {
            let path = e.instance_path().to_string();
            Err((if path.is_empty() { "(root)".to_owned() } else { path }, e.to_string()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_the_offending_field() {
        let schema =
            json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}, "required": ["n"]});
        assert_eq!(check(&schema, &json!({"n": 3})), Ok(()));
        let (path, msg) = check(&schema, &json!({"n": 0})).unwrap_err();
        assert_eq!(path, "/n");
        assert!(msg.contains("minimum") || msg.contains("less than"), "{msg}");
        let (path, _) = check(&schema, &json!({})).unwrap_err();
        assert_eq!(path, "(root)");
    }
}
