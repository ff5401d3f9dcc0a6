//! Validates MCP messages against the official JSON Schemas of their era, for tests.
//!
//! The schemas leave most objects open (no `additionalProperties`), so a misspelt optional member
//! would pass them untouched. To make a wrong field name fail, every closed-looking object schema
//! is tightened with `unevaluatedProperties: false` before compiling. Schemas that take part in an
//! `allOf` intersection are left open themselves (each branch only sees its own members) and the
//! intersection is tightened at its top instead, where evaluation of all branches is visible.
//! `_meta` stays allowed everywhere: it is MCP's extension point on every object.
//!
//! The schema files are vendored in this crate's `schemas/` folder (their source, version and
//! licence are in its README); `TASKDECK_SPEC_SCHEMA_DIR` points the checks at other copies.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Mutex;

use serde_json::{Map, Value, json};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Doc {
    /// `mcp-2025-11-25.schema.json`
    Legacy,
    /// `mcp-2026-07-28.schema.json`
    Modern,
    /// `ext-tasks.schema.json`, the `io.modelcontextprotocol/tasks` extension
    TasksExt,
}

impl Doc {
    fn file(self) -> &'static str {
        match self {
            Doc::Legacy => "mcp-2025-11-25.schema.json",
            Doc::Modern => "mcp-2026-07-28.schema.json",
            Doc::TasksExt => "ext-tasks.schema.json",
        }
    }
}

/// The era a message belongs to, as the checker needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    Legacy,
    Modern,
}

/// Which way a message travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sender {
    Client,
    Server,
}

pub struct Schemas {
    docs: HashMap<Doc, Value>,
    compiled: Mutex<HashMap<(Doc, String), std::sync::Arc<jsonschema::Validator>>>,
}

pub fn schema_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("TASKDECK_SPEC_SCHEMA_DIR") {
        return PathBuf::from(dir);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schemas")
}

impl Schemas {
    /// Loads and tightens the three schema documents. Panics with a clear message when they are
    /// missing: this is test support, and a test without its schemas must not pass.
    pub fn load() -> Self {
        let dir = schema_dir();
        let mut docs = HashMap::new();
        for doc in [Doc::Legacy, Doc::Modern, Doc::TasksExt] {
            let path = dir.join(doc.file());
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
                panic!("cannot read MCP schema {}: {e} (set TASKDECK_SPEC_SCHEMA_DIR)", path.display())
            });
            let mut value: Value = serde_json::from_str(&text).expect("schema file is JSON");
            tighten(&mut value);
            docs.insert(doc, value);
        }
        Self { docs, compiled: Mutex::new(HashMap::new()) }
    }

    fn validator(&self, doc: Doc, def: &str) -> std::sync::Arc<jsonschema::Validator> {
        let mut cache = self.compiled.lock().unwrap();
        cache
            .entry((doc, def.to_owned()))
            .or_insert_with(|| {
                let mut root = self.docs[&doc].clone();
                assert!(root["$defs"].get(def).is_some(), "{} has no definition {def}", doc.file());
                root.as_object_mut().unwrap().insert("$ref".into(), Value::from(format!("#/$defs/{def}")));
                std::sync::Arc::new(
                    jsonschema::draft202012::new(&root).unwrap_or_else(|e| panic!("compiling {def}: {e}")),
                )
            })
            .clone()
    }

    /// Validates `value` against one definition. The error lists every violation with its path.
    pub fn validate_def(&self, doc: Doc, def: &str, value: &Value) -> Result<(), String> {
        let v = self.validator(doc, def);
        let errors: Vec<String> = v.iter_errors(value).map(|e| format!("at {}: {}", e.instance_path(), e)).collect();
        if errors.is_empty() { Ok(()) } else { Err(format!("not a valid {def} ({:?}): {}", doc, errors.join("; "))) }
    }

    /// Validates one whole JSON-RPC message as sent by `sender` in `era`. `answering` names the
    /// method of the request a response answers (responses do not say it themselves).
    pub fn check(&self, era: Era, sender: Sender, message: &Value, answering: Option<&str>) -> Result<(), String> {
        let method = message.get("method").and_then(Value::as_str);
        let is_request = method.is_some() && message.get("id").is_some();
        let wrap = |r: Result<(), String>| r.map_err(|e| format!("{e}\n  message: {message}"));
        if let Some(method) = method {
            let (doc, def) = message_def(era, sender, method, is_request)
                .ok_or_else(|| format!("no schema known for {sender:?} {method} in {era:?}: {message}"))?;
            wrap(self.validate_def(doc, def, message))?;
            if era == Era::Modern && is_request && sender == Sender::Client {
                // The extension's examples omit `_meta`, but the 2026 core requires it on every
                // request; a task request without it is refused by real servers.
                let meta = message.pointer("/params/_meta").cloned().unwrap_or(Value::Null);
                wrap(self.validate_def(Doc::Modern, "RequestMetaObject", &meta))?;
            }
            return Ok(());
        }
        if let Some(error) = message.get("error") {
            let code = error.get("code").and_then(Value::as_i64);
            let def = match (era, code) {
                (Era::Modern, Some(-32022)) => "UnsupportedProtocolVersionError",
                (Era::Modern, Some(-32021)) => "MissingRequiredClientCapabilityError",
                _ => "JSONRPCErrorResponse",
            };
            let doc = if era == Era::Legacy { Doc::Legacy } else { Doc::Modern };
            return wrap(self.validate_def(doc, def, message));
        }
        let doc = if era == Era::Legacy { Doc::Legacy } else { Doc::Modern };
        wrap(self.validate_def(doc, "JSONRPCResultResponse", message))?;
        let result = message.get("result").cloned().unwrap_or(Value::Null);
        let answering = answering.ok_or_else(|| format!("a response needs the method it answers: {message}"))?;
        let candidates = result_defs(era, sender, answering, &result)
            .ok_or_else(|| format!("no schema known for the result of {answering} in {era:?}: {message}"))?;
        wrap(self.validate_def(candidates.0, candidates.1, &result))
    }
}

