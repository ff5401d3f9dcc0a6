//! The era-neutral task API: start a tool call (as a task where the server allows it), observe,
//! answer, cancel, fetch the result, and re-attach to a task after a restart.

use serde_json::{Map, Value, json};
use taskdeck_protocol::elicitation::ElicitResult;
use taskdeck_protocol::types::{CallToolResult, TaskSupport, Tool};
use taskdeck_protocol::{Era, codes, legacy, meta, methods, modern};

use crate::model::{InputRound, QuestionKey, Reply, SessionEvent, Started, TaskSnapshot};
use crate::{ClientError, Session};

/// Options of one tool call.
#[derive(Debug, Clone, Default)]
pub struct StartOptions {
    /// Sent as `_meta.progressToken`; progress notifications come back carrying it. Callers that
    /// keep their own task ids can pass theirs and need no mapping.
    pub progress_token: Option<String>,
    /// Requested retention, legacy `task.ttl`; the server may override it.
    pub ttl_ms: Option<i64>,
}

/// What a call sent again after an [`InputRound`] carries: the answers under the round's keys, and
/// the round's `requestState`, exactly as it came.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RetryInputs {
    pub responses: Vec<(String, Reply)>,
    pub request_state: Option<String>,
}

impl Session {
    /// One tool by name, refreshing the cached list once if it is not there.
    pub async fn tool(&self, name: &str) -> Result<Tool, ClientError> {
        // The one tool is cloned out of the cached list, not the whole list with every schema and
        // description: a plain call's path asks for its tool three times (the run, its driver,
        // the call), and the list's clones were a tenth of the client's allocations per call.
        let cached = self.lock_state().tools.as_ref().map(|tools| tools.iter().find(|t| t.name == name).cloned());
        let found = match cached {
            Some(found) => found,
            None => self.list_tools().await?.into_iter().find(|t| t.name == name),
        };
        if let Some(t) = found {
            return Ok(t);
        }
        self.lock_state().tools = None;
        self.list_tools()
            .await?
            .into_iter()
            .find(|t| t.name == name)
            .ok_or_else(|| ClientError::UnknownTool { server: self.name().into(), tool: name.into() })
    }

    /// Whether a call of `tool` will be made as a task. Modern servers decide per call, so this
    /// is only a forecast there.
    pub fn will_run_as_task(&self, tool: &Tool) -> bool {
        let (era, tasks) = self.era_and_tasks();
        match era {
            Era::Legacy => tasks && tool.task_support() != TaskSupport::Forbidden,
            Era::Modern => tasks,
        }
    }

    /// How the tool declares it runs as a task, where the server declares it per tool (legacy
    /// `execution.taskSupport`); `None` where the server decides per call (modern).
    pub fn task_support(&self, tool: &Tool) -> Option<TaskSupport> {
        match self.era() {
            Era::Legacy => Some(tool.task_support()),
            Era::Modern => None,
        }
    }

    /// Calls a tool. A server that allows it makes it a task and answers with a handle at once;
    /// otherwise the call's result comes back when it is done.
    pub async fn start_tool(&self, name: &str, arguments: Value, opts: &StartOptions) -> Result<Started, ClientError> {
        self.start_tool_with(name, arguments, opts, None).await
    }

    /// Modern: sends a call again after the server answered it with [`Started::InputRequired`],
    /// with the answers to that round (a new request, as the spec asks). The server may answer
    /// with another round.
    pub async fn retry_tool(
        &self,
        name: &str,
        arguments: Value,
        opts: &StartOptions,
        inputs: &RetryInputs,
    ) -> Result<Started, ClientError> {
        if self.era() != Era::Modern {
            return Err(ClientError::Unsupported {
                server: self.name().into(),
                what: "sending a call again with input responses in the 2025-11-25 era".into(),
            });
        }
        self.start_tool_with(name, arguments, opts, Some(inputs)).await
    }

