//! A server's question as a terminal form: described for the "how to answer" hint, and asked field
//! by field when a person is at the keyboard. The fields are the client's reading of the schema
//! ([`taskdeck_protocol::form`]), the same the desktop UI renders.

use std::io::{BufRead, Write};

use serde_json::{Map, Value, json};
use taskdeck_engine::{AnswerInput, TaskRecord};
use taskdeck_protocol::form::{Choice, Field, FieldKind, FormModel};
use taskdeck_protocol::question::Asks;
use taskdeck_protocol::url_check::UrlCheck;

#[derive(Debug, Clone, PartialEq)]
pub struct Form {
    pub server: String,
    pub message: String,
    pub fields: Vec<Field>,
    /// URL-mode questions are answered in a browser, not here: the address as sent, and where it
    /// would take the user.
    pub url: Option<(String, UrlCheck)>,
}

impl Form {
    /// The form for the task's question: `None` when it is not one a terminal can ask (not an
    /// elicitation, malformed, or a schema a form cannot express).
    pub fn of(task: &TaskRecord) -> Option<Form> {
        let q = task.question.as_ref()?;
        let (fields, url) = match &q.asks {
            Asks::Form { form: FormModel::Ready { fields }, .. } => (fields.clone(), None),
            Asks::Url { url, .. } => {
                let check = q.url_check.as_deref().cloned().unwrap_or_else(|| UrlCheck::of(url));
                (Vec::new(), Some((url.clone(), check)))
            }
            _ => return None,
        };
        Some(Form { server: task.server.clone(), message: q.message.clone().unwrap_or_default(), fields, url })
    }

    /// The question for a reader: the server's message, then one line per field.
    pub fn describe(&self) -> String {
        let mut out = format!("{} asks: {}\n", self.server, self.message);
        if let Some((url, check)) = &self.url {
            for line in url_lines(url, check) {
                out.push_str(&format!("  {line}\n"));
            }
        }
        for f in &self.fields {
            out.push_str(&format!("  {}\n", describe(f)));
        }
        out
    }

    /// A `--json` value that would be accepted, to copy and edit; `None` when the only answer to
    /// give is to decline (an address Taskdeck will not open).
    pub fn example(&self) -> Option<Value> {
        if self.url.as_ref().is_some_and(|(_, check)| !check.can_open()) {
            return None;
        }
        let mut m = Map::new();
        for f in self.fields.iter().filter(|f| f.required) {
            let v = match &f.kind {
                FieldKind::Choice { options } => options.first().map(|c| c.value.clone()).unwrap_or(json!("")),
                FieldKind::Multi { options, .. } => {
                    json!(options.first().map(|c| vec![c.value.clone()]).unwrap_or_default())
                }
                FieldKind::Boolean => f.default.clone().unwrap_or(json!(true)),
                FieldKind::Number { minimum, .. } => f.default.clone().unwrap_or(json!(minimum.unwrap_or(0.0) as i64)),
                FieldKind::Text { .. } => f.default.clone().unwrap_or(json!("...")),
            };
            m.insert(f.name.clone(), v);
        }
        Some(Value::Object(m))
    }
}

/// A URL question for a reader: the whole address a browser would be given, the domain it belongs
/// to, and every warning, or why Taskdeck will not open it (the address then shown as sent, cleaned
/// by the terminal like all server text).
pub fn url_lines(url: &str, check: &UrlCheck) -> Vec<String> {
    let mut lines = Vec::new();
    match &check.href {
        Some(href) => {
            lines.push(format!("open this address to answer: {href}"));
            if let Some(host) = &check.host {
                let domain = check.registrable_domain.as_deref().unwrap_or(host);
                // Its own line, first after the address: the part of the name a person must read.
                lines.push(if domain == host {
                    format!("site: {domain}")
                } else {
                    format!("site: {domain} (host {host})")
                });
            }
        }
        None => lines.push(format!("Taskdeck will not open this address: {url}")),
    }
    for w in &check.warnings {
        let tag = if w.kind.refuses() { "refused" } else { "warning" };
        lines.push(format!("{tag}: {}", w.message));
    }
    lines
}

/// A URL question at the keyboard: Enter accepts once the person has visited the address (which
/// Taskdeck never opens itself), unless it is an address Taskdeck refuses.
fn ask_visit(check: &UrlCheck, input: &mut impl BufRead, out: &mut impl Write) -> std::io::Result<Prompted> {
    loop {
        if check.can_open() {
            write!(out, "  > press Enter once you have visited it: ")?;
        } else {
            write!(out, "  > type :decline: ")?;
        }
        let line = match reply(input, out)? {
            Reply::Line(line) => line,
            Reply::Ends(p) => return Ok(p),
        };
        if line.trim().is_empty() && check.can_open() {
            return Ok(Prompted::Answer(AnswerInput::Accept(Map::new())));
        }
    }
}