fn message_def(era: Era, sender: Sender, method: &str, is_request: bool) -> Option<(Doc, &'static str)> {
    use Doc::*;
    let legacy = |def| Some((Legacy, def));
    let modern = |def| Some((Modern, def));
    match (era, sender, method, is_request) {
        (_, _, "ping", true) => {
            if era == Era::Legacy {
                legacy("PingRequest")
            } else {
                modern("JSONRPCRequest")
            }
        }
        (Era::Legacy, Sender::Client, "initialize", true) => legacy("InitializeRequest"),
        (Era::Legacy, Sender::Client, "notifications/initialized", false) => legacy("InitializedNotification"),
        (Era::Legacy, Sender::Client, "tools/list", true) => legacy("ListToolsRequest"),
        (Era::Legacy, Sender::Client, "tools/call", true) => legacy("CallToolRequest"),
        (Era::Legacy, Sender::Client, "tasks/get", true) => legacy("GetTaskRequest"),
        (Era::Legacy, Sender::Client, "tasks/result", true) => legacy("GetTaskPayloadRequest"),
        (Era::Legacy, Sender::Client, "tasks/list", true) => legacy("ListTasksRequest"),
        (Era::Legacy, Sender::Client, "tasks/cancel", true) => legacy("CancelTaskRequest"),
        (Era::Legacy, Sender::Client, "logging/setLevel", true) => legacy("SetLevelRequest"),
        (Era::Legacy, _, "notifications/cancelled", false) => legacy("CancelledNotification"),
        (Era::Legacy, Sender::Client, "notifications/roots/list_changed", false) => {
            legacy("RootsListChangedNotification")
        }
        (Era::Legacy, Sender::Server, "elicitation/create", true) => legacy("ElicitRequest"),
        (Era::Legacy, Sender::Server, "roots/list", true) => legacy("ListRootsRequest"),
        (Era::Legacy, Sender::Server, "sampling/createMessage", true) => legacy("CreateMessageRequest"),
        (Era::Legacy, Sender::Server, "notifications/progress", false) => legacy("ProgressNotification"),
        (Era::Legacy, _, "notifications/tasks/status", false) => legacy("TaskStatusNotification"),
        (Era::Legacy, Sender::Server, "notifications/message", false) => legacy("LoggingMessageNotification"),
        (Era::Legacy, Sender::Server, "notifications/tools/list_changed", false) => {
            legacy("ToolListChangedNotification")
        }
        (Era::Legacy, Sender::Server, "notifications/elicitation/complete", false) => {
            legacy("ElicitationCompleteNotification")
        }
        (Era::Modern, Sender::Client, "server/discover", true) => modern("DiscoverRequest"),
        (Era::Modern, Sender::Client, "tools/list", true) => modern("ListToolsRequest"),
        (Era::Modern, Sender::Client, "tools/call", true) => modern("CallToolRequest"),
        (Era::Modern, Sender::Client, "subscriptions/listen", true) => modern("SubscriptionsListenRequest"),
        (Era::Modern, Sender::Client, "tasks/get", true) => Some((TasksExt, "GetTaskRequest")),
        (Era::Modern, Sender::Client, "tasks/update", true) => Some((TasksExt, "UpdateTaskRequest")),
        (Era::Modern, Sender::Client, "tasks/cancel", true) => Some((TasksExt, "CancelTaskRequest")),
        (Era::Modern, _, "notifications/cancelled", false) => modern("CancelledNotification"),
        (Era::Modern, Sender::Server, "notifications/tasks", false) => Some((TasksExt, "TaskStatusNotification")),
        (Era::Modern, Sender::Server, "notifications/progress", false) => modern("ProgressNotification"),
        (Era::Modern, Sender::Server, "notifications/message", false) => modern("LoggingMessageNotification"),
        (Era::Modern, Sender::Server, "notifications/tools/list_changed", false) => {
            modern("ToolListChangedNotification")
        }
        (Era::Modern, Sender::Server, "notifications/subscriptions/acknowledged", false) => {
            modern("SubscriptionsAcknowledgedNotification")
        }
        _ => None,
    }
}

