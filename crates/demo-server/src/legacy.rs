//! Protocol revision 2025-11-25: `initialize`, `params.task`, the nested `CreateTaskResult`,
//! blocking `tasks/result`, `tasks/list`, status notifications and `elicitation/create` requests.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use taskdeck_protocol::legacy::tasks::Task;
use taskdeck_protocol::types::{Implementation, TaskSupport, ToolExecution};
use taskdeck_protocol::{Era, ErrorObject, Message, Request, RequestId, Response, TaskStatus, codes, meta, methods};
use tokio::sync::broadcast::error::RecvError;

use crate::server::{Conn, internal, invalid_params, response_key};
use crate::store::{NewTask, TaskRow};
use crate::tools::{self, ToolSpec};
use crate::work::{self, Run};

pub async fn handle_request(conn: &Arc<Conn>, req: Request) {
    let id = req.id.clone();
    let params = req.params.as_ref();
    let result = match req.method.as_str() {
        methods::INITIALIZE => initialize(conn, params),
        methods::PING => Ok(json!({})),
        methods::TOOLS_LIST => Ok(json!({"tools": tools::TOOLS.iter().map(tool_entry).collect::<Vec<_>>()})),
        methods::TOOLS_CALL => return tools_call(conn, id, params).await,
        methods::TASKS_GET => find(conn, params).map(|row| task_json(&row)),
        methods::TASKS_RESULT => match task_id(params) {
            Ok(t) => {
                conn.spawn_for(&id, wait_for_result(conn.clone(), id.clone(), t.to_owned()));
                return;
            }
            Err(e) => Err(e),
        },
        methods::TASKS_LIST => list(conn, params),
        methods::LOGGING_SET_LEVEL => set_level(conn, params),
        methods::TASKS_CANCEL => return cancel(conn, id, params).await,
        other => Err(ErrorObject::new(codes::METHOD_NOT_FOUND, format!("Method not found: {other}"))),
    };
    conn.respond(id, result).await;
}

/// The task a request names, which this connection hears about from now on.
fn find(conn: &Conn, params: Option<&Value>) -> Result<TaskRow, ErrorObject> {
    let row = conn.lookup(task_id(params)?, Era::Legacy)?;
    conn.watch(&row.id);
    Ok(row)
}

fn initialize(conn: &Conn, params: Option<&Value>) -> Result<Value, ErrorObject> {
    let params = params.ok_or_else(|| invalid_params("initialize needs params"))?;
    let caps = params.get("capabilities").unwrap_or(&Value::Null);
    if !caps.is_object() {
        return Err(invalid_params("params.capabilities: must be an object"));
    }
    let version = params.get("protocolVersion").and_then(Value::as_str).unwrap_or("");
    if version != taskdeck_protocol::legacy::PROTOCOL_VERSION {
        tracing::info!(requested = version, "client asked for another revision; offering 2025-11-25");
    }
    conn.state().legacy_elicitation = caps.get("elicitation").is_some_and(Value::is_object);
    conn.state().legacy_sampling = caps.get("sampling").is_some_and(Value::is_object);
    Ok(json!({
        "protocolVersion": taskdeck_protocol::legacy::PROTOCOL_VERSION,
        "capabilities": {
            "tools": {},
            "logging": {},
            "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}},
        },
        "serverInfo": Implementation::new(crate::server::SERVER_NAME, env!("CARGO_PKG_VERSION")),
        "instructions": crate::INSTRUCTIONS,
    }))
}

/// `logging/setLevel`: entries below `level` are not sent to this connection from now on.
fn set_level(conn: &Conn, params: Option<&Value>) -> Result<Value, ErrorObject> {
    let level = params.and_then(|p| p.get("level")).and_then(Value::as_str);
    match level {
        Some(l) if work::severity(l).is_some() => {
            conn.state().log_level = Some(l.to_owned());
            Ok(json!({}))
        }
        _ => Err(invalid_params("params.level: must be a log level (debug … emergency)")),
    }
}

fn tool_entry(spec: &ToolSpec) -> Value {
    spec.listed(Some(ToolExecution { task_support: Some(spec.task_support), extra: Map::new() }))
}

pub fn task_id(params: Option<&Value>) -> Result<&str, ErrorObject> {
    match params.and_then(|p| p.get("taskId")) {
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(invalid_params("params.taskId: must be a string")),
        None => Err(invalid_params("params.taskId: required")),
    }
}

