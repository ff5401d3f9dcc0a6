//! An elicitation's `requestedSchema` read as a form: the one interpretation of that schema. The CLI
//! prompts from it and the desktop UI renders and validates from it (through the TypeScript twin
//! of these types), so what one offers the other offers too.
//!
//! The schema is a flat object whose properties are strings (with a format and length bounds),
//! numbers or integers (with bounds), booleans, single choices (`enum`, with the deprecated
//! `enumNames` as labels, or `oneOf`/`anyOf` of `{const, title}`) and multiple choices (an array of
//! such an enum). Anything else cannot be asked honestly as a form and is [`FormModel::Unsupported`]
//! with the path and the reason, so a caller falls back to showing the raw request instead of
//! guessing.

use serde::Serialize;
use serde_json::{Map, Value};

/// What a form can be made of an elicitation's schema.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum FormModel {
    /// Every property is one a form can ask for, in the schema's order.
    Ready { fields: Vec<Field> },
    /// `reason` names the property (`service: type object`) or the schema as a whole.
    Unsupported { reason: String },
}

/// One property of the schema, as one input.
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "FormField"))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Field {
    /// The property's name: the key of its value in the answer.
    pub name: String,
    /// The schema's `title`, when it gave one that is not blank.
    pub title: Option<String>,
    pub description: Option<String>,
    pub required: bool,
    /// The schema's `default`, as given (it is the server's, so it is not trusted to fit).
    pub default: Option<Value>,
    pub kind: FieldKind,
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "FormFieldKind"))]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FieldKind {
    Text {
        format: Option<TextFormat>,
        #[cfg_attr(feature = "ts", ts(type = "number | null"))]
        min_length: Option<u64>,
        #[cfg_attr(feature = "ts", ts(type = "number | null"))]
        max_length: Option<u64>,
        /// Not part of the elicitation schema, but servers send it; checked where a regex engine is
        /// at hand (the UI), and by the engine's schema check in any case.
        pattern: Option<String>,
    },
    Number {
        /// `integer`: whole numbers only.
        integer: bool,
        minimum: Option<f64>,
        maximum: Option<f64>,
        exclusive_minimum: Option<f64>,
        exclusive_maximum: Option<f64>,
    },
    Boolean,
    /// Exactly one of the options.
    Choice {
        options: Vec<Choice>,
    },
    /// Any number of the options, within the bounds.
    Multi {
        options: Vec<Choice>,
        #[cfg_attr(feature = "ts", ts(type = "number | null"))]
        min_items: Option<u64>,
        #[cfg_attr(feature = "ts", ts(type = "number | null"))]
        max_items: Option<u64>,
    },
}

/// The string formats the elicitation schema names. Another format is read as plain text.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum TextFormat {
    #[serde(rename = "email")]
    Email,
    #[serde(rename = "uri")]
    Uri,
    #[serde(rename = "date")]
    Date,
    #[serde(rename = "date-time")]
    DateTime,
}

/// One option of a choice: the value sent back, and the label the server gave it, if any.
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "FormChoice"))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Choice {
    pub value: Value,
    pub label: Option<String>,
}

impl Choice {
    /// The value as a person types it: a string as itself, anything else as its JSON.
    pub fn value_text(&self) -> String {
        match &self.value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }
}

impl Field {
    /// What to call the field: its title, else its name.
    pub fn label(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.name)
    }
}

impl FormModel {
    /// Reads `requestedSchema`. An empty schema (`{}`) asks for nothing and is a form without fields.
    pub fn from_schema(schema: &Value) -> FormModel {
        match fields(schema) {
            Ok(fields) => FormModel::Ready { fields },
            Err(reason) => FormModel::Unsupported { reason },
        }
    }

    /// The fields, when the schema could be read as a form.
    pub fn fields(&self) -> Option<&[Field]> {
        match self {
            FormModel::Ready { fields } => Some(fields),
            FormModel::Unsupported { .. } => None,
        }
    }
}

const COMBINATORS: [&str; 7] = ["$ref", "oneOf", "anyOf", "allOf", "not", "if", "patternProperties"];