    async fn start_tool_with(
        &self,
        name: &str,
        arguments: Value,
        opts: &StartOptions,
        inputs: Option<&RetryInputs>,
    ) -> Result<Started, ClientError> {
        let tool = self.tool(name).await?;
        match self.era() {
            Era::Legacy => {
                let as_task = self.will_run_as_task(&tool);
                match self.call_legacy(name, &arguments, opts, as_task).await {
                    // A server that needs a task but did not say so in its tool list refuses the
                    // plain `tools/call` itself with -32601/-32600: nothing ran, so it can be sent
                    // again as a task. A result, even an error result whose text names -32601,
                    // means the tool ran: it is never sent twice. (Servers with quirk 4 list such
                    // tools as `required`, and are sent a task in the first place.)
                    Err(ClientError::Rpc { error, method, .. })
                        if !as_task
                            && method == methods::TOOLS_CALL
                            && self.info().tasks
                            && matches!(error.code, codes::METHOD_NOT_FOUND | codes::INVALID_REQUEST) =>
                    {
                        self.call_legacy(name, &arguments, opts, true).await
                    }
                    other => other,
                }
            }
            Era::Modern => self.call_modern(name, &arguments, opts, inputs).await,
        }
    }

    async fn call_legacy(
        &self,
        name: &str,
        arguments: &Value,
        opts: &StartOptions,
        as_task: bool,
    ) -> Result<Started, ClientError> {
        let mut params = call_params(name, arguments, opts);
        if as_task {
            let mut task = Map::new();
            if let Some(ttl) = opts.ttl_ms {
                task.insert("ttl".into(), json!(ttl));
            }
            params.insert("task".into(), Value::Object(task));
        }
        let timeout = if as_task { self.shared.opts.request_timeout } else { self.shared.opts.call_timeout };
        // Until it is answered even a task-augmented call is a request only, with no task to name
        // in a tasks/cancel: it is cancelled in flight like a plain call. Once it is a task,
        // tasks/cancel is the only way (2025-11-25).
        let result = self.tools_call(params, timeout, opts.progress_token.as_deref()).await?;
        if legacy::tasks::CreateTaskResult::matches(&result) {
            let created: legacy::tasks::CreateTaskResult =
                serde_json::from_value(result).map_err(|e| self.invalid(methods::TOOLS_CALL, e))?;
            return Ok(Started::Task(Box::new(self.claim(TaskSnapshot::from_legacy(created.task)))));
        }
        let r: CallToolResult = serde_json::from_value(result).map_err(|e| self.invalid(methods::TOOLS_CALL, e))?;
        Ok(Started::Completed(r))
    }

    async fn call_modern(
        &self,
        name: &str,
        arguments: &Value,
        opts: &StartOptions,
        inputs: Option<&RetryInputs>,
    ) -> Result<Started, ClientError> {
        let mut params = call_params(name, arguments, opts);
        if let Some(inputs) = inputs {
            params.insert("inputResponses".into(), Value::Object(input_responses(inputs.responses.clone())));
            // Absent when the round had none: the spec forbids sending one that was not given.
            if let Some(state) = &inputs.request_state {
                params.insert("requestState".into(), Value::String(state.clone()));
            }
        }
        // Until the server answers, this is a request whatever it becomes: cancellable in flight.
        let result = self.tools_call(params, self.shared.opts.call_timeout, opts.progress_token.as_deref()).await?;
        match modern::result_type(&result) {
            modern::result_type::TASK => {
                let detailed: modern::tasks::DetailedTask =
                    serde_json::from_value(result).map_err(|e| self.invalid(methods::TOOLS_CALL, e))?;
                let snapshot = TaskSnapshot::from_modern(detailed).map_err(|e| self.invalid(methods::TOOLS_CALL, e))?;
                Ok(Started::Task(Box::new(self.claim(snapshot))))
            }
            modern::result_type::COMPLETE => {
                let r: CallToolResult =
                    serde_json::from_value(result).map_err(|e| self.invalid(methods::TOOLS_CALL, e))?;
                Ok(Started::Completed(r))
            }
            modern::result_type::INPUT_REQUIRED => {
                let round = input_round(result).map_err(|e| self.invalid(methods::TOOLS_CALL, e))?;
                Ok(Started::InputRequired(Box::new(round)))
            }
            other => Err(ClientError::Unsupported {
                server: self.name().into(),
                what: format!("a tools/call answer of resultType {other:?}"),
            }),
        }
    }