/// Makes a legacy task for a task-augmented call and answers the call with its handle.
async fn make_task(conn: Arc<Conn>, id: RequestId, name: &'static str, args: Value, token: Option<Value>, ttl_ms: i64) {
    let inserted = conn.store().insert(NewTask {
        tool: name,
        arguments: &args,
        era: Era::Legacy,
        progress_token: token.as_ref(),
        ttl_ms,
        poll_interval_ms: conn.cfg.poll_interval_ms,
        client_elicitation: false,
        client_sampling: false,
    });
    let row = match inserted {
        Ok(row) => row,
        Err(e) => return conn.respond(id, Err(internal(e))).await,
    };
    conn.set_owner(&row.id, &conn, token, None);
    conn.watch(&row.id);
    tracing::info!(task = %row.id, tool = name, "legacy task created");
    conn.respond(id, Ok(json!({"task": task_json(&row)}))).await;
    work::spawn(&conn.server, row);
}

pub fn task_json(row: &TaskRow) -> Value {
    let task = Task {
        task_id: row.id.clone(),
        status: row.status,
        status_message: row.status_message.clone(),
        created_at: row.created_at.clone(),
        last_updated_at: row.updated_at.clone(),
        ttl: Some(row.ttl_ms),
        poll_interval: Some(row.poll_interval_ms),
        extra: Map::new(),
    };
    serde_json::to_value(task).unwrap_or(Value::Null)
}

async fn tools_call(conn: &Arc<Conn>, id: RequestId, params: Option<&Value>) {
    let call = match crate::server::parse_call(params) {
        Ok(c) => c,
        Err(e) => return conn.respond(id, Err(e)).await,
    };
    let task = params.and_then(|p| p.get("task")).filter(|t| !t.is_null());
    let token = taskdeck_protocol::meta::params_meta(params).and_then(|m| m.get(meta::PROGRESS_TOKEN)).cloned();
    let name = call.spec.name;
    match (call.spec.task_support, task) {
        (TaskSupport::Forbidden, Some(_)) => {
            let msg = format!("Tool {name} does not support task-augmented execution: call it without params.task");
            conn.respond(id, Err(ErrorObject::new(codes::METHOD_NOT_FOUND, msg))).await
        }
        (TaskSupport::Required, None) => {
            let msg = format!("Tool {name} requires task-augmented execution: call it with params.task");
            conn.respond(id, Err(ErrorObject::new(codes::METHOD_NOT_FOUND, msg))).await
        }
        (_, Some(task)) => {
            let ttl = match task.get("ttl") {
                None | Some(Value::Null) => None,
                Some(v) => match v.as_i64() {
                    Some(ms) if ms > 0 => Some(ms),
                    _ => {
                        let e = invalid_params("params.task.ttl: must be a positive integer (milliseconds)");
                        return conn.respond(id, Err(e)).await;
                    }
                },
            };
            if !task.is_object() {
                return conn.respond(id, Err(invalid_params("params.task: must be an object"))).await;
            }
            let ttl_ms = conn.ttl_for(ttl);
            let made = make_task(conn.clone(), id.clone(), name, Value::Object(call.args), token, ttl_ms);
            match conn.cfg.handle_delay_ms {
                None => made.await,
                Some(ms) => {
                    let late = async move {
                        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                        made.await
                    };
                    // Registered, a cancel before the task exists stops it from being made.
                    if conn.cfg.handle_despite_cancel {
                        tokio::spawn(late);
                    } else {
                        conn.spawn_for(&id, late);
                    }
                }
            }
        }
        (_, None) => {
            // A plain call to an optional tool may still take a while: run it beside the reader.
            let conn2 = conn.clone();
            let rid = id.clone();
            conn.spawn_for(&id, async move {
                let run = Run::inline(&conn2, token);
                let result = work::run_tool(&run, name, &call.args, None).await;
                let result = result
                    .map(|r| serde_json::to_value(r).unwrap_or(Value::Null))
                    .map_err(|_| ErrorObject::new(codes::INTERNAL_ERROR, "the call was interrupted"));
                conn2.respond(rid, result).await;
            });
        }
    }
}

