//! Protocol revision 2026-07-28 with the `io.modelcontextprotocol/tasks` extension: no handshake,
//! capabilities on every request, flat task handles, polling through `tasks/get`, answers through
//! `tasks/update`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use taskdeck_protocol::modern::request_meta::RequestEnvelope;
use taskdeck_protocol::modern::result_type;
use taskdeck_protocol::modern::tasks::{DetailedTask, InputRequest, Task};
use taskdeck_protocol::types::TaskSupport;
use taskdeck_protocol::{Era, ErrorObject, Message, Request, RequestId, TaskStatus, codes, meta, methods};

use crate::legacy::task_id;
use crate::server::{Conn, Server, internal, invalid_params};
use crate::store::{NewTask, TaskRow};
use crate::tools::{self, ToolSpec};
use crate::work::{self, Run};

/// How long a client may cache discovery and the tool list: the catalogue is compiled in.
const CACHE_TTL_MS: i64 = 3_600_000;

pub async fn handle_request(conn: &Arc<Conn>, req: Request, envelope: RequestEnvelope) {
    let id = req.id.clone();
    let params = req.params.as_ref();
    let needs_tasks = matches!(req.method.as_str(), methods::TASKS_GET | methods::TASKS_UPDATE | methods::TASKS_CANCEL);
    if needs_tasks && !envelope.declares_tasks() {
        return conn.respond(id, Err(missing_tasks_extension())).await;
    }
    let result = match req.method.as_str() {
        methods::SERVER_DISCOVER => return discover(conn, id).await,
        methods::PING => Ok(json!({"resultType": result_type::COMPLETE})),
        methods::TOOLS_LIST => Ok(json!({
            "tools": tools::TOOLS.iter().map(tool_entry).collect::<Vec<_>>(),
            "cacheScope": "public",
            "ttlMs": CACHE_TTL_MS,
            "resultType": result_type::COMPLETE,
        })),
        methods::TOOLS_CALL => return tools_call(conn, id, params, &envelope).await,
        methods::TASKS_GET => task_id(params).and_then(|t| conn.lookup(t, Era::Modern)).map(|r| detailed(conn, &r)),
        methods::TASKS_UPDATE => update(conn, params),
        methods::TASKS_CANCEL => cancel(conn, params),
        methods::SUBSCRIPTIONS_LISTEN => return listen(conn, id, params, &envelope).await,
        methods::INITIALIZE => Err(ErrorObject::new(
            codes::INVALID_REQUEST,
            "this connection already speaks 2026-07-28 (requests carry their protocol version in _meta)",
        )),
        other => Err(ErrorObject::new(codes::METHOD_NOT_FOUND, format!("Method not found: {other}"))),
    };
    conn.respond(id, result).await;
}