    /// Sends `tools/call`. Under a progress token the request can be stopped by
    /// [`Session::cancel_call`] until it is answered.
    async fn tools_call(
        &self,
        params: Map<String, Value>,
        timeout: std::time::Duration,
        token: Option<&str>,
    ) -> Result<Value, ClientError> {
        let id = self.next_request_id();
        let _in_flight = token.map(|t| InFlight::track(self, t, &id));
        self.request_as(id, methods::TOOLS_CALL, Value::Object(params), Some(timeout)).await
    }

    /// Tells the server to stop the call started with `progress_token` that has not been answered
    /// yet: `notifications/cancelled` with its request id, which the stdio and legacy HTTP
    /// transports send and the modern HTTP transport carries out by closing the request's stream.
    /// `Ok(true)` when the server was told; `Ok(false)` when no such call is in flight (answered
    /// already: a task it became is stopped with `tasks/cancel`). The call itself goes on waiting
    /// until its caller drops it: a server that answers anyway (it may have finished first, or
    /// made the task before it read the cancel) is heard.
    pub fn cancel_call(&self, progress_token: &str, reason: &str) -> Result<bool, ClientError> {
        let id = self.lock_state().calls.get(progress_token).cloned();
        let Some(id) = id else { return Ok(false) };
        let params = json!({ "requestId": id, "reason": reason });
        self.send(&taskdeck_protocol::Message::notification(methods::CANCELLED, Some(params)))?;
        tracing::info!(server = %self.name(), request = %id, "told the server the call is cancelled");
        Ok(true)
    }

    /// Registers a task with the status filter; delivers a newer status that arrived early.
    fn claim(&self, snapshot: TaskSnapshot) -> TaskSnapshot {
        let early = self.lock_state().tracker.claim(&snapshot);
        if let Some(early) = early {
            self.handler().on_event(SessionEvent::Task(Box::new(early)));
        }
        snapshot
    }

    /// The task's current state, straight from the server.
    pub async fn get_task(&self, task_id: &str) -> Result<TaskSnapshot, ClientError> {
        let result = self
            .request(methods::TASKS_GET, json!({ "taskId": task_id }), Some(self.shared.opts.request_timeout))
            .await?;
        let snapshot = match self.era() {
            Era::Legacy => serde_json::from_value::<legacy::tasks::Task>(result)
                .map(TaskSnapshot::from_legacy)
                .map_err(|e| self.invalid(methods::TASKS_GET, e))?,
            Era::Modern => serde_json::from_value::<modern::tasks::DetailedTask>(result)
                .map_err(|e| self.invalid(methods::TASKS_GET, e))
                .and_then(|d| TaskSnapshot::from_modern(d).map_err(|e| self.invalid(methods::TASKS_GET, e)))?,
        };
        let snapshot = same_task(self, methods::TASKS_GET, task_id, snapshot)?;
        self.lock_state().tracker.record(&snapshot);
        Ok(snapshot)
    }

    /// Re-attaches to a task this client created earlier (for instance before a restart): looks it
    /// up and starts tracking its notifications again.
    pub async fn attach(&self, task_id: &str) -> Result<TaskSnapshot, ClientError> {
        let s = self.get_task(task_id).await?;
        Ok(self.claim(s))
    }

    /// Legacy: waits for the task's result with `tasks/result`, which blocks until the task is
    /// terminal. While it is outstanding the server delivers the task's questions. A task that
    /// ended in a JSON-RPC error yields [`ClientError::Rpc`] with that error.
    /// Modern: the result is part of [`Session::get_task`]; this is unsupported there.
    pub async fn task_result(&self, task_id: &str) -> Result<CallToolResult, ClientError> {
        if self.era() == Era::Modern {
            return Err(ClientError::Unsupported {
                server: self.name().into(),
                what: "tasks/result in the 2026-07-28 era (the result comes with tasks/get)".into(),
            });
        }
        let result = self.request(methods::TASKS_RESULT, json!({ "taskId": task_id }), None).await?;
        serde_json::from_value(result).map_err(|e| self.invalid(methods::TASKS_RESULT, e))
    }

