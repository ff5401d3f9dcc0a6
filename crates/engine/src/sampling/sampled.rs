//! The completions `Engine::sample` handed to the user, kept until the user's answer comes, so the
//! answer's note can say which model wrote the reply and the tokens the provider counted for it
//! (the reply itself comes back as content, which carries neither). The CLI's `answer --sample`
//! and the app's review both sample and answer through the same engine, so memory is enough: a
//! completion whose engine went away before the answer leaves a note without tokens, as a reply
//! written by hand does.

use std::collections::VecDeque;
use std::sync::Mutex;

use taskdeck_client::Question;

use super::Completion;

/// Completions kept at most: one per question someone is reviewing; past it the oldest goes.
const KEPT: usize = 32;

struct Kept {
    task: String,
    key: String,
    /// The request as the server made it: a later question that reuses the key (a legacy server
    /// counting its request ids afresh after a reconnect) is another question.
    request: taskdeck_client::QuestionRequest,
    completion: Completion,
}

#[derive(Default)]
pub(crate) struct Sampled {
    kept: Mutex<VecDeque<Kept>>,
}

impl Sampled {
    /// Keeps `completion` as the one sampled for `question` of `task`, in place of any before it.
    pub fn keep(&self, task: &str, question: &Question, completion: Completion) {
        let Ok(mut kept) = self.kept.lock() else { return };
        let key = question.key.to_text();
        kept.retain(|k| !(k.task == task && k.key == key));
        if kept.len() >= KEPT {
            kept.pop_front();
        }
        kept.push_back(Kept { task: task.to_owned(), key, request: question.request.clone(), completion });
    }

    /// The completion last sampled for `question` of `task`, if it is still this question's.
    pub fn of(&self, task: &str, question: &Question) -> Option<Completion> {
        let kept = self.kept.lock().ok()?;
        let key = question.key.to_text();
        kept.iter()
            .find(|k| k.task == task && k.key == key && k.request == question.request)
            .map(|k| k.completion.clone())
    }

    /// Forgets what was sampled for the task's questions once they are answered.
    pub fn answered(&self, task: &str, questions: &[&Question]) {
        let Ok(mut kept) = self.kept.lock() else { return };
        let keys: Vec<String> = questions.iter().map(|q| q.key.to_text()).collect();
        kept.retain(|k| !(k.task == task && keys.contains(&k.key)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use taskdeck_client::{QuestionKey, QuestionRequest};
    use taskdeck_protocol::sampling::CreateMessageResult;

    fn question(key: &str, text: &str) -> Question {
        let params = json!({"messages": [{"role": "user", "content": {"type": "text", "text": text}}], "maxTokens": 9});
        let request = QuestionRequest { method: "sampling/createMessage".into(), params };
        Question::decode(QuestionKey::InputKey(key.into()), Some("t".into()), request)
    }

    fn completion(text: &str) -> Completion {
        Completion { result: CreateMessageResult::text(text, "m"), usage: None }
    }

    #[test]
    fn a_completion_is_found_for_its_own_question_only_until_it_is_answered() {
        let sampled = Sampled::default();
        let (a, b) = (question("a", "hi"), question("b", "hi"));
        sampled.keep("t", &a, completion("one"));
        sampled.keep("t", &a, completion("two"));
        assert_eq!(sampled.of("t", &a), Some(completion("two")), "the last sampled is the one shown");
        assert_eq!(sampled.of("t", &b), None);
        assert_eq!(sampled.of("u", &a), None);
        assert_eq!(sampled.of("t", &question("a", "another request")), None, "a key reused is another question");
        sampled.answered("t", &[&a]);
        assert_eq!(sampled.of("t", &a), None);
    }

    #[test]
    fn past_its_bound_the_oldest_completion_goes() {
        let sampled = Sampled::default();
        let questions: Vec<Question> = (0..=KEPT).map(|i| question(&i.to_string(), "x")).collect();
        for q in &questions {
            sampled.keep("t", q, completion("c"));
        }
        assert_eq!(sampled.of("t", &questions[0]), None);
        assert!(sampled.of("t", &questions[KEPT]).is_some());
    }
}
