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

/// A server's `pattern` runs on the `regex` crate, whose matching is linear in the input: a
/// backtracking engine (jsonschema's default) could be stalled by a pattern written to do so. A
/// pattern only a backtracking engine can run (look-around, back-references) makes the schema one
/// that cannot be compiled, which validates nothing: the server judges.
fn compile(schema: &Value) -> Option<Validator> {
    jsonschema::options()
        .with_pattern_options(jsonschema::PatternOptions::regex().size_limit(PATTERN_SIZE_LIMIT))
        .build(schema)
        .ok()
}

/// The most memory one compiled `pattern` may take.
const PATTERN_SIZE_LIMIT: usize = 1 << 20;

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
                let v = compile(schema).map(Arc::new);
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

/// Writes every integral number where `schema` says `integer` as an integer (`60000.0` as `60000`),
/// as the SDKs read such a value: JSON Schema counts it an integer, and a server that decodes it
/// into an integer type would refuse the float. Follows the schema's `properties`,
/// `additionalProperties`, `items`, `prefixItems` and `allOf`/`anyOf`/`oneOf`; a number with a
/// fraction, or outside what an integer holds, is left for the server to judge.
pub fn integers_as_integers(schema: &Value, value: &mut Value) {
    let Some(schema) = schema.as_object() else { return };
    for key in ["allOf", "anyOf", "oneOf"] {
        for sub in schema.get(key).and_then(Value::as_array).into_iter().flatten() {
            integers_as_integers(sub, value);
        }
    }
    match value {
        Value::Number(n) if says_integer(schema.get("type")) => {
            if let Some(f) = n.as_f64().filter(|f| n.is_f64() && f.fract() == 0.0)
                && f >= i64::MIN as f64
                && f < i64::MAX as f64
            {
                *value = Value::from(f as i64);
            }
        }
        Value::Object(fields) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties");
            for (name, field) in fields.iter_mut() {
                if let Some(sub) = properties.and_then(|p| p.get(name)).or(additional) {
                    integers_as_integers(sub, field);
                }
            }
        }
        Value::Array(items) => {
            let prefix = schema.get("prefixItems").and_then(Value::as_array);
            let rest = schema.get("items");
            for (i, item) in items.iter_mut().enumerate() {
                let sub = prefix.and_then(|p| p.get(i)).or(rest);
                match sub {
                    // Before 2020-12, an array of `items` is the tuple form.
                    Some(Value::Array(tuple)) => {
                        if let Some(sub) = tuple.get(i) {
                            integers_as_integers(sub, item);
                        }
                    }
                    Some(sub) => integers_as_integers(sub, item),
                    None => {}
                }
            }
        }
        _ => {}
    }
}

fn says_integer(ty: Option<&Value>) -> bool {
    match ty {
        Some(Value::String(t)) => t == "integer",
        Some(Value::Array(types)) => types.iter().any(|t| t == "integer"),
        _ => false,
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
    fn a_pattern_is_matched_in_linear_time_and_one_needing_backtracking_is_left_to_the_server() {
        // Nested alternation over a long near-match: exponential for a backtracking engine.
        let schema = json!({"type": "string", "pattern": "^(a|aa)+$"});
        let started = std::time::Instant::now();
        let input = format!("{}b", "a".repeat(50_000));
        assert!(check(&schema, &json!(input)).is_err(), "no match");
        assert!(started.elapsed() < std::time::Duration::from_secs(2), "{:?}", started.elapsed());
        assert_eq!(check(&schema, &json!("aaa")), Ok(()));
        let backref = json!({"type": "string", "pattern": "^(a+)\\1$", "maxLength": 3});
        assert_eq!(check(&backref, &json!("anything")), Ok(()), "a schema that cannot be compiled validates nothing");
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
    fn integral_floats_go_out_as_integers_where_the_schema_says_integer() {
        let schema = json!({"type": "object", "properties": {
            "timeout_ms": {"type": "integer"},
            "ratio": {"type": "number"},
            "sizes": {"type": "array", "items": {"type": ["integer", "null"]}},
            "nested": {"type": "object", "additionalProperties": {"type": "integer"}},
        }});
        let mut value = json!({
            "timeout_ms": 60000.0, "ratio": 2.0, "sizes": [1.0, 2.5, null], "nested": {"a": 3.0},
            "unknown": 4.0,
        });
        assert_eq!(check(&schema, &json!({"timeout_ms": 60000.0})), Ok(()), "JSON Schema counts 60000.0 an integer");
        integers_as_integers(&schema, &mut value);
        assert_eq!(
            value.to_string(),
            json!({"timeout_ms": 60000, "ratio": 2.0, "sizes": [1, 2.5, null], "nested": {"a": 3}, "unknown": 4.0})
                .to_string()
        );
        let mut huge = json!(1e300);
        integers_as_integers(&json!({"type": "integer"}), &mut huge);
        assert_eq!(huge, json!(1e300), "left for the server to judge");
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