fn result_defs(era: Era, sender: Sender, answering: &str, result: &Value) -> Option<(Doc, &'static str)> {
    use Doc::*;
    let result_type = result.get("resultType").and_then(Value::as_str);
    Some(match (era, sender, answering) {
        (Era::Legacy, Sender::Server, "initialize") => (Legacy, "InitializeResult"),
        (Era::Legacy, Sender::Server, "tools/list") => (Legacy, "ListToolsResult"),
        (Era::Legacy, Sender::Server, "tools/call") if result.get("task").is_some() => (Legacy, "CreateTaskResult"),
        (Era::Legacy, Sender::Server, "tools/call" | "tasks/result") => (Legacy, "CallToolResult"),
        (Era::Legacy, Sender::Server, "tasks/get") => (Legacy, "GetTaskResult"),
        (Era::Legacy, Sender::Server, "tasks/list") => (Legacy, "ListTasksResult"),
        (Era::Legacy, Sender::Server, "tasks/cancel") => (Legacy, "CancelTaskResult"),
        (Era::Legacy, _, "ping") => (Legacy, "EmptyResult"),
        (Era::Legacy, Sender::Client, "elicitation/create") => (Legacy, "ElicitResult"),
        (Era::Legacy, Sender::Client, "roots/list") => (Legacy, "ListRootsResult"),
        (Era::Legacy, Sender::Client, "sampling/createMessage") => (Legacy, "CreateMessageResult"),
        (Era::Modern, Sender::Server, "server/discover") => (Modern, "DiscoverResult"),
        (Era::Modern, Sender::Server, "tools/list") => (Modern, "ListToolsResult"),
        (Era::Modern, Sender::Server, "tools/call") => match result_type {
            Some("task") => (TasksExt, "CreateTaskResult"),
            Some("input_required") => (Modern, "InputRequiredResult"),
            _ => (Modern, "CallToolResult"),
        },
        (Era::Modern, Sender::Server, "tasks/get") => (TasksExt, "GetTaskResult"),
        (Era::Modern, Sender::Server, "tasks/update") => (TasksExt, "UpdateTaskResult"),
        (Era::Modern, Sender::Server, "tasks/cancel") => (TasksExt, "CancelTaskResult"),
        (Era::Modern, _, "ping") => (Modern, "EmptyResult"),
        _ => return None,
    })
}

/// Adds `unevaluatedProperties: false` where it is safe; see the module docs.
fn tighten(doc: &mut Value) {
    let Some(defs) = doc.get("$defs").and_then(Value::as_object).cloned() else { return };
    // Definitions that are used as a branch of an intersection must stay open.
    let mut composed = BTreeSet::new();
    loop {
        let before = composed.len();
        for (name, def) in &defs {
            collect_composed_refs(def, composed.contains(name), &mut composed);
        }
        if composed.len() == before {
            break;
        }
    }
    let defs_mut = doc.get_mut("$defs").and_then(Value::as_object_mut).unwrap();
    for (name, def) in defs_mut.iter_mut() {
        // `_meta` objects are open by design: any prefixed key may appear there.
        if name.ends_with("MetaObject") {
            continue;
        }
        tighten_schema(def, composed.contains(name));
    }
}

fn def_name(reference: &str) -> Option<&str> {
    reference.strip_prefix("#/$defs/")
}

