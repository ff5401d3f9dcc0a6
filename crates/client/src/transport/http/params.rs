//! `x-mcp-header` (2026-07-28): tool parameters a server asks to see mirrored as
//! `Mcp-Param-{Name}` headers on `tools/call`.
//!
//! The transport learns the annotations from the `tools/list` answers that pass through it, so
//! the session needs to know nothing of them. A tool whose annotations break the spec's rules is
//! left out of the list the session sees, as the spec requires of an HTTP client, with a warning
//! naming the tool and why: one bad tool does not cost the others.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::headers::encode_value;

/// One annotated parameter: where its value is in the arguments, and the header's name part.
#[derive(Debug, Clone, PartialEq)]
pub struct Mirrored {
    pub path: Vec<String>,
    pub name: String,
}

/// The annotations of every tool listed so far, by tool name.
#[derive(Debug, Default)]
pub struct ParamHeaders {
    tools: HashMap<String, Vec<Mirrored>>,
}

impl ParamHeaders {
    /// Reads a `tools/list` answer: remembers each tool's annotations and removes the tools whose
    /// annotations are invalid. Returns the names of the tools removed, with why.
    pub fn learn(&mut self, answer: &mut Value) -> Vec<(String, String)> {
        let mut rejected = Vec::new();
        let Some(tools) = answer.pointer_mut("/result/tools").and_then(Value::as_array_mut) else { return rejected };
        tools.retain(|tool| {
            let Some(name) = tool.get("name").and_then(Value::as_str) else { return true };
            match annotations(tool.get("inputSchema").unwrap_or(&Value::Null)) {
                Ok(found) => {
                    if found.is_empty() {
                        self.tools.remove(name);
                    } else {
                        self.tools.insert(name.to_owned(), found);
                    }
                    true
                }
                Err(why) => {
                    self.tools.remove(name);
                    rejected.push((name.to_owned(), why));
                    false
                }
            }
        });
        rejected
    }

    /// The `Mcp-Param-*` headers of a call of `tool` with `arguments`: one per annotated
    /// parameter that has a value (a `null` or missing one has no header).
    pub fn headers(&self, tool: &str, arguments: Option<&Value>) -> Vec<(String, String)> {
        let Some(mirrored) = self.tools.get(tool) else { return Vec::new() };
        let mut out = Vec::new();
        for m in mirrored {
            let mut value = arguments;
            for key in &m.path {
                value = value.and_then(|v| v.get(key));
            }
            let text = match value {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Bool(b)) => b.to_string(),
                Some(Value::Number(n)) if n.is_i64() || n.is_u64() => n.to_string(),
                _ => continue,
            };
            out.push((format!("mcp-param-{}", m.name), encode_value(&text)));
        }
        out
    }
}

/// The annotations in a tool's input schema, or why they make the tool invalid.
fn annotations(schema: &Value) -> Result<Vec<Mirrored>, String> {
    let mut found = Vec::new();
    walk(schema, &mut Vec::new(), true, &mut found)?;
    let mut seen = HashSet::new();
    for m in &found {
        if !seen.insert(m.name.to_ascii_lowercase()) {
            return Err(format!("x-mcp-header {:?} is used twice", m.name));
        }
    }
    Ok(found)
}

/// `reachable`: the schema is the root or reached from it by `properties` keys alone; an
/// annotation may be only on such a schema's properties.
fn walk(schema: &Value, path: &mut Vec<String>, reachable: bool, found: &mut Vec<Mirrored>) -> Result<(), String> {
    let Some(obj) = schema.as_object() else {
        if let Some(items) = schema.as_array() {
            for item in items {
                walk(item, path, false, found)?;
            }
        }
        return Ok(());
    };
    if let Some(header) = obj.get("x-mcp-header") {
        let at = path.join(".");
        if !reachable || path.is_empty() {
            return Err(format!("x-mcp-header at {at:?} is not on a property reached through properties alone"));
        }
        let Some(name) = header.as_str().filter(|n| !n.is_empty() && n.bytes().all(is_tchar)) else {
            return Err(format!("x-mcp-header of {at:?} is not a valid header name"));
        };
        if !matches!(obj.get("type").and_then(Value::as_str), Some("string" | "integer" | "boolean")) {
            return Err(format!("x-mcp-header of {at:?} is on a parameter that is not a string, integer or boolean"));
        }
        found.push(Mirrored { path: path.clone(), name: name.to_owned() });
    }
    for (key, value) in obj {
        if key == "properties" {
            if let Some(props) = value.as_object() {
                for (prop, sub) in props {
                    path.push(prop.clone());
                    walk(sub, path, reachable, found)?;
                    path.pop();
                }
            }
        } else if key != "x-mcp-header" && (value.is_object() || value.is_array()) {
            // `items`, `oneOf`, `$defs`, …: an annotation anywhere in there is misplaced.
            walk(value, path, false, found)?;
        }
    }
    Ok(())
}

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn list(tools: Value) -> Value {
        json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}})
    }

    #[test]
    fn annotated_parameters_are_mirrored_and_invalid_tools_left_out() {
        let mut answer = list(json!([
            {"name": "execute_sql", "inputSchema": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "opts": {"type": "object", "properties": {"dry": {"type": "boolean", "x-mcp-header": "Dry"}}},
                "limit": {"type": "integer", "x-mcp-header": "Limit"},
                "query": {"type": "string"}}}},
            {"name": "in_items", "inputSchema": {"type": "object", "properties": {
                "xs": {"type": "array", "items": {"type": "string", "x-mcp-header": "X"}}}}},
            {"name": "a_number", "inputSchema": {"type": "object", "properties": {
                "n": {"type": "number", "x-mcp-header": "N"}}}},
            {"name": "twice", "inputSchema": {"type": "object", "properties": {
                "a": {"type": "string", "x-mcp-header": "Same"}, "b": {"type": "string", "x-mcp-header": "same"}}}},
            {"name": "bad_name", "inputSchema": {"type": "object", "properties": {
                "a": {"type": "string", "x-mcp-header": "with space"}}}},
            {"name": "in_defs", "inputSchema": {"type": "object", "$defs": {"D": {"type": "object", "properties": {
                "a": {"type": "string", "x-mcp-header": "A"}}}}}},
            {"name": "plain", "inputSchema": {"type": "object"}}
        ]));
        let mut p = ParamHeaders::default();
        let rejected: Vec<String> = p.learn(&mut answer).into_iter().map(|(n, _)| n).collect();
        assert_eq!(rejected, ["in_items", "a_number", "twice", "bad_name", "in_defs"]);
        let kept: Vec<&str> =
            answer["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(kept, ["execute_sql", "plain"]);
        let args = json!({"region": "Zürich", "opts": {"dry": true}, "limit": 42, "query": "SELECT 1"});
        assert_eq!(
            p.headers("execute_sql", Some(&args)),
            vec![
                ("mcp-param-Region".to_owned(), encode_value("Zürich")),
                ("mcp-param-Dry".to_owned(), "true".to_owned()),
                ("mcp-param-Limit".to_owned(), "42".to_owned()),
            ]
        );
        // A null or missing value has no header.
        assert_eq!(p.headers("execute_sql", Some(&json!({"region": null}))), vec![]);
        assert_eq!(p.headers("plain", Some(&args)), vec![]);
    }
}