fn fields(schema: &Value) -> Result<Vec<Field>, String> {
    let Some(schema) = schema.as_object() else { return Err("the schema is not an object".into()) };
    if schema.is_empty() {
        return Ok(Vec::new());
    }
    match schema.get("type") {
        None => {}
        Some(Value::String(t)) if t == "object" => {}
        Some(_) => return Err("the schema is not an object".into()),
    }
    if let Some(k) = COMBINATORS.iter().find(|k| schema.contains_key(**k)) {
        return Err(format!("the schema uses {k}"));
    }
    let required: Vec<&str> =
        schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let props = match schema.get("properties") {
        None => return Ok(Vec::new()),
        Some(Value::Object(p)) => p,
        Some(_) => return Err("\"properties\" is not an object".into()),
    };
    props
        .iter()
        .map(|(name, p)| {
            let p = p.as_object().ok_or_else(|| format!("{name}: not a schema"))?;
            let kind = kind(p).map_err(|e| format!("{name}: {e}"))?;
            Ok(Field {
                name: name.clone(),
                title: text(p, "title"),
                description: text(p, "description"),
                required: required.contains(&name.as_str()),
                default: p.get("default").cloned(),
                kind,
            })
        })
        .collect()
}

/// A string member that says something (blank titles are as good as none).
fn text(p: &Map<String, Value>, k: &str) -> Option<String> {
    p.get(k).and_then(Value::as_str).filter(|s| !s.trim().is_empty()).map(str::to_owned)
}

fn number(p: &Map<String, Value>, k: &str) -> Option<f64> {
    p.get(k).and_then(Value::as_f64).filter(|x| x.is_finite())
}

fn count(p: &Map<String, Value>, k: &str) -> Option<u64> {
    p.get(k).and_then(Value::as_u64)
}

/// The one type a property has, accepting the common `["string", "null"]` spelling.
fn type_of(p: &Map<String, Value>) -> Result<Option<&str>, String> {
    match p.get("type") {
        None => Ok(None),
        Some(Value::String(t)) => Ok(Some(t)),
        Some(Value::Array(ts)) => {
            let real: Vec<&Value> = ts.iter().filter(|t| t.as_str() != Some("null")).collect();
            match real.as_slice() {
                [Value::String(t)] => Ok(Some(t)),
                _ => Err("more than one type".into()),
            }
        }
        Some(_) => Err("a type that is not a name".into()),
    }
}

fn kind(p: &Map<String, Value>) -> Result<FieldKind, String> {
    if let Some(k) = ["$ref", "allOf"].iter().find(|k| p.contains_key(**k)) {
        return Err(format!("uses {k}"));
    }
    let ty = type_of(p)?;
    if ty != Some("array")
        && let Some(options) = options(p)?
    {
        return Ok(FieldKind::Choice { options });
    }
    if ty != Some("array") && (p.contains_key("oneOf") || p.contains_key("anyOf")) {
        return Err("a choice between schemas".into());
    }
    match ty {
        Some("string") => Ok(FieldKind::Text {
            format: match p.get("format").and_then(Value::as_str) {
                Some("email") => Some(TextFormat::Email),
                Some("uri") => Some(TextFormat::Uri),
                Some("date") => Some(TextFormat::Date),
                Some("date-time") => Some(TextFormat::DateTime),
                _ => None,
            },
            min_length: count(p, "minLength"),
            max_length: count(p, "maxLength"),
            pattern: text(p, "pattern"),
        }),
        Some(t @ ("number" | "integer")) => Ok(FieldKind::Number {
            integer: t == "integer",
            minimum: number(p, "minimum"),
            maximum: number(p, "maximum"),
            exclusive_minimum: number(p, "exclusiveMinimum"),
            exclusive_maximum: number(p, "exclusiveMaximum"),
        }),
        Some("boolean") => Ok(FieldKind::Boolean),
        Some("array") => {
            let items = p.get("items").and_then(Value::as_object).ok_or("an array without one item schema")?;
            match options(items)? {
                Some(options) => {
                    Ok(FieldKind::Multi { options, min_items: count(p, "minItems"), max_items: count(p, "maxItems") })
                }
                None => Err("an array that is not a list of choices".into()),
            }
        }
        Some(other) => Err(format!("type {other}")),
        None => Err("no type".into()),
    }
}

