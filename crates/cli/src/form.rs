//! A server's question as a terminal form: described for the "how to answer" hint, and asked field
//! by field when a person is at the keyboard.

use std::io::{BufRead, Write};

use serde_json::{Map, Value, json};
use taskdeck_engine::{AnswerInput, TaskRecord};
use taskdeck_protocol::elicitation::{ElicitMode, ElicitRequestParams};

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    Text {
        min_len: Option<u64>,
        max_len: Option<u64>,
    },
    Number {
        integer: bool,
        min: Option<f64>,
        max: Option<f64>,
    },
    Boolean,
    /// `(value, title)`; from `enum` (with optional `enumNames`) or `oneOf`/`anyOf` of `const`s.
    Choice(Vec<(String, Option<String>)>),
    /// An array of choices: several may be picked.
    Multi(Vec<(String, Option<String>)>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub kind: Kind,
    pub required: bool,
    pub default: Option<Value>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Form {
    pub server: String,
    pub message: String,
    pub fields: Vec<Field>,
    /// URL-mode questions are answered in a browser, not here.
    pub url: Option<String>,
}

impl Form {
    pub fn of(task: &TaskRecord) -> Option<Form> {
        let q = task.question.as_ref()?;
        let params = q.request.get("params")?;
        let parsed: ElicitRequestParams = serde_json::from_value(params.clone()).ok()?;
        let (fields, url) = match parsed.mode {
            ElicitMode::Form { requested_schema } => (fields_of(&requested_schema), None),
            ElicitMode::Url { url, .. } => (Vec::new(), Some(url)),
        };
        Some(Form { server: task.server.clone(), message: parsed.message, fields, url })
    }

    /// The question for a reader: the server's message, then one line per field.
    pub fn describe(&self) -> String {
        let mut out = format!("{} asks: {}\n", self.server, self.message);
        if let Some(url) = &self.url {
            out.push_str(&format!("  open {url} to answer\n"));
        }
        for f in &self.fields {
            out.push_str(&format!("  {}\n", f.describe()));
        }
        out
    }

    /// A `--json` value that would be accepted, to copy and edit.
    pub fn example(&self) -> String {
        let mut m = Map::new();
        for f in self.fields.iter().filter(|f| f.required) {
            let v = match &f.kind {
                Kind::Choice(c) => json!(c.first().map(|c| c.0.clone()).unwrap_or_default()),
                Kind::Multi(c) => json!(c.first().map(|c| vec![c.0.clone()]).unwrap_or_default()),
                Kind::Boolean => f.default.clone().unwrap_or(json!(true)),
                Kind::Number { min, .. } => f.default.clone().unwrap_or(json!(min.unwrap_or(0.0) as i64)),
                Kind::Text { .. } => f.default.clone().unwrap_or(json!("...")),
            };
            m.insert(f.name.clone(), v);
        }
        Value::Object(m).to_string()
    }
}

fn fields_of(schema: &Value) -> Vec<Field> {
    let required: Vec<&str> =
        schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let Some(props) = schema.get("properties").and_then(Value::as_object) else { return Vec::new() };
    props
        .iter()
        .map(|(name, p)| {
            let s = |k: &str| p.get(k).and_then(Value::as_str).map(str::to_owned);
            let n = |k: &str| p.get(k).and_then(Value::as_f64);
            let u = |k: &str| p.get(k).and_then(Value::as_u64);
            let kind = match p.get("type").and_then(Value::as_str) {
                Some("boolean") => Kind::Boolean,
                Some("number") => Kind::Number { integer: false, min: n("minimum"), max: n("maximum") },
                Some("integer") => Kind::Number { integer: true, min: n("minimum"), max: n("maximum") },
                Some("array") => Kind::Multi(p.get("items").map(choices).unwrap_or_default()),
                _ => match choices(p) {
                    c if !c.is_empty() => Kind::Choice(c),
                    _ => Kind::Text { min_len: u("minLength"), max_len: u("maxLength") },
                },
            };
            Field {
                name: name.clone(),
                title: s("title"),
                description: s("description"),
                kind,
                required: required.contains(&name.as_str()),
                default: p.get("default").cloned(),
            }
        })
        .collect()
}

fn choices(p: &Value) -> Vec<(String, Option<String>)> {
    if let Some(values) = p.get("enum").and_then(Value::as_array) {
        let names = p.get("enumNames").and_then(Value::as_array);
        return values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| {
                let title = names.and_then(|n| n.get(i)).and_then(Value::as_str).map(str::to_owned);
                Some((v.as_str()?.to_owned(), title))
            })
            .collect();
    }
    let listed = p.get("oneOf").or_else(|| p.get("anyOf")).and_then(Value::as_array);
    listed
        .into_iter()
        .flatten()
        .filter_map(|o| {
            let value = o.get("const")?.as_str()?.to_owned();
            Some((value, o.get("title").and_then(Value::as_str).map(str::to_owned)))
        })
        .collect()
}