    /// Answers a question, whichever era asked it.
    pub async fn answer(
        &self,
        key: &QuestionKey,
        task_id: Option<&str>,
        answer: &ElicitResult,
    ) -> Result<(), ClientError> {
        self.reply(key, task_id, Reply::Result(serde_json::to_value(answer).unwrap_or_default())).await
    }

    /// Answers a question of any kind (an elicitation, a sampling request), whichever era asked it.
    pub async fn reply(&self, key: &QuestionKey, task_id: Option<&str>, reply: Reply) -> Result<(), ClientError> {
        match key {
            QuestionKey::Request(id) => self.respond_to_question(id, reply),
            QuestionKey::InputKey(k) => {
                let task_id = task_id.ok_or_else(|| ClientError::NoSuchQuestion {
                    server: self.name().into(),
                    key: format!("{key} (no task given)"),
                })?;
                self.respond_inputs(task_id, vec![(k.clone(), reply)]).await
            }
        }
    }

    /// Modern: answers several of a task's `inputRequests` in one `tasks/update`. An input response
    /// can only be a result, so a refusal goes as the decline of an `ElicitResult`, the one refusal
    /// the schema allows there and which a server reads as such.
    pub async fn respond_inputs(&self, task_id: &str, replies: Vec<(String, Reply)>) -> Result<(), ClientError> {
        let responses = input_responses(replies);
        self.request(
            methods::TASKS_UPDATE,
            json!({ "taskId": task_id, "inputResponses": responses }),
            Some(self.shared.opts.request_timeout),
        )
        .await
        .map(|_| ())
    }

    /// Asks the server to cancel a task. Legacy servers answer with the task (now `cancelled`);
    /// modern ones only acknowledge, and the task may still end otherwise.
    pub async fn cancel_task(&self, task_id: &str) -> Result<Option<TaskSnapshot>, ClientError> {
        let result = self
            .request(methods::TASKS_CANCEL, json!({ "taskId": task_id }), Some(self.shared.opts.request_timeout))
            .await?;
        match self.era() {
            Era::Legacy => {
                let task: legacy::tasks::Task =
                    serde_json::from_value(result).map_err(|e| self.invalid(methods::TASKS_CANCEL, e))?;
                let s = same_task(self, methods::TASKS_CANCEL, task_id, TaskSnapshot::from_legacy(task))?;
                self.lock_state().tracker.record(&s);
                Ok(Some(s))
            }
            Era::Modern => Ok(None),
        }
    }
}

/// A `tools/call` in flight under its progress token, for [`Session::cancel_call`]; dropped with
/// the call, answered or given up.
struct InFlight<'a> {
    session: &'a Session,
    token: String,
    id: taskdeck_protocol::RequestId,
}