fn list(conn: &Conn, params: Option<&Value>) -> Result<Value, ErrorObject> {
    let after = match params.and_then(|p| p.get("cursor")) {
        None | Some(Value::Null) => None,
        Some(Value::String(c)) => {
            let row = conn.store().get(c).map_err(internal)?;
            match row {
                Some(row) if row.era == Era::Legacy => Some(row),
                _ => return Err(invalid_params("params.cursor: unknown or expired cursor")),
            }
        }
        Some(_) => return Err(invalid_params("params.cursor: must be a string")),
    };
    let size = conn.cfg.list_page_size.max(1);
    let (_, now) = crate::store::now();
    let mut page = conn.store().page(Era::Legacy, after.as_ref(), size + 1).map_err(internal)?;
    let more = page.len() > size;
    page.truncate(size);
    let mut result = json!({
        "tasks": page.iter().filter(|t| !t.expired(now)).map(task_json).collect::<Vec<_>>(),
    });
    if more && let Some(last) = page.last() {
        // The cursor is the last task seen; pages are keyed on creation order, so tasks
        // created or purged meanwhile never shift what comes next.
        result["nextCursor"] = Value::from(last.id.clone());
    }
    Ok(result)
}

async fn cancel(conn: &Arc<Conn>, id: RequestId, params: Option<&Value>) {
    let row = match find(conn, params) {
        Ok(row) => row,
        Err(e) => return conn.respond(id, Err(e)).await,
    };
    let cancelled = {
        let store = conn.store();
        store.request_cancel(&row.id).and_then(|_| {
            store.finish(&row.id, TaskStatus::Cancelled, Some("The task was cancelled by request."), None, None)
        })
    };
    let result = match cancelled {
        Ok(true) => conn.lookup(&row.id, Era::Legacy).map(|row| task_json(&row)),
        Ok(false) => {
            let status = conn.lookup(&row.id, Era::Legacy).map(|r| r.status).unwrap_or(row.status);
            Err(invalid_params(format!("Cannot cancel task: already in terminal status '{status}'")))
        }
        Err(e) => Err(internal(e)),
    };
    let ok = result.is_ok();
    conn.respond(id, result).await;
    if ok {
        conn.wake(&row.id);
        conn.changed(&row.id);
    }
}

/// `tasks/result`: answers once the task is terminal. While it waits, an input_required task's
/// question is (re)sent, which is how a client that reconnected after a restart gets it back.
async fn wait_for_result(conn: Arc<Conn>, id: RequestId, task_id: String) {
    let mut events = conn.events.subscribe();
    loop {
        let row = match conn.lookup(&task_id, Era::Legacy) {
            Ok(row) => row,
            Err(e) => return conn.respond(id, Err(e)).await,
        };
        conn.watch(&row.id);
        if row.status.is_terminal() {
            return conn.respond(id, payload(&row)).await;
        }
        if row.status == TaskStatus::InputRequired {
            ensure_question(&conn, &row).await;
        }
        loop {
            match events.recv().await {
                Ok(changed) if changed == task_id => break,
                Ok(_) => {}
                Err(RecvError::Lagged(_)) => break,
                Err(RecvError::Closed) => return,
            }
        }
    }
}

/// What the original tools/call would have returned.
fn payload(row: &TaskRow) -> Result<Value, ErrorObject> {
    let related = json!({ meta::RELATED_TASK: {"taskId": row.id} });
    match (row.status, &row.result, &row.error) {
        (TaskStatus::Cancelled, _, _) => {
            Err(ErrorObject::new(codes::INTERNAL_ERROR, "no result stored: the task was cancelled before it finished")
                .with_data(json!({"reason": "CANCELLED", "taskId": row.id})))
        }
        (_, Some(Value::Object(result)), _) => {
            let mut result = result.clone();
            result.insert("_meta".into(), related);
            Ok(Value::Object(result))
        }
        (_, _, Some(error)) => Err(serde_json::from_value(error.clone())
            .unwrap_or_else(|_| ErrorObject::new(codes::INTERNAL_ERROR, "the task failed"))),
        _ => Err(ErrorObject::new(codes::INTERNAL_ERROR, "no result stored")),
    }
}