/// `subscriptions/listen` with `taskIds`: acknowledges the tasks it knows, then sends
/// `notifications/tasks` (the task as `tasks/get` would give it) on every change of one of them,
/// and ends the subscription with its response once they have all ended. Other kinds of
/// notification are not offered, so the acknowledgement leaves them out. With
/// `--listen-for-ms` the subscription ends with an error after that long, as a dropped one would.
async fn listen(conn: &Arc<Conn>, id: RequestId, params: Option<&Value>, envelope: &RequestEnvelope) {
    let asked: Vec<String> = params
        .and_then(|p| p.get("notifications"))
        .and_then(|n| n.get("taskIds"))
        .and_then(Value::as_array)
        .map(|ids| ids.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    if !asked.is_empty() && !envelope.declares_tasks() {
        return conn.respond(id, Err(missing_tasks_extension())).await;
    }
    let known: Vec<String> = asked.into_iter().filter(|t| conn.lookup(t, Era::Modern).is_ok()).collect();
    let on_stream = json!({ meta::SUBSCRIPTION_ID: id });
    let ack = json!({ "_meta": on_stream, "notifications": { "taskIds": known } });
    let mut events = conn.events.subscribe();
    conn.send(Message::notification(methods::SUBSCRIPTIONS_ACKNOWLEDGED, Some(ack))).await;
    let conn2 = conn.clone();
    let rid = id.clone();
    let drop_at = conn.cfg.listen_for_ms.map(|ms| tokio::time::Instant::now() + Duration::from_millis(ms));
    conn.spawn_for(&id, async move {
        let status = |t: &str| conn2.lookup(t, Era::Modern).map(|r| r.status.is_terminal()).unwrap_or(true);
        loop {
            if known.iter().all(|t| status(t)) {
                let done = json!({ "resultType": result_type::COMPLETE, "_meta": on_stream });
                return conn2.respond(rid, Ok(done)).await;
            }
            let next = async {
                match drop_at {
                    Some(at) if tokio::time::Instant::now() >= at => None,
                    Some(at) => tokio::time::timeout_at(at, events.recv()).await.ok(),
                    None => Some(events.recv().await),
                }
            };
            let changed = match next.await {
                Some(Ok(t)) => t,
                Some(Err(tokio::sync::broadcast::error::RecvError::Lagged(_))) => continue,
                Some(Err(tokio::sync::broadcast::error::RecvError::Closed)) => return,
                None => {
                    tracing::info!(subscription = %rid, "the subscription is dropped (--listen-for-ms)");
                    let dropped = ErrorObject::new(codes::INTERNAL_ERROR, "the subscription was dropped");
                    return conn2.respond(rid, Err(dropped)).await;
                }
            };
            if !known.contains(&changed) {
                continue;
            }
            let Ok(row) = conn2.lookup(&changed, Era::Modern) else { continue };
            let mut body = detailed(&conn2, &row);
            if let Some(obj) = body.as_object_mut() {
                obj.remove("resultType");
                // Beside what the task's own `_meta` says (its progress).
                match obj.get_mut("_meta").and_then(Value::as_object_mut) {
                    Some(m) => {
                        m.insert(meta::SUBSCRIPTION_ID.into(), json!(rid));
                    }
                    None => {
                        obj.insert("_meta".into(), on_stream.clone());
                    }
                }
            }
            conn2.send(Message::notification(methods::TASKS_NOTIFICATION, Some(body))).await;
        }
    });
}

fn missing_tasks_extension() -> ErrorObject {
    ErrorObject::new(codes::MISSING_REQUIRED_CLIENT_CAPABILITY, "Missing required client capability")
        .with_data(json!({"requiredCapabilities": {"extensions": { meta::TASKS_EXTENSION: {} }}}))
}

pub async fn discover(conn: &Conn, id: RequestId) {
    let result = json!({
        "supportedVersions": [taskdeck_protocol::modern::PROTOCOL_VERSION],
        "capabilities": {
            "tools": {},
            "logging": {},
            "extensions": { meta::TASKS_EXTENSION: {} },
        },
        "instructions": crate::INSTRUCTIONS,
        "cacheScope": "public",
        "ttlMs": CACHE_TTL_MS,
        "resultType": result_type::COMPLETE,
    });
    conn.respond(id, Ok(result)).await;
}

fn tool_entry(spec: &ToolSpec) -> Value {
    // The extension has no per-tool task annotation: the server decides per call.
    spec.listed(None)
}

fn task_fields(row: &TaskRow) -> Task {
    Task {
        task_id: row.id.clone(),
        status: row.status,
        status_message: row.status_message.clone(),
        created_at: row.created_at.clone(),
        last_updated_at: row.updated_at.clone(),
        ttl_ms: Some(row.ttl_ms),
        poll_interval_ms: Some(row.poll_interval_ms),
    }
}

fn with_result_type(mut v: Value, kind: &str) -> Value {
    if let Some(obj) = v.as_object_mut() {
        obj.insert("resultType".into(), Value::from(kind));
    }
    v
}

async fn tools_call(conn: &Arc<Conn>, id: RequestId, params: Option<&Value>, envelope: &RequestEnvelope) {
    let call = match crate::server::parse_call(params) {
        Ok(c) => c,
        Err(e) => return conn.respond(id, Err(e)).await,
    };
    let name = call.spec.name;
    if name == tools::PUBLISH_NOTES {
        let mut entries = Vec::new();
        let answer = crate::publish::modern_call(&call.args, params, envelope, &mut entries);
        // Before the answer, on the request's own stream, at the level the request asked for.
        for (level, text) in entries {
            if crate::work::wanted_at(envelope.log_level.as_deref(), level) {
                let entry = json!({"level": level, "logger": crate::publish::LOGGER, "data": text});
                conn.send(Message::notification(methods::LOG_MESSAGE, Some(entry))).await;
            }
        }
        return conn.respond(id, answer).await;
    }
    let as_task = match call.spec.task_support {
        TaskSupport::Forbidden => false,
        TaskSupport::Optional => envelope.declares_tasks(),
        TaskSupport::Required if envelope.declares_tasks() => true,
        TaskSupport::Required => return conn.respond(id, Err(missing_tasks_extension())).await,
    };
    if !as_task {
        let level = envelope.log_level.clone();
        let conn2 = conn.clone();
        let rid = id.clone();
        conn.spawn_for(&id, async move {
            let run = Run::inline(&conn2, None).logging_at(level);
            let result = work::run_tool(&run, name, &call.args, None).await;
            let result = result
                .map(|r| with_result_type(serde_json::to_value(r).unwrap_or(Value::Null), result_type::COMPLETE))
                .map_err(|_| ErrorObject::new(codes::INTERNAL_ERROR, "the call was interrupted"));
            conn2.respond(rid, result).await;
        });
        return;
    }
    let args = Value::Object(call.args);
    let inserted = conn.store().insert(NewTask {
        tool: name,
        arguments: &args,
        era: Era::Modern,
        progress_token: None,
        // The extension ignores `params.task`, so there is no requested TTL in this era.
        ttl_ms: conn.ttl_for(None),
        poll_interval_ms: conn.cfg.poll_interval_ms,
        client_elicitation: envelope.declares_elicitation(),
        client_sampling: envelope.declares_sampling(),
    });
    let row = match inserted {
        Ok(row) => row,
        Err(e) => return conn.respond(id, Err(internal(e))).await,
    };
    // Not for progress (the extension carries it on the task): for the log entries the work sends.
    conn.set_owner(&row.id, conn, None, envelope.log_level.clone());
    tracing::info!(task = %row.id, tool = name, "modern task created");
    let handle = with_result_type(serde_json::to_value(task_fields(&row)).unwrap_or(Value::Null), result_type::TASK);
    conn.respond(id, Ok(handle)).await;
    work::spawn(&conn.server, row);
}

/// `tasks/get`: the task plus whatever its status carries.
fn detailed(server: &Server, row: &TaskRow) -> Value {
    let mut d = DetailedTask {
        task: task_fields(row),
        input_requests: None,
        result: None,
        error: None,
        result_type: Some(result_type::COMPLETE.into()),
        meta: None,
        extra: Map::new(),
    };
    match row.status {
        TaskStatus::InputRequired => {
            let mut requests = Map::new();
            for asked in crate::question::pending(row) {
                let req = InputRequest { method: asked.method, params: asked.params };
                requests.insert(asked.key, serde_json::to_value(req).unwrap_or(Value::Null));
            }
            d.input_requests = Some(requests);
        }
        TaskStatus::Completed => {
            let result = row.result.clone().unwrap_or_else(|| json!({"content": []}));
            d.result = Some(with_result_type(result, result_type::COMPLETE));
        }
        TaskStatus::Failed => {
            d.error = Some(
                row.error
                    .clone()
                    .and_then(|e| serde_json::from_value(e).ok())
                    .unwrap_or_else(|| ErrorObject::new(codes::INTERNAL_ERROR, "the task failed")),
            );
        }
        TaskStatus::Working | TaskStatus::Cancelled => {}
    }
    if !row.status.is_terminal()
        && let Some(p) = server.progress_of(&row.id)
    {
        let mut m = Map::new();
        m.insert(meta::TASK_PROGRESS.into(), serde_json::to_value(p).unwrap_or(Value::Null));
        d.meta = Some(m);
    }
    serde_json::to_value(d).unwrap_or(Value::Null)
}

fn ack() -> Value {
    json!({"resultType": result_type::COMPLETE})
}

fn update(server: &Server, params: Option<&Value>) -> Result<Value, ErrorObject> {
    let row = server.lookup(task_id(params)?, Era::Modern)?;
    let responses = match params.and_then(|p| p.get("inputResponses")) {
        Some(Value::Object(r)) => r,
        Some(_) => return Err(invalid_params("params.inputResponses: must be an object")),
        None => return Err(invalid_params("params.inputResponses: required")),
    };
    let Some(key) = row.question_key.as_deref() else { return Ok(ack()) };
    let pending = crate::question::pending(&row);
    // Keys that are not outstanding (stale, repeated or made up) are ignored, as the extension asks.
    let given: Vec<_> = pending.iter().filter_map(|a| responses.get(&a.key).map(|r| (a, r))).collect();
    if given.is_empty() {
        return Ok(ack());
    }
    for (asked, response) in &given {
        if !crate::question::fits(&asked.method, response) {
            let what = match asked.method.as_str() {
                methods::SAMPLING_CREATE_MESSAGE => "a sampling result ({role, content, model}) or a decline",
                _ => "an elicitation result ({action, content?})",
            };
            return Err(invalid_params(format!("params.inputResponses.{}: must be {what}", asked.key)));
        }
    }
    let stored = match &row.question {
        // Several at once: a partial set is kept (the extension allows it) and the task waits for
        // the rest.
        Some(q) if crate::question::is_several(q) => {
            let mut answers = row.answer.clone().and_then(|a| a.as_object().cloned()).unwrap_or_default();
            for (asked, response) in &given {
                answers.insert(asked.key.clone(), (*response).clone());
            }
            let complete = given.len() == pending.len();
            let answers = Value::Object(answers);
            server.store().answer_part(&row.id, key, row.answer.as_ref(), &answers, complete).map_err(internal)?
        }
        _ => server.store().answer(&row.id, key, given[0].1).map_err(internal)?,
    };
    if stored {
        server.wake(&row.id);
        server.changed(&row.id);
    }
    Ok(ack())
}

fn cancel(server: &Server, params: Option<&Value>) -> Result<Value, ErrorObject> {
    let row = server.lookup(task_id(params)?, Era::Modern)?;
    // Cooperative: the worker moves the task to cancelled at its next step.
    if server.store().request_cancel(&row.id).map_err(internal)? {
        server.wake(&row.id);
    }
    Ok(ack())
}
