//! The webview shows the app's own pages and nothing else: every navigation away and every new
//! window is refused, whatever a page (or a server's text that somehow became a link) asks. Links
//! leave through `open_url`, to the system browser, after the user agreed.

use tauri::Url;
use tauri::webview::NewWindowResponse;

/// Whether `url` is one of the app's own pages: the embedded assets as each platform serves them
/// (`tauri://localhost` on Linux and macOS, `http(s)://tauri.localhost` on Windows).
pub fn is_app_page(url: &Url) -> bool {
    match url.scheme() {
        "tauri" => url.host_str() == Some("localhost"),
        "http" | "https" => url.host_str() == Some("tauri.localhost") && url.port().is_none(),
        _ => false,
    }
}

/// For `on_navigation`: the app's pages load, anything else is refused (and logged, by scheme and
/// host only: the rest is the page's or a server's text).
pub fn allow_navigation(url: &Url) -> bool {
    let allowed = is_app_page(url);
    if !allowed {
        tracing::warn!(scheme = url.scheme(), host = url.host_str().unwrap_or(""), "navigation refused");
    }
    allowed
}

/// For `on_new_window`: never. The app has one window, and a page has no reason to open another.
pub fn refuse_new_window<R: tauri::Runtime>(url: Url) -> NewWindowResponse<R> {
    tracing::warn!(scheme = url.scheme(), host = url.host_str().unwrap_or(""), "new window refused");
    NewWindowResponse::Deny
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_apps_own_pages_may_load() {
        let cases = [
            ("tauri://localhost/", true),
            ("tauri://localhost/index.html#/tasks", true),
            ("http://tauri.localhost/", true),
            ("https://tauri.localhost/assets/index.js", true),
            ("https://example.com/", false),
            ("http://localhost:1420/", false),
            ("http://tauri.localhost:8080/", false),
            ("https://tauri.localhost.example.com/", false),
            ("tauri://evil.example/", false),
            ("file:///etc/passwd", false),
            ("javascript:alert(1)", false),
            ("data:text/html,<script>x</script>", false),
            ("about:blank", false),
            ("blob:tauri://localhost/0c8f", false),
        ];
        for (url, want) in cases {
            let parsed: Url = url.parse().unwrap();
            assert_eq!(is_app_page(&parsed), want, "{url}");
            assert_eq!(allow_navigation(&parsed), want, "{url}");
        }
    }

    #[test]
    fn a_new_window_is_always_refused() {
        let r = refuse_new_window::<tauri::Wry>("tauri://localhost/".parse().unwrap());
        assert!(matches!(r, NewWindowResponse::Deny));
    }
}
