//! The `auto` policy carried out: a sampling request of a server whose policy is
//! `{"auto": {"maxTokensPerTask": N}}` goes to the configured model without asking, while the
//! task's automatic completions stay within N tokens; past it, with no model, or when the model
//! fails, it is asked like any question.
//!
//! The task's driver does it, in turn with the server's reports (the model's reply is part of the
//! task's flow, and nothing the server says meanwhile can take the question away between its
//! record and its answer). What was spent is read from the task's event log, so the budget holds
//! across a restart: each `answer` event approved by the policy counts the output tokens its
//! completion used as the provider counted them, or the `maxTokens` its request allowed when the
//! provider did not say. A request goes out only while what was spent plus its own `maxTokens`
//! fits, so the completions together never exceed the budget.
//!
//! The log keeps, for each request, the request (its `question` event), the completion (the
//! `answer` event's `response`), and the model, tokens and `approved_by: "policy"` (its
//! `data.sampling`, a [`Note`]).

use std::collections::HashSet;

use serde_json::Value;
use taskdeck_client::{Question, QuestionKey, Reply, Session, TaskSnapshot};
use taskdeck_protocol::TaskStatus;
use taskdeck_protocol::sampling::CreateMessageParams;
use taskdeck_store::{Answer, EventKind, TaskEvent, TaskRecord, Update};

use super::{ApprovedBy, Arrival, Note, SamplingPolicy, arrival};
use crate::hub::Hub;
use crate::live::LiveQuestion;

/// What the task shows while a model answers its server's request.
const SAMPLING_MESSAGE: &str = "A model is answering the server's sampling request (automatic, within the budget)";

/// The tokens the task's automatic completions used so far, from its event log.
pub fn spent(events: &[TaskEvent]) -> u64 {
    let notes = events.iter().filter(|e| e.kind == EventKind::Answer).flat_map(|e| {
        let all = e.data.get("answers").and_then(Value::as_array);
        match all {
            Some(all) => all.iter().filter_map(|a| a.get("sampling")).collect::<Vec<_>>(),
            None => e.data.get("sampling").into_iter().collect(),
        }
    });
    notes
        .filter(|n| n.get("approved_by").and_then(Value::as_str) == Some("policy"))
        .filter(|n| n.get("outcome").and_then(Value::as_str) == Some("sent"))
        .map(|n| {
            let used = n.get("tokens").and_then(|t| t.get("output")).and_then(Value::as_u64);
            used.or_else(|| n.get("max_tokens").and_then(Value::as_u64)).unwrap_or(0)
        })
        .fold(0u64, u64::saturating_add)
}

/// The request's params when the server's policy sends it to a model now.
fn goes_to_a_model(hub: &Hub, rec: &TaskRecord, q: &Question) -> Option<CreateMessageParams> {
    let policy = hub.servers.sampling_policy(&rec.server);
    if !matches!(policy, SamplingPolicy::Auto { .. }) || !q.is_sampling() {
        return None;
    }
    let params = q.sampling_params()?;
    let events = match hub.gate.store().events(&rec.id) {
        Ok(events) => events,
        Err(e) => {
            // Without the log the budget cannot be told: the user is asked.
            tracing::warn!(task = %rec.id, "the task's spending could not be read, so the user is asked: {e}");
            return None;
        }
    };
    let spent = spent(&events);
    match arrival(policy, &hub.opts.models, &params, spent) {
        Arrival::Auto => Some(params),
        _ => {
            tracing::info!(task = %rec.id, spent, asked = params.max_tokens, "a sampling request is the user's to answer");
            None
        }
    }
}

/// Answers `q` with the model's completion when the policy says so: records the request, sends
/// the reply, records the answer with its note. False when the question is the user's (nothing
/// was written); true when it was handled here, even if the reply could not be delivered (the
/// question is then recorded, open, for the user).
pub(crate) async fn answer(hub: &Hub, session: &Session, rec: &TaskRecord, q: &Question) -> bool {
    let Some((reply, note, model)) = by_policy(hub, rec, q).await else { return false };
    let asked = Update::Question { question: Box::new(q.clone()), message: q.message.clone() };
    let now = match hub.gate.apply(&rec.id, asked) {
        Ok(now) => now,
        Err(e) => {
            tracing::debug!(task = %rec.id, "the sampling request could not be recorded: {e}");
            return true;
        }
    };
    if let Err(e) = session.reply(&q.key, now.remote_task_id.as_deref(), reply.clone()).await {
        tracing::warn!(task = %rec.id, "the model's reply could not be sent; the user is asked: {e}");
        let connection = hub.servers.connection(&rec.server);
        hub.live.open_question(&rec.id, LiveQuestion { key: q.key.clone(), connection });
        return true;
    }
    tracing::info!(task = %rec.id, %model, "a sampling request answered by the policy");
    let answer = Answer { key: q.key.to_text(), response: crate::reply::stored(&reply, Some(&note)), note: Some(note) };
    hub.gate.apply_quietly(&rec.id, Update::Answer(answer));
    true
}