impl<'a> InFlight<'a> {
    fn track(session: &'a Session, token: &str, id: &taskdeck_protocol::RequestId) -> InFlight<'a> {
        session.lock_state().calls.insert(token.to_owned(), id.clone());
        InFlight { session, token: token.to_owned(), id: id.clone() }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut state = self.session.lock_state();
        if state.calls.get(&self.token) == Some(&self.id) {
            state.calls.remove(&self.token);
        }
        drop(state);
        // A call dropped before its answer: the answer, if it comes, is nobody's.
        self.session.forget_request(&self.id);
    }
}

/// Replies as an `InputResponses` map. An input response can only be a result, so a refusal goes
/// as the decline of an `ElicitResult`, the one refusal the schema allows there.
fn input_responses(replies: Vec<(String, Reply)>) -> Map<String, Value> {
    let mut responses = Map::new();
    for (key, reply) in replies {
        let value = match reply {
            Reply::Result(v) => v,
            Reply::Refused(_) => serde_json::to_value(ElicitResult::decline()).unwrap_or_default(),
        };
        responses.insert(key, value);
    }
    responses
}

/// An `InputRequiredResult` as a round. It must carry `inputRequests`, `requestState` or both; a
/// state too large to hold is refused rather than cut, since it goes back unchanged or not at all.
fn input_round(mut result: Value) -> Result<InputRound, String> {
    let requests = match result.get_mut("inputRequests").map(Value::take) {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => Some(m),
        Some(_) => return Err("inputRequests is not an object".into()),
    };
    let request_state = match result.get_mut("requestState").map(Value::take) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.len() > taskdeck_protocol::limits::REQUEST_STATE_BYTES => {
            return Err(format!(
                "requestState is {} bytes, more than the {} Taskdeck holds",
                s.len(),
                taskdeck_protocol::limits::REQUEST_STATE_BYTES
            ));
        }
        Some(Value::String(s)) => Some(s),
        Some(_) => return Err("requestState is not a string".into()),
    };
    if requests.is_none() && request_state.is_none() {
        return Err("an input_required result with neither inputRequests nor requestState".into());
    }
    let questions = crate::model::questions_of(None, requests.unwrap_or_default())?;
    Ok(InputRound { questions, request_state })
}

fn call_params(name: &str, arguments: &Value, opts: &StartOptions) -> Map<String, Value> {
    let mut params = Map::new();
    params.insert("name".into(), json!(name));
    params.insert("arguments".into(), arguments.clone());
    if let Some(token) = &opts.progress_token {
        params.insert("_meta".into(), json!({ meta::PROGRESS_TOKEN: token }));
    }
    params
}

/// Refuses an answer about another task than the one asked about: applied, it would give our
/// task another one's status.
fn same_task(session: &Session, method: &str, asked: &str, s: TaskSnapshot) -> Result<TaskSnapshot, ClientError> {
    if s.task_id == asked {
        return Ok(s);
    }
    tracing::warn!(server = %session.name(), method, asked, answered = %s.task_id, "an answer about another task was refused");
    Err(ClientError::WrongTask {
        server: session.name().into(),
        method: method.into(),
        asked: asked.into(),
        answered: s.task_id,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use taskdeck_protocol::question::{Asks, QuestionKey};

    use super::input_round;

    #[test]
    fn an_input_required_result_becomes_a_round_of_questions_with_its_state() {
        let round = input_round(json!({
            "resultType": "input_required",
            "inputRequests": {
                "ok": {"method": "elicitation/create", "params": {"mode": "form", "message": "Sure?",
                    "requestedSchema": {"type": "object", "properties": {"yes": {"type": "boolean"}}}}},
                "where": {"method": "roots/list", "params": {}},
            },
            "requestState": "opaque",
        }))
        .unwrap();
        assert_eq!(round.request_state.as_deref(), Some("opaque"));
        assert_eq!(round.questions[0].key, QuestionKey::InputKey("ok".into()));
        assert_eq!(round.questions[0].message.as_deref(), Some("Sure?"));
        assert_eq!(round.questions[1].asks, Asks::Roots);
        // A state alone is a round too: the call goes again at once with it.
        let bare = input_round(json!({"resultType": "input_required", "requestState": "s"})).unwrap();
        assert!(bare.questions.is_empty());
    }

    #[test]
    fn an_input_required_result_that_cannot_be_answered_is_refused() {
        let refused = |v| input_round(v).unwrap_err();
        assert!(refused(json!({"resultType": "input_required"})).contains("neither"));
        assert!(refused(json!({"inputRequests": []})).contains("not an object"));
        assert!(refused(json!({"requestState": 7})).contains("not a string"));
        assert!(refused(json!({"inputRequests": {"k": "no"}})).contains("\"k\""));
        let huge = "s".repeat(taskdeck_protocol::limits::REQUEST_STATE_BYTES + 1);
        assert!(refused(json!({"requestState": huge})).contains("more than"));
    }
}
