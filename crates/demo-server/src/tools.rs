//! The tool catalogue: what each tool is called with, and how its arguments are checked before any
//! task exists (a bad call must never leave a task behind).

use serde_json::{Map, Value, json};
use taskdeck_protocol::types::{TaskSupport, Tool, ToolExecution};

pub const GENERATE_REPORT: &str = "generate_report";
pub const DIAGNOSE_INCIDENT: &str = "diagnose_incident";
pub const NOTES_SEARCH: &str = "notes_search";
pub const FLAKY_EXPORT: &str = "flaky_export";
pub const COUNT: &str = "count";
pub const SUMMARIZE_FINDINGS: &str = "summarize_findings";
pub const PLAN_RELEASE: &str = "plan_release";
pub const PUBLISH_NOTES: &str = "publish_notes";

pub const REPORT_STAGES: [&str; 4] = ["Collecting sources", "Reading", "Drafting", "Formatting"];
/// Services the diagnosis form offers, as `(value, title)`.
pub const SERVICES: [(&str, &str); 4] = [
    ("checkout", "Checkout API"),
    ("search", "Search cluster"),
    ("auth", "Auth gateway"),
    ("billing", "Billing workers"),
];

/// Upper bounds keep one call from holding a worker (or the store) for an unreasonable time.
const MAX_REPORT_SECONDS: f64 = 3600.0;
const MAX_COUNT_N: i64 = 100_000;
const MAX_COUNT_DELAY_MS: i64 = 60_000;
const MAX_TEXT: usize = 1000;

pub struct ToolSpec {
    pub name: &'static str,
    pub task_support: TaskSupport,
    pub title: &'static str,
    pub description: &'static str,
    pub input_schema: fn() -> Value,
}

impl ToolSpec {
    /// The tool as `tools/list` shows it; `execution` is the era's task annotation, if it has one.
    pub fn listed(&self, execution: Option<ToolExecution>) -> Value {
        let tool = Tool {
            name: self.name.into(),
            title: Some(self.title.into()),
            description: Some(self.description.into()),
            input_schema: (self.input_schema)(),
            output_schema: None,
            execution,
            extra: Map::new(),
        };
        serde_json::to_value(tool).unwrap_or(Value::Null)
    }
}