/// The options of an enum: `enum` (labelled by `enumNames` when it has one name per value), or a
/// `oneOf`/`anyOf` list of `{const, title}`. `None` when the schema is not an enum.
fn options(p: &Map<String, Value>) -> Result<Option<Vec<Choice>>, String> {
    if let Some(values) = p.get("enum") {
        let values = values.as_array().filter(|v| !v.is_empty()).ok_or("an enum that is not a list of values")?;
        let names = p.get("enumNames").and_then(Value::as_array).filter(|n| n.len() == values.len());
        let options = values
            .iter()
            .enumerate()
            .map(|(i, v)| Choice {
                value: v.clone(),
                label: names.and_then(|n| n[i].as_str()).filter(|s| !s.trim().is_empty()).map(str::to_owned),
            })
            .collect();
        return Ok(Some(options));
    }
    let Some(listed) = p.get("oneOf").or_else(|| p.get("anyOf")).and_then(Value::as_array) else { return Ok(None) };
    if listed.is_empty() {
        return Ok(None);
    }
    let mut options = Vec::with_capacity(listed.len());
    for item in listed {
        let Some(item) = item.as_object() else { return Ok(None) };
        let Some(value) = item.get("const") else { return Ok(None) };
        options.push(Choice { value: value.clone(), label: text(item, "title") });
    }
    Ok(Some(options))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ready(schema: Value) -> Vec<Field> {
        match FormModel::from_schema(&schema) {
            FormModel::Ready { fields } => fields,
            FormModel::Unsupported { reason } => panic!("expected a form, got: {reason}"),
        }
    }

    fn field(schema: Value, name: &str) -> Field {
        ready(schema).into_iter().find(|f| f.name == name).expect("the field is there")
    }

    fn reason(schema: Value) -> String {
        match FormModel::from_schema(&schema) {
            FormModel::Unsupported { reason } => reason,
            FormModel::Ready { fields } => panic!("expected no form, got {fields:?}"),
        }
    }

    // The everything server's trigger-elicitation-request: every field kind the schema allows.
    fn everything() -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"title": "String", "type": "string", "description": "Your full, legal name"},
                "check": {"title": "Boolean", "type": "boolean", "description": "Agree to the terms"},
                "firstLine": {"title": "String with default", "type": "string", "default": "It was a dark night."},
                "email": {"type": "string", "format": "email"},
                "homepage": {"type": "string", "format": "uri"},
                "birthdate": {"type": "string", "format": "date"},
                "when": {"type": "string", "format": "date-time"},
                "code": {"type": "string", "format": "hostname", "minLength": 2, "maxLength": 8},
                "integer": {"title": "Integer", "type": "integer", "minimum": 1, "maximum": 100, "default": 42},
                "number": {"type": "number", "minimum": 0, "maximum": 1000, "default": 2.5},
                "untitled": {"type": "string", "enum": ["Monica", "Rachel"], "default": "Monica"},
                "instruments": {"type": "array", "minItems": 1, "maxItems": 3,
                    "items": {"type": "string", "enum": ["Guitar", "Piano"]}, "default": ["Guitar"]},
                "hero": {"type": "string", "oneOf": [{"const": "hero-1", "title": "Superman"}, {"const": "hero-2"}]},
                "fish": {"type": "array", "items": {"anyOf": [{"const": "fish-1", "title": "Tuna"}]}},
                "pet": {"type": "string", "enum": ["pet-1", "pet-2"], "enumNames": ["Cats", "Dogs"]}
            },
            "required": ["name", "hero"]
        })
    }

    #[test]
    fn every_field_kind_of_the_elicitation_schema_is_read_in_order() {
        let fields = ready(everything());
        let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names[..3], ["name", "check", "firstLine"]);
        let kind = |n: &str| fields.iter().find(|f| f.name == n).map(|f| f.kind.clone()).unwrap();
        assert!(matches!(kind("check"), FieldKind::Boolean));
        let text = |format, min_length, max_length| FieldKind::Text { format, min_length, max_length, pattern: None };
        assert_eq!(kind("name"), text(None, None, None));
        assert_eq!(kind("email"), text(Some(TextFormat::Email), None, None));
        assert_eq!(kind("homepage"), text(Some(TextFormat::Uri), None, None));
        assert_eq!(kind("birthdate"), text(Some(TextFormat::Date), None, None));
        assert_eq!(kind("when"), text(Some(TextFormat::DateTime), None, None));
        // A format the schema does not name is plain text, its bounds kept.
        assert_eq!(kind("code"), text(None, Some(2), Some(8)));
        assert_eq!(
            kind("integer"),
            FieldKind::Number {
                integer: true,
                minimum: Some(1.0),
                maximum: Some(100.0),
                exclusive_minimum: None,
                exclusive_maximum: None
            }
        );
        assert!(matches!(kind("number"), FieldKind::Number { integer: false, maximum: Some(1000.0), .. }));
        assert!(matches!(kind("instruments"), FieldKind::Multi { min_items: Some(1), max_items: Some(3), .. }));
    }

    #[test]
    fn options_carry_their_labels_from_enum_names_one_of_and_any_of() {
        let options = |n: &str| match field(everything(), n).kind {
            FieldKind::Choice { options } | FieldKind::Multi { options, .. } => {
                options.into_iter().map(|o| (o.value_text(), o.label)).collect::<Vec<_>>()
            }
            other => panic!("{n} is not a choice: {other:?}"),
        };
        let s = |s: &str| Some(s.to_owned());
        assert_eq!(options("untitled"), [("Monica".into(), None), ("Rachel".into(), None)]);
        assert_eq!(options("hero"), [("hero-1".into(), s("Superman")), ("hero-2".into(), None)]);
        assert_eq!(options("fish"), [("fish-1".into(), s("Tuna"))]);
        assert_eq!(options("pet"), [("pet-1".into(), s("Cats")), ("pet-2".into(), s("Dogs"))]);
        assert_eq!(options("instruments"), [("Guitar".into(), None), ("Piano".into(), None)]);
    }

    #[test]
    fn enum_names_that_do_not_match_the_values_are_not_used_as_labels() {
        let f = field(json!({"properties": {"p": {"type": "string", "enum": ["a", "b"], "enumNames": ["A"]}}}), "p");
        assert_eq!(
            f.kind,
            FieldKind::Choice {
                options: vec![Choice { value: json!("a"), label: None }, Choice { value: json!("b"), label: None }]
            }
        );
    }

    #[test]
    fn titles_descriptions_defaults_and_required_are_kept() {
        let name = field(everything(), "name");
        assert_eq!((name.title.as_deref(), name.required), (Some("String"), true));
        assert_eq!(name.description.as_deref(), Some("Your full, legal name"));
        assert_eq!(name.default, None);
        let first = field(everything(), "firstLine");
        assert_eq!((first.default, first.required), (Some(json!("It was a dark night.")), false));
        assert_eq!(field(everything(), "integer").default, Some(json!(42)));
        assert_eq!(field(everything(), "instruments").default, Some(json!(["Guitar"])));
        // Without a title a field is called by its name; a blank title is no title.
        let blank = field(json!({"properties": {"p": {"type": "string", "title": "  "}}}), "p");
        assert_eq!((blank.title.as_deref(), blank.label()), (None, "p"));
    }

    #[test]
    fn a_nullable_type_is_read_as_its_one_real_type() {
        let f = field(json!({"properties": {"p": {"type": ["string", "null"]}}}), "p");
        assert!(matches!(f.kind, FieldKind::Text { .. }));
    }

    #[test]
    fn an_empty_schema_asks_for_nothing() {
        assert_eq!(ready(json!({})), []);
        assert_eq!(ready(json!({"type": "object"})), []);
    }

    #[test]
    fn what_a_form_cannot_ask_honestly_is_unsupported_with_the_path() {
        assert_eq!(reason(json!("text")), "the schema is not an object");
        assert_eq!(reason(json!({"type": "array"})), "the schema is not an object");
        assert_eq!(reason(json!({"$ref": "#/x"})), "the schema uses $ref");
        assert_eq!(reason(json!({"properties": {"a": {"type": "object"}}})), "a: type object");
        assert_eq!(reason(json!({"properties": {"a": 3}})), "a: not a schema");
        assert_eq!(reason(json!({"properties": {"a": {}}})), "a: no type");
        assert_eq!(reason(json!({"properties": {"a": {"type": ["string", "number"]}}})), "a: more than one type");
        assert_eq!(
            reason(json!({"properties": {"a": {"type": "array", "items": {"type": "string"}}}})),
            "a: an array that is not a list of choices"
        );
        assert_eq!(reason(json!({"properties": {"a": {"type": "array"}}})), "a: an array without one item schema");
        assert_eq!(
            reason(json!({"properties": {"a": {"oneOf": [{"type": "string"}, {"type": "number"}]}}})),
            "a: a choice between schemas"
        );
        assert_eq!(
            reason(json!({"properties": {"a": {"type": "string", "enum": []}}})),
            "a: an enum that is not a list of values"
        );
    }

    #[test]
    fn the_model_serialises_with_its_kinds_tagged_for_the_ui() {
        let v = serde_json::to_value(FormModel::from_schema(&everything())).unwrap();
        assert_eq!(v["status"], "ready");
        assert_eq!(v["fields"][0]["kind"]["type"], "text");
        assert_eq!(v["fields"][6]["kind"]["format"], "date-time");
        assert_eq!(v["fields"][12]["kind"]["options"][0], json!({"value": "hero-1", "label": "Superman"}));
    }
}