/// What one line typed at a prompt says: the input ended, `:decline` or `:cancel` (which end the
/// question at any prompt), or a line to read as the prompt's answer.
enum Reply {
    Ends(Prompted),
    Line(String),
}

fn reply(input: &mut impl BufRead, out: &mut impl Write) -> std::io::Result<Reply> {
    out.flush()?;
    let mut line = String::new();
    if input.read_line(&mut line)? == 0 {
        writeln!(out)?;
        return Ok(Reply::Ends(Prompted::Leave));
    }
    Ok(match line.trim() {
        ":decline" => Reply::Ends(Prompted::Answer(AnswerInput::Decline)),
        ":cancel" => Reply::Ends(Prompted::Answer(AnswerInput::Cancel)),
        _ => Reply::Line(line),
    })
}

fn label(f: &Field) -> String {
    match &f.title {
        Some(t) => format!("{t} ({})", f.name),
        None => f.name.clone(),
    }
}

fn list(options: &[Choice]) -> String {
    options
        .iter()
        .map(|c| match &c.label {
            Some(t) => format!("{} ({t})", c.value_text()),
            None => c.value_text(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn type_text(f: &Field) -> String {
    match &f.kind {
        FieldKind::Text { .. } => "text".into(),
        FieldKind::Number { integer: true, .. } => "integer".into(),
        FieldKind::Number { .. } => "number".into(),
        FieldKind::Boolean => "yes/no".into(),
        FieldKind::Choice { options } => format!("one of: {}", list(options)),
        FieldKind::Multi { options, .. } => format!("any of (comma-separated): {}", list(options)),
    }
}

/// One line for the "how to answer" hint.
pub fn describe(f: &Field) -> String {
    let mut s = format!("{}: {}", f.name, type_text(f));
    s.push_str(if f.required { ", required" } else { ", optional" });
    if let Some(d) = &f.default {
        s.push_str(&format!(", default {d}"));
    }
    if let Some(d) = f.description.as_ref().or(f.title.as_ref()) {
        s.push_str(&format!(" — {d}"));
    }
    s
}

/// Reads one typed answer. `Ok(None)`: leave the field out.
pub fn parse(f: &Field, input: &str) -> Result<Option<Value>, String> {
    let input = input.trim();
    if input.is_empty() {
        return match (&f.default, f.required) {
            (Some(d), _) => Ok(Some(d.clone())),
            (None, true) => Err("required".into()),
            (None, false) => Ok(None),
        };
    }
    match &f.kind {
        FieldKind::Text { min_length, max_length, .. } => {
            let len = input.chars().count() as u64;
            if let Some(m) = min_length.filter(|m| len < *m) {
                return Err(format!("at least {m} characters"));
            }
            if let Some(m) = max_length.filter(|m| len > *m) {
                return Err(format!("at most {m} characters"));
            }
            Ok(Some(json!(input)))
        }
        FieldKind::Number { integer, minimum, maximum, exclusive_minimum, exclusive_maximum } => {
            let x: f64 =
                input.parse().ok().filter(|x: &f64| x.is_finite()).ok_or_else(|| format!("not a number: {input:?}"))?;
            if *integer && x.fract() != 0.0 {
                return Err(format!("not an integer: {input:?}"));
            }
            if minimum.is_some_and(|m| x < m) || maximum.is_some_and(|m| x > m) {
                let bound = |b: &Option<f64>| b.map(|b| b.to_string()).unwrap_or_else(|| "any".into());
                return Err(format!("must be between {} and {}", bound(minimum), bound(maximum)));
            }
            if let Some(m) = exclusive_minimum.filter(|m| x <= *m) {
                return Err(format!("must be more than {m}"));
            }
            if let Some(m) = exclusive_maximum.filter(|m| x >= *m) {
                return Err(format!("must be less than {m}"));
            }
            Ok(Some(if *integer { json!(x as i64) } else { json!(x) }))
        }
        FieldKind::Boolean => match input.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Ok(Some(json!(true))),
            "n" | "no" | "false" => Ok(Some(json!(false))),
            _ => Err("answer yes or no".into()),
        },
        FieldKind::Choice { options } => pick(options, input).map(Some),
        FieldKind::Multi { options, min_items, max_items } => {
            let picked = input.split(',').map(|p| pick(options, p.trim())).collect::<Result<Vec<_>, _>>()?;
            let n = picked.len() as u64;
            if let Some(m) = min_items.filter(|m| n < *m) {
                return Err(format!("choose at least {m}"));
            }
            if let Some(m) = max_items.filter(|m| n > *m) {
                return Err(format!("choose at most {m}"));
            }
            Ok(Some(json!(picked)))
        }
    }
}

/// A choice by its value or by its number in the list shown.
fn pick(options: &[Choice], input: &str) -> Result<Value, String> {
    if let Some(c) = options.iter().find(|c| c.value_text() == input) {
        return Ok(c.value.clone());
    }
    if let Ok(i) = input.parse::<usize>()
        && let Some(c) = i.checked_sub(1).and_then(|i| options.get(i))
    {
        return Ok(c.value.clone());
    }
    Err(format!("not one of: {}", options.iter().map(Choice::value_text).collect::<Vec<_>>().join(", ")))
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
    if let Some((url, check)) = &form.url {
        for line in url_lines(url, check) {
            writeln!(out, "  {line}")?;
        }
    }
    writeln!(out, "  (type :decline to decline, :cancel to cancel the question, Ctrl-D to leave it waiting)")?;
    if let Some((_, check)) = &form.url {
        return ask_visit(check, input, out);
    }
    let mut content = Map::new();
    for f in &form.fields {
        writeln!(out, "\n  {}{}", label(f), if f.required { " *" } else { "" })?;
        if let Some(d) = &f.description {
            writeln!(out, "    {d}")?;
        }
        match &f.kind {
            FieldKind::Choice { options } | FieldKind::Multi { options, .. } => {
                for (i, c) in options.iter().enumerate() {
                    let shown = c.label.as_ref().map(|t| format!("  {t}")).unwrap_or_default();
                    writeln!(out, "    {}) {}{shown}", i + 1, c.value_text())?;
                }
            }
            _ => writeln!(out, "    {}", type_text(f))?,
        }
        loop {
            let default = f.default.as_ref().map(|d| format!(" [{d}]")).unwrap_or_default();
            write!(out, "  > {}{default}: ", f.name)?;
            let line = match reply(input, out)? {
                Reply::Line(line) => line,
                Reply::Ends(p) => return Ok(p),
            };
            match parse(f, &line) {
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
        let fields = FormModel::from_schema(&schema).fields().map(<[Field]>::to_vec).unwrap_or_default();
        Form { server: "demo".into(), message: "Which?".into(), fields, url: None }
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
    fn several_choices_are_checked_against_their_bounds_and_sent_as_the_server_spelled_them() {
        let schema = json!({"properties": {
            "fish": {"type": "array", "minItems": 1, "maxItems": 2,
                "items": {"anyOf": [{"const": "fish-1", "title": "Tuna"}, {"const": "fish-2"}, {"const": "fish-3"}]}},
            "level": {"type": "integer", "enum": [1, 2]}
        }});
        let fields = FormModel::from_schema(&schema).fields().map(<[Field]>::to_vec).unwrap();
        let (fish, level) = (&fields[0], &fields[1]);
        assert_eq!(parse(fish, "1,fish-2"), Ok(Some(json!(["fish-1", "fish-2"]))));
        assert_eq!(parse(fish, "1,2,3"), Err("choose at most 2".into()));
        assert_eq!(parse(level, "2"), Ok(Some(json!(2))), "a number option is sent as a number");
        assert!(describe(fish).starts_with("fish: any of (comma-separated): fish-1 (Tuna), fish-2, fish-3"));
    }

    fn visit(url: &str) -> Form {
        Form {
            server: "s".into(),
            message: "Sign in".into(),
            fields: Vec::new(),
            url: Some((url.into(), UrlCheck::of(url))),
        }
    }

    #[test]
    fn a_url_question_is_accepted_with_enter_only_when_taskdeck_would_open_it() {
        let mut out = Vec::new();
        let ok = ask(&visit("https://a.example/x"), &mut std::io::Cursor::new("\n"), &mut out).unwrap();
        assert!(matches!(ok, Prompted::Answer(AnswerInput::Accept(m)) if m.is_empty()));
        let mut out = Vec::new();
        let refused =
            ask(&visit("javascript:alert(1)"), &mut std::io::Cursor::new("\n\n:decline\n"), &mut out).unwrap();
        assert!(matches!(refused, Prompted::Answer(AnswerInput::Decline)));
        let shown = String::from_utf8(out).unwrap();
        assert!(shown.contains("refused: Taskdeck only opens web addresses"), "{shown}");
        assert_eq!(shown.matches("type :decline: ").count(), 3, "{shown}");
        assert_eq!(visit("javascript:alert(1)").example(), None);
    }

    #[test]
    fn the_example_names_every_required_field() {
        let example = form().example().unwrap();
        assert_eq!(example, json!({"service": "checkout", "n": 1}));
        assert!(form().describe().contains("service: one of: checkout (Checkout API), auth, required"));
    }
}