/// The same for a question of a plain call's round (multi-round-trip requests): the reply the
/// call is sent again with, when the policy answers `q`; the request and its answer are in the
/// log before the call goes again, as the round's other answers are. `None`: the user's question.
pub(crate) async fn for_round(hub: &Hub, rec: &TaskRecord, q: &Question) -> Option<Reply> {
    let (reply, note, model) = by_policy(hub, rec, q).await?;
    let asked = Update::Question { question: Box::new(q.clone()), message: q.message.clone() };
    if let Err(e) = hub.gate.apply(&rec.id, asked) {
        tracing::debug!(task = %rec.id, "the sampling request could not be recorded: {e}");
        return None;
    }
    tracing::info!(task = %rec.id, %model, "a sampling request of a plain call's round answered by the policy");
    let answer = Answer { key: q.key.to_text(), response: crate::reply::stored(&reply, Some(&note)), note: Some(note) };
    hub.gate.apply_quietly(&rec.id, Update::Answer(answer));
    Some(reply)
}

/// The model's reply to `q`, its note and the model's name, when the policy lets it go unasked
/// and the model answered; nothing is written.
async fn by_policy(hub: &Hub, rec: &TaskRecord, q: &Question) -> Option<(Reply, Value, String)> {
    let params = goes_to_a_model(hub, rec, q)?;
    let completion = match hub.opts.models.pick(params.model_preferences.as_ref()) {
        Ok(model) => model.complete(&params).await,
        Err(e) => Err(e),
    };
    let completion = match completion {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(task = %rec.id, "the model could not answer the sampling request, so the user is asked: {e}");
            return None;
        }
    };
    let note = Note::completion(ApprovedBy::Policy, &completion, &params, false).to_value();
    let reply = Reply::Result(serde_json::to_value(&completion.result).unwrap_or_default());
    Some((reply, note, completion.result.model.clone()))
}

/// A modern snapshot's sampling requests that go to a model are answered here, and the snapshot
/// left for [`Hub::report`] without them (nor those answered so, which a poll may list again
/// before the server took the answer). `done` keeps their keys for the task's life.
pub(crate) async fn from_snapshot(
    hub: &Hub,
    session: &Session,
    rec: &TaskRecord,
    s: &TaskSnapshot,
    done: &mut HashSet<String>,
) -> Option<TaskSnapshot> {
    if !matches!(hub.servers.sampling_policy(&rec.server), SamplingPolicy::Auto { .. }) {
        return None;
    }
    let mut changed = false;
    for q in s.questions.iter().filter(|q| q.is_sampling()) {
        let QuestionKey::InputKey(k) = &q.key else { continue };
        if done.contains(k) {
            changed = true;
            continue;
        }
        let now = hub.gate.get(&rec.id).ok()?;
        if now.status.is_terminal() {
            return None;
        }
        if answer(hub, session, &now, q).await {
            done.insert(k.clone());
            changed = true;
        }
    }
    if !changed {
        return None;
    }
    let mut left = s.clone();
    left.questions.retain(|q| !matches!(&q.key, QuestionKey::InputKey(k) if done.contains(k)));
    if left.questions.is_empty() && left.status == TaskStatus::InputRequired {
        // Nothing is the user's: the task works on while the server takes the reply.
        left.status = TaskStatus::Working;
        left.status_message = Some(SAMPLING_MESSAGE.into());
    }
    Some(left)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn answer_event(data: Value) -> TaskEvent {
        TaskEvent {
            id: 1,
            task_id: "t".into(),
            at: chrono::Utc::now(),
            kind: EventKind::Answer,
            from_status: None,
            to_status: None,
            data,
        }
    }

    #[test]
    fn what_was_spent_counts_the_policys_completions_only_by_their_tokens_or_else_what_they_were_allowed() {
        let events = vec![
            answer_event(json!({"sampling": {"approved_by": "policy", "outcome": "sent", "max_tokens": 200,
                "tokens": {"input": 50, "output": 30}}})),
            answer_event(json!({"sampling": {"approved_by": "policy", "outcome": "sent", "max_tokens": 120}})),
            // The user's own replies and refusals cost the budget nothing.
            answer_event(
                json!({"sampling": {"approved_by": "user", "outcome": "sent", "tokens": {"input": 1, "output": 900}}}),
            ),
            answer_event(json!({"response": {"action": "accept"}})),
            answer_event(json!({"answers": [
                {"key": "a", "response": {}},
                {"key": "b", "response": {}, "sampling": {"approved_by": "policy", "outcome": "sent", "max_tokens": 7}}
            ]})),
        ];
        assert_eq!(spent(&events), 30 + 120 + 7);
        assert_eq!(spent(&[]), 0);
    }
}