pub const TOOLS: [ToolSpec; 8] = [
    ToolSpec {
        name: GENERATE_REPORT,
        task_support: TaskSupport::Required,
        title: "Generate a report",
        description: "Writes a short report on a topic in four stages (collecting sources, reading, drafting, \
                      formatting). Long-running: always runs as a task, resumes from its last finished stage \
                      after a server restart.",
        input_schema: || {
            json!({
                "type": "object",
                "properties": {
                    "topic": {"type": "string", "minLength": 1, "maxLength": MAX_TEXT,
                        "description": "What the report is about."},
                    "seconds": {"type": "number", "minimum": 0, "maximum": MAX_REPORT_SECONDS, "default": 8,
                        "description": "How long the whole report should take, in seconds."}
                },
                "required": ["topic"]
            })
        },
    },
    ToolSpec {
        name: DIAGNOSE_INCIDENT,
        task_support: TaskSupport::Required,
        title: "Diagnose an incident",
        description: "Diagnoses an incident on one service. Without `service` the task asks the user which \
                      service is affected (input_required) and continues once answered.",
        input_schema: || {
            json!({
                "type": "object",
                "properties": {
                    "service": {"type": "string", "enum": SERVICES.map(|s| s.0),
                        "description": "The affected service; leave out to be asked."}
                }
            })
        },
    },
    ToolSpec {
        name: NOTES_SEARCH,
        task_support: TaskSupport::Forbidden,
        title: "Search notes",
        description: "Searches the built-in demo notes and answers at once (or after delay_ms). Never runs as a \
                      task.",
        input_schema: || {
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "minLength": 1, "maxLength": MAX_TEXT,
                        "description": "Words to look for (case-insensitive)."},
                    "delay_ms": {"type": "integer", "minimum": 0, "maximum": MAX_COUNT_DELAY_MS,
                        "description": "Waits this long before answering: a slow plain call, for tests."}
                },
                "required": ["query"]
            })
        },
    },
    ToolSpec {
        name: FLAKY_EXPORT,
        task_support: TaskSupport::Required,
        title: "Export (flaky)",
        description: "Pretends to export data and always fails part-way with a tool error: a demo of how a \
                      failed task looks. Cannot resume after a restart (fails with CRASH_RECOVERY).",
        input_schema: || {
            json!({
                "type": "object",
                "properties": {
                    "fail_at": {"type": "integer", "minimum": 0, "maximum": 100, "default": 60,
                        "description": "The percentage at which the export fails."}
                }
            })
        },
    },
    ToolSpec {
        name: COUNT,
        task_support: TaskSupport::Optional,
        title: "Count",
        description: "Counts to n, waiting delay_ms per step and reporting progress each step. Cheap; for tests \
                      and benchmarks. Runs as a task or as a plain call.",
        input_schema: || {
            json!({
                "type": "object",
                "properties": {
                    "n": {"type": "integer", "minimum": 0, "maximum": MAX_COUNT_N, "description": "Where to stop."},
                    "delay_ms": {"type": "integer", "minimum": 0, "maximum": MAX_COUNT_DELAY_MS,
                        "description": "Wait per step, in milliseconds."}
                },
                "required": ["n", "delay_ms"]
            })
        },
    },
    ToolSpec {
        name: SUMMARIZE_FINDINGS,
        task_support: TaskSupport::Required,
        title: "Summarize findings",
        description: "Gathers findings on a topic, then asks the client's language model to summarize them \
                      (sampling/createMessage mid-task: a request in 2025-11-25, an input request in the \
                      extension) and returns the summary. The question survives restarts.",
        input_schema: || {
            json!({
                "type": "object",
                "properties": {
                    "topic": {"type": "string", "minLength": 1, "maxLength": MAX_TEXT,
                        "description": "What the findings are about."}
                },
                "required": ["topic"]
            })
        },
    },
    ToolSpec {
        name: PLAN_RELEASE,
        task_support: TaskSupport::Required,
        title: "Plan a release",
        description: "Asks two things at once (2026-07-28 only): which environment to release to (a form) and \
                      a release note from the client's language model (sampling), then plans the release.",
        input_schema: || {
            json!({
                "type": "object",
                "properties": {
                    "version": {"type": "string", "minLength": 1, "maxLength": 100,
                        "description": "The version to release."}
                },
                "required": ["version"]
            })
        },
    },
    ToolSpec {
        name: PUBLISH_NOTES,
        task_support: TaskSupport::Forbidden,
        title: "Publish notes",
        description: "Publishes the demo notes once the user confirms. A plain call, never a task: in 2026-07-28 \
                      the server answers it first with a confirmation to fill in (and asks for the client's roots \
                      as the destination), and the client sends the call again with the answers; in 2025-11-25 \
                      it publishes without asking.",
        input_schema: || {
            json!({
                "type": "object",
                "properties": {
                    "title": {"type": "string", "minLength": 1, "maxLength": 200,
                        "description": "What to publish them as."},
                    "rounds": {"type": "integer", "minimum": 1, "maximum": crate::publish::MAX_ROUNDS,
                        "description": "How many confirmations to ask for, one after the other (default 1)."},
                    "blurb": {"type": "boolean",
                        "description": "Also ask the client's language model for a line to publish them with, \
                                        with the last confirmation (two questions at once)."}
                }
            })
        },
    },
];

pub fn find(name: &str) -> Option<&'static ToolSpec> {
    TOOLS.iter().find(|t| t.name == name)
}

/// Checks a call's arguments; the error names the offending field, for a `-32602`.
pub fn validate(tool: &str, args: &Map<String, Value>) -> Result<(), String> {
    let allowed: &[&str] = match tool {
        GENERATE_REPORT => &["topic", "seconds"],
        DIAGNOSE_INCIDENT => &["service"],
        NOTES_SEARCH => &["query", "delay_ms"],
        FLAKY_EXPORT => &["fail_at"],
        COUNT => &["n", "delay_ms"],
        SUMMARIZE_FINDINGS => &["topic"],
        PLAN_RELEASE => &["version"],
        PUBLISH_NOTES => &["title", "rounds", "blurb"],
        other => return Err(format!("unknown tool {other:?}")),
    };
    if let Some(extra) = args.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(format!("arguments.{extra}: not an argument of {tool} (expected {})", allowed.join(", ")));
    }
    match tool {
        GENERATE_REPORT => {
            text(args, "topic", true)?;
            number(args, "seconds", false, 0.0, MAX_REPORT_SECONDS)?;
        }
        DIAGNOSE_INCIDENT => {
            if let Some(s) = text(args, "service", false)?
                && service_title(s).is_none()
            {
                return Err(format!("arguments.service: unknown service {s:?} (expected {})", service_list()));
            }
        }
        NOTES_SEARCH => {
            text(args, "query", true)?;
            integer(args, "delay_ms", false, 0, MAX_COUNT_DELAY_MS)?;
        }
        FLAKY_EXPORT => {
            integer(args, "fail_at", false, 0, 100)?;
        }
        COUNT => {
            integer(args, "n", true, 0, MAX_COUNT_N)?;
            integer(args, "delay_ms", true, 0, MAX_COUNT_DELAY_MS)?;
        }
        SUMMARIZE_FINDINGS => {
            text(args, "topic", true)?;
        }
        PLAN_RELEASE => {
            text(args, "version", true)?;
        }
        PUBLISH_NOTES => {
            text(args, "title", false)?;
            integer(args, "rounds", false, 1, crate::publish::MAX_ROUNDS)?;
            if args.get("blurb").is_some_and(|b| !b.is_boolean()) {
                return Err("arguments.blurb: must be a boolean".into());
            }
        }
        _ => {}
    }
    Ok(())
}

