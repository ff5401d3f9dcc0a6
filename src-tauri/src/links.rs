//! Which web links the app opens: only one the engine holds for a task (its pending URL question,
//! or a `resource_link` in its result), named by the task and which of its links, and only when the
//! page asks for exactly that address. Whatever else a page passes is refused.

use serde::Deserialize;
use serde_json::Value;
use taskdeck_engine::{ErrorCode, TaskRecord};
use taskdeck_protocol::question::Asks;
use taskdeck_protocol::url_check::UrlCheck;
use ts_rs::TS;

use crate::commands::CommandError;

/// Which of a task's links: the one its pending URL question asks to visit, or the
/// `resource_link` at `index` in its result's `content`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum OfferedUrl {
    Question,
    ResultLink { index: usize },
}

/// The address the task offers as `which`, if it offers one there.
pub fn offered(task: &TaskRecord, which: OfferedUrl) -> Option<&str> {
    match which {
        OfferedUrl::Question => match &task.question.as_ref()?.asks {
            Asks::Url { url, .. } => Some(url),
            _ => None,
        },
        OfferedUrl::ResultLink { index } => {
            let part = task.result.as_ref()?.get("content")?.as_array()?.get(index)?;
            if part.get("type").and_then(Value::as_str) != Some("resource_link") {
                return None;
            }
            part.get("uri")?.as_str()
        }
    }
}

/// The address to hand to the browser, when the task offers exactly `url` as `which` and the one
/// reading of server URLs (`UrlCheck`, which the consent dialog showed) does not refuse it: its
/// `href`, the form the user saw (ASCII, the host in punycode). Refusals are `invalid_url`.
pub fn checked(task: &TaskRecord, which: OfferedUrl, url: &str) -> Result<String, CommandError> {
    let refuse = |why: &str| Err(CommandError::new(ErrorCode::InvalidUrl, why.to_owned()));
    match offered(task, which) {
        Some(held) if held == url => {}
        Some(_) => return refuse("this is not the address the task offers there"),
        None => return refuse("the task offers no link there"),
    }
    let check = UrlCheck::of(url);
    if let Some(refusal) = check.warnings.iter().find(|w| w.refuses) {
        return refuse(&refusal.message);
    }
    match check.href {
        Some(href) if check.host.as_deref().is_some_and(|h| !h.is_empty()) => Ok(href),
        _ => refuse("this is not a web address"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn asking(url: &str) -> TaskRecord {
        let params = json!({"mode": "url", "message": "Sign in", "url": url, "elicitationId": "e1"});
        crate::testing::record(json!({
            "status": "input_required",
            "question": {"key": "k", "request": {"method": "elicitation/create", "params": params}},
        }))
    }

    fn finished(content: Value) -> TaskRecord {
        crate::testing::record(json!({"status": "completed", "result": {"content": content}}))
    }

    fn refused(r: Result<String, CommandError>) -> bool {
        matches!(r, Err(e) if e.code == ErrorCode::InvalidUrl)
    }

    #[test]
    fn a_url_questions_address_opens_and_no_other() {
        let t = asking("https://auth.example.com/login?x=1");
        assert_eq!(
            checked(&t, OfferedUrl::Question, "https://auth.example.com/login?x=1").ok().as_deref(),
            Some("https://auth.example.com/login?x=1")
        );
        assert!(
            refused(checked(&t, OfferedUrl::Question, "https://evil.example/")),
            "an address the task did not offer"
        );
        assert!(
            refused(checked(&t, OfferedUrl::ResultLink { index: 0 }, "https://auth.example.com/login?x=1")),
            "no result yet"
        );
    }

    #[test]
    fn an_international_address_opens_as_the_dialog_showed_it() {
        let url = "https://bücher.example/katalog";
        let opened = checked(&asking(url), OfferedUrl::Question, url).ok();
        assert_eq!(opened.as_deref(), Some("https://xn--bcher-kva.example/katalog"));
    }

    #[test]
    fn a_result_links_address_opens_by_its_index() {
        let t = finished(json!([
            {"type": "text", "text": "https://text.example/ is only text"},
            {"type": "resource_link", "uri": "https://docs.example/report", "name": "report"},
            {"type": "resource", "resource": {"uri": "https://embedded.example/", "text": "x"}},
        ]));
        assert!(checked(&t, OfferedUrl::ResultLink { index: 1 }, "https://docs.example/report").is_ok());
        assert!(
            refused(checked(&t, OfferedUrl::ResultLink { index: 0 }, "https://text.example/")),
            "text is not a link"
        );
        assert!(
            refused(checked(&t, OfferedUrl::ResultLink { index: 2 }, "https://embedded.example/")),
            "an embedded resource is not a link"
        );
        assert!(refused(checked(&t, OfferedUrl::ResultLink { index: 9 }, "https://docs.example/report")));
        assert!(refused(checked(&t, OfferedUrl::Question, "https://docs.example/report")), "no question");
    }

    #[test]
    fn an_offered_address_that_is_not_a_plain_web_link_is_still_refused() {
        for url in [
            "javascript:alert(1)",
            "file:///etc/passwd",
            "https://user:pw@example.com/",
            "https://user@example.com/",
            "not a url",
            "tauri://localhost/",
        ] {
            assert!(refused(checked(&asking(url), OfferedUrl::Question, url)), "{url}");
            let link = finished(json!([{"type": "resource_link", "uri": url, "name": "x"}]));
            assert!(refused(checked(&link, OfferedUrl::ResultLink { index: 0 }, url)), "{url}");
        }
        assert!(checked(&asking("http://plain.example/"), OfferedUrl::Question, "http://plain.example/").is_ok());
    }
}