/// Walks a schema; `in_intersection` is true where the schema's members are evaluated together
/// with a sibling branch of an enclosing `allOf`.
fn collect_composed_refs(schema: &Value, in_intersection: bool, out: &mut BTreeSet<String>) {
    let Value::Object(obj) = schema else { return };
    if in_intersection && let Some(name) = obj.get("$ref").and_then(Value::as_str).and_then(def_name) {
        out.insert(name.to_owned());
    }
    if let Some(Value::Array(branches)) = obj.get("allOf") {
        for b in branches {
            collect_composed_refs(b, true, out);
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = obj.get(key) {
            for b in branches {
                collect_composed_refs(b, in_intersection, out);
            }
        }
    }
    for_each_subschema(obj, |s| collect_composed_refs(s, false, out));
}

fn for_each_subschema(obj: &Map<String, Value>, mut f: impl FnMut(&Value)) {
    if let Some(Value::Object(props)) = obj.get("properties") {
        props.values().for_each(&mut f);
    }
    for key in ["items", "additionalProperties"] {
        if let Some(s @ Value::Object(_)) = obj.get(key) {
            f(s);
        }
    }
}

fn tighten_schema(schema: &mut Value, in_intersection: bool) {
    let Value::Object(obj) = schema else { return };
    let open_by_declaration = obj.contains_key("additionalProperties") || obj.contains_key("unevaluatedProperties");
    let describes_members = obj.contains_key("properties") || obj.contains_key("allOf");
    if let Some(Value::Array(branches)) = obj.get_mut("allOf") {
        branches.iter_mut().for_each(|b| tighten_schema(b, true));
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = obj.get_mut(key) {
            branches.iter_mut().for_each(|b| tighten_schema(b, in_intersection));
        }
    }
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        props.values_mut().for_each(|s| tighten_schema(s, false));
    }
    for key in ["items", "additionalProperties"] {
        if let Some(s @ Value::Object(_)) = obj.get_mut(key) {
            tighten_schema(s, false);
        }
    }
    if !in_intersection && describes_members && !open_by_declaration {
        obj.insert("unevaluatedProperties".into(), json!(false));
        // `_meta` is MCP's extension point on every params and result object, even where a
        // schema's example omits it (the tasks extension's requests, for one).
        if let Some(Value::Object(props)) = obj.get_mut("properties") {
            props.entry("_meta").or_insert_with(|| json!({"type": "object"}));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misspelt_optional_member_fails() {
        let s = Schemas::load();
        let good = json!({"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"t"}});
        s.check(Era::Legacy, Sender::Client, &good, None).unwrap();
        let task =
            json!({"taskId":"t","status":"working","createdAt":"x","lastUpdatedAt":"x","ttl":null,"pollInterval":500});
        s.validate_def(Doc::Legacy, "Task", &task).unwrap();
        let mut wrong = task.clone();
        wrong.as_object_mut().unwrap().insert("pollIntervalMs".into(), json!(500));
        s.check(
            Era::Legacy,
            Sender::Server,
            &json!({"jsonrpc":"2.0","method":"notifications/tasks/status","params": wrong}),
            None,
        )
        .unwrap_err();
    }

    #[test]
    fn intersections_still_accept_valid_messages() {
        let s = Schemas::load();
        let create = json!({"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":"t","status":"working",
            "createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:00Z","ttlMs":null,"pollIntervalMs":500}});
        s.check(Era::Modern, Sender::Server, &create, Some("tools/call")).unwrap();
        let get = json!({"jsonrpc":"2.0","id":2,"result":{"resultType":"complete","taskId":"t","status":"input_required",
            "createdAt":"x","lastUpdatedAt":"x","ttlMs":1000,"inputRequests":{"q1":{"method":"elicitation/create",
            "params":{"mode":"form","message":"Which?","requestedSchema":{"type":"object","properties":{"s":{"type":"string"}}}}}}}});
        s.check(Era::Modern, Sender::Server, &get, Some("tasks/get")).unwrap();
        let legacy_get = json!({"jsonrpc":"2.0","id":3,"result":{"taskId":"t","status":"working","createdAt":"x",
            "lastUpdatedAt":"x","ttl":null,"_meta":{}}});
        s.check(Era::Legacy, Sender::Server, &legacy_get, Some("tasks/get")).unwrap();
    }

    #[test]
    fn meta_objects_stay_open() {
        let s = Schemas::load();
        let get = json!({"jsonrpc":"2.0","id":2,"result":{"resultType":"complete","taskId":"t","status":"working",
            "createdAt":"x","lastUpdatedAt":"x","ttlMs":1000,"_meta":{"dev.taskdeck/progress":{"progress":1}}}});
        s.check(Era::Modern, Sender::Server, &get, Some("tasks/get")).unwrap();
    }

    #[test]
    fn modern_task_requests_need_the_request_meta() {
        let s = Schemas::load();
        let bare = json!({"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"t"}});
        s.check(Era::Modern, Sender::Client, &bare, None).unwrap_err();
        let meta = json!({"io.modelcontextprotocol/protocolVersion":"2026-07-28",
            "io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}});
        let ok = json!({"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"t","_meta":meta}});
        s.check(Era::Modern, Sender::Client, &ok, None).unwrap();
    }
}
