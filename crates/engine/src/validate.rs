//! Refuses arguments and answers that break their schema before anything is sent, naming the
//! offending field.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use jsonschema::Validator;
use serde_json::Value;

/// Compiling a schema costs far more than checking a value against it, and a tool's schema is the
/// same for every run: compiled validators are kept, keyed by the schema's text.
#[derive(Default)]
pub struct Schemas {
    compiled: Mutex<HashMap<String, Option<Arc<Validator>>>>,
}

/// Enough for every tool of a large config; past it the cache starts again rather than grow.
const MAX_SCHEMAS: usize = 512;

impl Schemas {
    /// Validates `value` against `schema`; `Err((path, message))` for the first violation. A schema
    /// that cannot be compiled (a server's mistake, or a remote `$ref`) is not the user's fault and
    /// validates nothing: the server will judge.
    pub fn check(&self, schema: &Value, value: &Value) -> Result<(), (String, String)> {
        let key = schema.to_string();
        let cached = self.compiled.lock().unwrap_or_else(|p| p.into_inner()).get(&key).cloned();
        let validator = match cached {
            Some(v) => v,
            None => {
                let v = jsonschema::validator_for(schema).ok().map(Arc::new);
                let mut compiled = self.compiled.lock().unwrap_or_else(|p| p.into_inner());
                if compiled.len() >= MAX_SCHEMAS {
                    compiled.clear();
                }
                compiled.insert(key, v.clone());
                v
            }
        };
        match validator {
            Some(v) => first_error(&v, value),
            None => {
                tracing::debug!("schema does not compile; not validated locally");
                Ok(())
            }
        }
    }
}

fn first_error(validator: &Validator, value: &Value) -> Result<(), (String, String)> {
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

    fn check(schema: &Value, value: &Value) -> Result<(), (String, String)> {
        Schemas::default().check(schema, value)
    }

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

    #[test]
    fn a_cached_schema_judges_like_a_fresh_one() {
        let schemas = Schemas::default();
        let schema = json!({"type": "object", "properties": {"s": {"type": "string"}}});
        for _ in 0..2 {
            assert_eq!(schemas.check(&schema, &json!({"s": "x"})), Ok(()));
            assert_eq!(schemas.check(&schema, &json!({"s": 1})).unwrap_err().0, "/s");
        }
        // A schema that does not compile is remembered as such and still validates nothing.
        let broken = json!({"type": 12});
        for _ in 0..2 {
            assert_eq!(schemas.check(&broken, &json!({"anything": true})), Ok(()));
        }
    }
}