impl Field {
    fn label(&self) -> String {
        match &self.title {
            Some(t) => format!("{t} ({})", self.name),
            None => self.name.clone(),
        }
    }

    fn type_text(&self) -> String {
        let list = |c: &[(String, Option<String>)]| {
            c.iter()
                .map(|(v, t)| match t {
                    Some(t) => format!("{v} ({t})"),
                    None => v.clone(),
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        match &self.kind {
            Kind::Text { .. } => "text".into(),
            Kind::Number { integer: true, .. } => "integer".into(),
            Kind::Number { .. } => "number".into(),
            Kind::Boolean => "yes/no".into(),
            Kind::Choice(c) => format!("one of: {}", list(c)),
            Kind::Multi(c) => format!("any of (comma-separated): {}", list(c)),
        }
    }

    pub fn describe(&self) -> String {
        let mut s = format!("{}: {}", self.name, self.type_text());
        s.push_str(if self.required { ", required" } else { ", optional" });
        if let Some(d) = &self.default {
            s.push_str(&format!(", default {d}"));
        }
        if let Some(d) = self.description.as_ref().or(self.title.as_ref()) {
            s.push_str(&format!(" — {d}"));
        }
        s
    }

    /// Reads one typed answer. `Ok(None)`: leave the field out.
    pub fn parse(&self, input: &str) -> Result<Option<Value>, String> {
        let input = input.trim();
        if input.is_empty() {
            return match (&self.default, self.required) {
                (Some(d), _) => Ok(Some(d.clone())),
                (None, true) => Err("required".into()),
                (None, false) => Ok(None),
            };
        }
        match &self.kind {
            Kind::Text { min_len, max_len } => {
                let len = input.chars().count() as u64;
                if min_len.is_some_and(|m| len < m) {
                    return Err(format!("at least {} characters", min_len.unwrap_or(0)));
                }
                if max_len.is_some_and(|m| len > m) {
                    return Err(format!("at most {} characters", max_len.unwrap_or(0)));
                }
                Ok(Some(json!(input)))
            }
            Kind::Number { integer, min, max } => {
                let x: f64 = input.parse().map_err(|_| format!("not a number: {input:?}"))?;
                if *integer && x.fract() != 0.0 {
                    return Err(format!("not an integer: {input:?}"));
                }
                if min.is_some_and(|m| x < m) || max.is_some_and(|m| x > m) {
                    let bound = |b: &Option<f64>| b.map(|b| b.to_string()).unwrap_or_else(|| "any".into());
                    return Err(format!("must be between {} and {}", bound(min), bound(max)));
                }
                Ok(Some(if *integer { json!(x as i64) } else { json!(x) }))
            }
            Kind::Boolean => match input.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" => Ok(Some(json!(true))),
                "n" | "no" | "false" => Ok(Some(json!(false))),
                _ => Err("answer yes or no".into()),
            },
            Kind::Choice(c) => pick(c, input).map(|v| Some(json!(v))),
            Kind::Multi(c) => {
                let picked = input.split(',').map(|p| pick(c, p.trim())).collect::<Result<Vec<_>, _>>()?;
                Ok(Some(json!(picked)))
            }
        }
    }
}

/// A choice by its value or by its number in the list shown.
fn pick(c: &[(String, Option<String>)], input: &str) -> Result<String, String> {
    if let Some((v, _)) = c.iter().find(|(v, _)| v == input) {
        return Ok(v.clone());
    }
    if let Ok(i) = input.parse::<usize>()
        && let Some((v, _)) = i.checked_sub(1).and_then(|i| c.get(i))
    {
        return Ok(v.clone());
    }
    Err(format!("not one of: {}", c.iter().map(|(v, _)| v.as_str()).collect::<Vec<_>>().join(", ")))
}

/// What the person at the terminal decided.
pub enum Prompted {
    Answer(AnswerInput),
    /// End of input: leave the question waiting.
    Leave,
}

/// Asks each field in turn on stderr (stdout is for results), re-asking until the input fits.
pub fn ask(form: &Form, input: &mut impl BufRead, out: &mut impl Write) -> std::io::Result<Prompted> {
    writeln!(out, "\n{} asks: {}", form.server, form.message)?;
    if let Some(url) = &form.url {
        writeln!(out, "  open {url}, then press Enter to accept")?;
    }
    writeln!(out, "  (type :decline to decline, :cancel to cancel the question, Ctrl-D to leave it waiting)")?;
    let mut content = Map::new();
    for f in &form.fields {
        writeln!(out, "\n  {}{}", f.label(), if f.required { " *" } else { "" })?;
        if let Some(d) = &f.description {
            writeln!(out, "    {d}")?;
        }
        match &f.kind {
            Kind::Choice(c) | Kind::Multi(c) => {
                for (i, (v, t)) in c.iter().enumerate() {
                    writeln!(out, "    {}) {v}{}", i + 1, t.as_ref().map(|t| format!("  {t}")).unwrap_or_default())?;
                }
            }
            _ => writeln!(out, "    {}", f.type_text())?,
        }
        loop {
            let default = f.default.as_ref().map(|d| format!(" [{d}]")).unwrap_or_default();
            write!(out, "  > {}{default}: ", f.name)?;
            out.flush()?;
            let mut line = String::new();
            if input.read_line(&mut line)? == 0 {
                writeln!(out)?;
                return Ok(Prompted::Leave);
            }
            match line.trim() {
                ":decline" => return Ok(Prompted::Answer(AnswerInput::Decline)),
                ":cancel" => return Ok(Prompted::Answer(AnswerInput::Cancel)),
                _ => {}
            }
            match f.parse(&line) {
                Ok(Some(v)) => {
                    content.insert(f.name.clone(), v);
                    break;
                }
                Ok(None) => break,
                Err(e) => writeln!(out, "    {e}")?,
            }
        }
    }
    Ok(Prompted::Answer(AnswerInput::Accept(content)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form() -> Form {
        let schema = json!({
            "type": "object",
            "properties": {
                "service": {"type": "string", "title": "Affected service",
                    "oneOf": [{"const": "checkout", "title": "Checkout API"}, {"const": "auth"}]},
                "notes": {"type": "string", "maxLength": 5},
                "page": {"type": "boolean", "default": false},
                "n": {"type": "integer", "minimum": 1}
            },
            "required": ["service", "n"]
        });
        Form { server: "demo".into(), message: "Which?".into(), fields: fields_of(&schema), url: None }
    }

    #[test]
    fn reads_each_field_type_and_re_asks_until_it_fits() {
        let mut input = std::io::Cursor::new("\nnope\n2\ntoo long\nok\n\n0\n1.5\n3\n");
        let mut out = Vec::new();
        let Prompted::Answer(AnswerInput::Accept(content)) = ask(&form(), &mut input, &mut out).unwrap() else {
            panic!("expected an answer")
        };
        assert_eq!(Value::Object(content), json!({"service": "auth", "notes": "ok", "page": false, "n": 3}));
        let shown = String::from_utf8(out).unwrap();
        assert!(shown.contains("demo asks: Which?"), "{shown}");
        assert!(shown.contains("1) checkout  Checkout API"), "{shown}");
        assert!(shown.contains("not one of: checkout, auth"), "{shown}");
        assert!(shown.contains("at most 5 characters"), "{shown}");
        assert!(shown.contains("must be between 1 and any"), "{shown}");
    }

    #[test]
    fn end_of_input_leaves_the_question_and_commands_decline_or_cancel() {
        let mut out = Vec::new();
        assert!(matches!(ask(&form(), &mut std::io::Cursor::new(""), &mut out).unwrap(), Prompted::Leave));
        let decline = ask(&form(), &mut std::io::Cursor::new(":decline\n"), &mut out).unwrap();
        assert!(matches!(decline, Prompted::Answer(AnswerInput::Decline)));
    }

    #[test]
    fn the_example_names_every_required_field() {
        let example: Value = serde_json::from_str(&form().example()).unwrap();
        assert_eq!(example, json!({"service": "checkout", "n": 1}));
        assert!(form().describe().contains("service: one of: checkout (Checkout API), auth, required"));
    }
}