pub fn service_title(value: &str) -> Option<&'static str> {
    SERVICES.iter().find(|s| s.0 == value).map(|s| s.1)
}

pub fn service_list() -> String {
    SERVICES.map(|s| s.0).join(", ")
}

fn text<'a>(args: &'a Map<String, Value>, field: &str, required: bool) -> Result<Option<&'a str>, String> {
    match args.get(field) {
        None if required => Err(format!("arguments.{field}: required string is missing")),
        None => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Err(format!("arguments.{field}: must not be empty")),
        Some(Value::String(s)) if s.len() > MAX_TEXT => Err(format!("arguments.{field}: longer than {MAX_TEXT} bytes")),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(format!("arguments.{field}: must be a string")),
    }
}

fn number(args: &Map<String, Value>, field: &str, required: bool, min: f64, max: f64) -> Result<Option<f64>, String> {
    match args.get(field) {
        None if required => Err(format!("arguments.{field}: required number is missing")),
        None => Ok(None),
        Some(v) => match v.as_f64() {
            Some(x) if (min..=max).contains(&x) => Ok(Some(x)),
            Some(_) => Err(format!("arguments.{field}: must be between {min} and {max}")),
            None => Err(format!("arguments.{field}: must be a number")),
        },
    }
}

fn integer(args: &Map<String, Value>, field: &str, required: bool, min: i64, max: i64) -> Result<Option<i64>, String> {
    match args.get(field) {
        None if required => Err(format!("arguments.{field}: required integer is missing")),
        None => Ok(None),
        Some(v) => match v.as_i64() {
            Some(x) if (min..=max).contains(&x) => Ok(Some(x)),
            Some(_) => Err(format!("arguments.{field}: must be between {min} and {max}")),
            None => Err(format!("arguments.{field}: must be an integer")),
        },
    }
}

/// The diagnosis form. Only field types the elicitation schema allows: a titled single-select, a
/// free-text string and a boolean.
pub fn diagnosis_form() -> Value {
    json!({
        "type": "object",
        "properties": {
            "service": {
                "type": "string",
                "title": "Affected service",
                "description": "Which service shows the incident?",
                "oneOf": SERVICES.map(|(value, title)| json!({"const": value, "title": title})),
            },
            "notes": {
                "type": "string",
                "title": "Notes",
                "description": "Anything you already noticed (optional).",
                "maxLength": 500,
            },
            "page_oncall": {
                "type": "boolean",
                "title": "Page on-call",
                "description": "Page the on-call engineer with the diagnosis.",
                "default": false,
            }
        },
        "required": ["service"],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_errors_name_the_field() {
        let args = |v: Value| v.as_object().cloned().unwrap();
        assert!(validate(COUNT, &args(json!({"n": 3}))).unwrap_err().contains("arguments.delay_ms"));
        assert!(validate(COUNT, &args(json!({"n": -1, "delay_ms": 0}))).unwrap_err().contains("arguments.n"));
        assert!(validate(GENERATE_REPORT, &args(json!({"topic": 3}))).unwrap_err().contains("arguments.topic"));
        assert!(validate(DIAGNOSE_INCIDENT, &args(json!({"service": "x"}))).unwrap_err().contains("service"));
        assert!(validate(NOTES_SEARCH, &args(json!({"query": "a", "b": 1}))).unwrap_err().contains("arguments.b"));
        validate(GENERATE_REPORT, &args(json!({"topic": "t", "seconds": 0.2}))).unwrap();
    }
}