/// Sends the task's question unless one is already awaiting an answer on this connection.
async fn ensure_question(conn: &Arc<Conn>, row: &TaskRow) {
    // The caller's row may predate an answer that just arrived: decide on the stored one. Together
    // with `handle_response` keeping its request outstanding until the answer is stored, this
    // makes sure a question is never sent again once it has been answered.
    let fresh = match conn.store().get(&row.id) {
        Ok(Some(fresh)) => fresh,
        _ => return,
    };
    let row = &fresh;
    if row.status != TaskStatus::InputRequired {
        return;
    }
    let Some(key) = &row.question_key else { return };
    // One request at a time in this era: a tool that asks several at once is modern only.
    let mut pending = crate::question::pending(row);
    if pending.len() != 1 {
        return;
    }
    let asked = pending.remove(0);
    let request_id = {
        let mut state = conn.state();
        if state.era != Some(Era::Legacy) || state.outstanding.values().any(|(t, _)| *t == row.id) {
            return;
        }
        let declared = match asked.method.as_str() {
            methods::SAMPLING_CREATE_MESSAGE => state.legacy_sampling,
            _ => state.legacy_elicitation,
        };
        if declared {
            let request_id = format!("elicit-{}-{}", row.id, conn.next_seq());
            state.outstanding.insert(request_id.clone(), (row.id.clone(), key.clone()));
            Some(request_id)
        } else {
            None
        }
    };
    let Some(request_id) = request_id else {
        let text = match asked.method.as_str() {
            methods::SAMPLING_CREATE_MESSAGE => {
                "the summary needs a language model's reply, and this client cannot be asked for one (it did not \
                 declare the sampling capability)"
            }
            _ => {
                "diagnosis needs a service, and this client cannot be asked for one (it did not declare the \
                 elicitation capability): call the tool again with the missing argument"
            }
        };
        let result = serde_json::to_value(taskdeck_protocol::types::CallToolResult::error_text(text)).ok();
        let finished = conn.store().finish(&row.id, TaskStatus::Failed, Some(text), result.as_ref(), None);
        if matches!(finished, Ok(true)) {
            conn.wake(&row.id);
            conn.changed(&row.id);
        }
        return;
    };
    let mut params = asked.params;
    if let Some(obj) = params.as_object_mut() {
        obj.insert("_meta".into(), json!({ meta::RELATED_TASK: {"taskId": row.id} }));
    }
    tracing::info!(task = %row.id, request = %request_id, method = %asked.method, "asking the client");
    conn.send(Message::request(request_id.as_str(), asked.method.as_str(), params)).await;
}

/// The client's answer to one of our `elicitation/create` requests.
pub async fn handle_response(conn: &Arc<Conn>, resp: Response) {
    let Some(key) = response_key(&resp) else { return };
    // Looked up, not removed, until the answer is stored: meanwhile nobody may ask again.
    let Some((task_id, question_key)) = conn.state().outstanding.get(&key).cloned() else {
        tracing::debug!(id = %key, "response to no outstanding request ignored");
        return;
    };
    match resp {
        Response::Result { mut result, .. } => {
            if let Some(obj) = result.as_object_mut() {
                obj.remove("_meta");
            }
            let stored = conn.store().answer(&task_id, &question_key, &result);
            conn.state().outstanding.remove(&key);
            match stored {
                Ok(true) => {}
                Ok(false) => return tracing::debug!(task = %task_id, "answer to a question no longer open"),
                Err(e) => return tracing::error!(task = %task_id, "{e}"),
            }
            conn.wake(&task_id);
            conn.changed(&task_id);
        }
        Response::Error { error, .. } => {
            conn.state().outstanding.remove(&key);
            // A sampling request has no refusal in its result: the client's error is its answer.
            let sampling = conn.store().get(&task_id).ok().flatten().is_some_and(|row| {
                crate::question::pending(&row).iter().any(|a| a.method == methods::SAMPLING_CREATE_MESSAGE)
            });
            if sampling {
                let answer = json!({ "error": error });
                if matches!(conn.store().answer(&task_id, &question_key, &answer), Ok(true)) {
                    conn.wake(&task_id);
                    conn.changed(&task_id);
                }
                return;
            }
            // The question stays open: the next tasks/result asks again.
            tracing::warn!(task = %task_id, "client could not answer the question: {error}");
        }
    }
}

/// Sends `notifications/tasks/status` for every change of a legacy task, and puts a task's
/// question to the client as soon as it needs one.
pub async fn status_listener(conn: Arc<Conn>) {
    let mut events = conn.events.subscribe();
    loop {
        let received = tokio::select! {
            r = events.recv() => r,
            // The transport is done with this connection (an HTTP session ended).
            _ = conn.closed() => return,
        };
        let task_id = match received {
            Ok(id) => id,
            Err(RecvError::Lagged(n)) => {
                tracing::debug!("status listener skipped {n} events");
                continue;
            }
            Err(RecvError::Closed) => return,
        };
        if conn.state().era != Some(Era::Legacy) || !conn.watches(&task_id) {
            continue;
        }
        let row = match conn.store().get(&task_id) {
            Ok(Some(row)) if row.era == Era::Legacy => row,
            _ => continue,
        };
        conn.send(Message::notification(methods::TASKS_STATUS, Some(task_json(&row)))).await;
        if row.status == TaskStatus::InputRequired {
            ensure_question(&conn, &row).await;
        }
    }
}
