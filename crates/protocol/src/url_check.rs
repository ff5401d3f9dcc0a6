//! Where an address a server offers would take the user, worked out once for every front end.
//!
//! A URL-mode elicitation (and, in the UI, a result's link) is an address a server chose. The spec
//! asks the client to show the whole URL and make its domain clear before anything opens it; the
//! CLI and the app both read the [`UrlCheck`] made here, so they refuse and warn alike.
//!
//! The registrable domain is a heuristic, not the Public Suffix List (which would add a list of
//! ~10,000 rules to every build for a line of emphasis): the last two labels of the host, or the
//! last three when the second-last is a common second-level label under a two-letter country code
//! (`example.co.uk`, `example.com.au`). It errs towards showing more of the host, never less, and
//! does not know private suffixes (`user.github.io` is shown as `github.io`).

use serde::Serialize;
use url::{Host, Url};

/// What opening an address would mean: the normalised address a browser is given, the host it
/// reaches, and what the user must be told before agreeing.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UrlCheck {
    /// The address as a browser is given it (WHATWG serialisation: ASCII only, the host in
    /// punycode); `None` when Taskdeck refuses to open it (see `warnings`).
    pub href: Option<String>,
    /// The scheme, lower-cased; empty when the text is not a URL at all.
    pub scheme: String,
    /// `http` or `https`: the only addresses Taskdeck hands to a browser.
    pub scheme_ok: bool,
    /// The host as it is resolved (punycode for an international name).
    pub host: Option<String>,
    /// The part of the host its owner registered, the part a person should read (see the module's
    /// note on how it is found).
    pub registrable_domain: Option<String>,
    /// Refusals first, then warnings, each with the sentence both front ends show.
    pub warnings: Vec<UrlWarning>,
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UrlWarning {
    pub kind: UrlWarningKind,
    /// Whether Taskdeck refuses to open the address ([`UrlWarningKind::refuses`]), so no front end
    /// keeps its own list.
    pub refuses: bool,
    pub message: String,
}

impl UrlWarning {
    fn new(kind: UrlWarningKind, message: String) -> UrlWarning {
        UrlWarning { kind, refuses: kind.refuses(), message }
    }
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UrlWarningKind {
    /// Refused: not a URL.
    Invalid,
    /// Refused: not http(s): `javascript:`, `file:`, `data:`, a custom scheme.
    NotWeb,
    /// Refused: a user name or password in the address, the old trick for a host that reads as another.
    Credentials,
    /// Plain http: anyone on the way can read or change the page.
    NotEncrypted,
    /// An international name, shown in punycode (`xn--`): it may look like another site.
    Punycode,
    /// A host label mixing scripts (Latin with Cyrillic, say), the usual form of a look-alike name.
    MixedScript,
}

impl UrlWarningKind {
    /// Whether Taskdeck refuses to open the address at all.
    pub fn refuses(self) -> bool {
        matches!(self, UrlWarningKind::Invalid | UrlWarningKind::NotWeb | UrlWarningKind::Credentials)
    }
}

impl UrlCheck {
    /// Reads `text` as an address a server wants opened. Never fails: what cannot be opened says why.
    pub fn of(text: &str) -> UrlCheck {
        let url = match Url::parse(text) {
            Ok(u) => u,
            Err(e) => {
                let scheme = text.split_once(':').map(|(s, _)| s.trim().to_ascii_lowercase()).unwrap_or_default();
                let scheme = if is_scheme(&scheme) { scheme } else { String::new() };
                return refused(scheme, UrlWarningKind::Invalid, format!("This is not a valid address ({e})."));
            }
        };
        let scheme = url.scheme().to_owned();
        if scheme != "https" && scheme != "http" {
            let message = format!("Taskdeck only opens web addresses (http, https), not {scheme}: links.");
            return refused(scheme, UrlWarningKind::NotWeb, message);
        }
        if !url.username().is_empty() || url.password().is_some() {
            let message = "The address carries a user name or password; Taskdeck will not open it.".to_owned();
            return refused(scheme, UrlWarningKind::Credentials, message);
        }
        let mut warnings = Vec::new();
        if scheme == "http" {
            warnings.push(UrlWarning::new(
                UrlWarningKind::NotEncrypted,
                "Not encrypted (http): anyone on the way can read or change this page.".into(),
            ));
        }
        let (host, registrable_domain) = match url.host() {
            Some(Host::Domain(d)) => {
                warnings.extend(host_warnings(d));
                (Some(d.to_owned()), Some(registrable_domain(d)))
            }
            // An address is its own owner; an IPv6 host keeps the brackets it is written with.
            Some(Host::Ipv4(ip)) => (Some(ip.to_string()), Some(ip.to_string())),
            Some(Host::Ipv6(ip)) => (Some(format!("[{ip}]")), Some(format!("[{ip}]"))),
            None => (None, None),
        };
        UrlCheck { href: Some(url.into()), scheme, scheme_ok: true, host, registrable_domain, warnings }
    }

    /// Whether Taskdeck hands this address to a browser (after the user agrees).
    pub fn can_open(&self) -> bool {
        self.href.is_some()
    }
}

fn refused(scheme: String, kind: UrlWarningKind, message: String) -> UrlCheck {
    UrlCheck {
        href: None,
        scheme_ok: scheme == "http" || scheme == "https",
        scheme,
        host: None,
        registrable_domain: None,
        warnings: vec![UrlWarning::new(kind, message)],
    }
}

fn is_scheme(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
}

fn host_warnings(ascii: &str) -> Vec<UrlWarning> {
    let mut out = Vec::new();
    if !ascii.split('.').any(|l| l.starts_with("xn--")) {
        return out;
    }
    let (unicode, _) = idna::domain_to_unicode(ascii);
    out.push(UrlWarning::new(
        UrlWarningKind::Punycode,
        format!(
            "An international name: {ascii} is displayed as “{}”, which may imitate another site.",
            visible(&unicode)
        ),
    ));
    if let Some(label) = unicode.split('.').find(|l| mixes_scripts(l)) {
        out.push(UrlWarning::new(
            UrlWarningKind::MixedScript,
            format!(
                "“{}” mixes alphabets (such as Latin and Cyrillic), the usual sign of a look-alike name.",
                visible(label)
            ),
        ));
    }
    out
}

/// A name's characters as themselves where they are visible, so a warning never carries an
/// invisible character of the name it warns about.
fn visible(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() || is_format(c) { format!("\\u{{{:x}}}", c as u32) } else { c.to_string() })
        .collect()
}

/// Invisible formatting characters (bidi marks, zero-width characters, the byte-order mark).
fn is_format(c: char) -> bool {
    matches!(c, '\u{00AD}' | '\u{061C}' | '\u{180E}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}' | '\u{FEFF}' | '\u{FFF9}'..='\u{FFFB}')
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Script {
    Latin,
    Greek,
    Cyrillic,
    Armenian,
    Hebrew,
    Arabic,
    /// Han, kana and Hangul, which Japanese and Korean names mix as a matter of course.
    Cjk,
    Other,
}

/// The scripts of letters by Unicode block; digits, hyphens and marks belong to every script.
fn script(c: char) -> Option<Script> {
    Some(match c {
        'a'..='z' | 'A'..='Z' | '\u{00C0}'..='\u{024F}' | '\u{1E00}'..='\u{1EFF}' => Script::Latin,
        '\u{0370}'..='\u{03FF}' | '\u{1F00}'..='\u{1FFF}' => Script::Greek,
        '\u{0400}'..='\u{052F}' | '\u{1C80}'..='\u{1C8F}' | '\u{2DE0}'..='\u{2DFF}' | '\u{A640}'..='\u{A69F}' => {
            Script::Cyrillic
        }
        '\u{0530}'..='\u{058F}' => Script::Armenian,
        '\u{0590}'..='\u{05FF}' => Script::Hebrew,
        '\u{0600}'..='\u{06FF}' | '\u{0750}'..='\u{077F}' => Script::Arabic,
        '\u{1100}'..='\u{11FF}'
        | '\u{2E80}'..='\u{2FDF}'
        | '\u{3040}'..='\u{30FF}'
        | '\u{3100}'..='\u{312F}'
        | '\u{3130}'..='\u{318F}'
        | '\u{3400}'..='\u{4DBF}'
        | '\u{4E00}'..='\u{9FFF}'
        | '\u{AC00}'..='\u{D7AF}' => Script::Cjk,
        c if c.is_ascii() || c.is_numeric() || ('\u{0300}'..='\u{036F}').contains(&c) => return None,
        _ => Script::Other,
    })
}

/// Whether one label mixes scripts. Latin beside Han, kana or Hangul is how Japanese and Korean
/// names are written, so that pair alone is not flagged.
fn mixes_scripts(label: &str) -> bool {
    let mut seen: Vec<Script> = Vec::new();
    for s in label.chars().filter_map(script) {
        if !seen.contains(&s) {
            seen.push(s);
        }
    }
    match seen.as_slice() {
        [] | [_] => false,
        [a, b] => !matches!((a, b), (Script::Latin, Script::Cjk) | (Script::Cjk, Script::Latin)),
        _ => true,
    }
}

/// Second-level labels that countries commonly register names under (`co.uk`, `com.au`, `ac.jp`).
const SECOND_LEVEL: &[&str] =
    &["ac", "co", "com", "edu", "go", "gob", "gov", "gv", "ltd", "mil", "ne", "net", "nhs", "or", "org", "plc", "sch"];

/// The heuristic registrable domain of an ASCII host (see the module's note).
fn registrable_domain(ascii: &str) -> String {
    let host = ascii.trim_end_matches('.');
    let labels: Vec<&str> = host.split('.').collect();
    let keep = match labels.as_slice() {
        [.., second, tld]
            if labels.len() >= 3
                && tld.len() == 2
                && tld.chars().all(|c| c.is_ascii_alphabetic())
                && SECOND_LEVEL.contains(second) =>
        {
            3
        }
        _ => 2,
    };
    labels[labels.len().saturating_sub(keep)..].join(".")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(c: &UrlCheck) -> Vec<UrlWarningKind> {
        c.warnings.iter().map(|w| w.kind).collect()
    }

    #[test]
    fn a_plain_https_address_opens_with_its_registrable_domain_and_no_warning() {
        let c = UrlCheck::of("https://login.accounts.example.com/sign-in?next=%2F");
        assert!(c.can_open() && c.scheme_ok);
        assert_eq!(c.href.as_deref(), Some("https://login.accounts.example.com/sign-in?next=%2F"));
        assert_eq!(c.host.as_deref(), Some("login.accounts.example.com"));
        assert_eq!(c.registrable_domain.as_deref(), Some("example.com"));
        assert!(c.warnings.is_empty(), "{c:?}");
    }

    #[test]
    fn the_registrable_domain_keeps_a_country_second_level_label() {
        for (host, domain) in [
            ("https://shop.example.co.uk/", "example.co.uk"),
            ("https://a.b.example.com.au/", "example.com.au"),
            ("https://example.co.uk./", "example.co.uk"),
            ("https://localhost:8080/", "localhost"),
            ("https://co.uk/", "co.uk"),
            ("https://www.example.io/", "example.io"),
            ("http://192.168.1.10/x", "192.168.1.10"),
            ("http://[::1]:3000/", "[::1]"),
        ] {
            assert_eq!(UrlCheck::of(host).registrable_domain.as_deref(), Some(domain), "{host}");
        }
    }

    #[test]
    fn javascript_file_and_data_addresses_are_refused_by_scheme() {
        for (text, scheme) in [
            ("javascript:alert(document.cookie)", "javascript"),
            ("JavaScript:alert(1)", "javascript"),
            ("file:///etc/passwd", "file"),
            ("data:text/html,<script>alert(1)</script>", "data"),
            ("vscode://extension/install", "vscode"),
        ] {
            let c = UrlCheck::of(text);
            assert!(!c.can_open() && !c.scheme_ok, "{text}: {c:?}");
            assert_eq!(c.scheme, scheme);
            assert_eq!(kinds(&c), [UrlWarningKind::NotWeb], "{text}");
            assert!(c.warnings[0].message.contains(&format!("not {scheme}:")), "{c:?}");
        }
    }

    #[test]
    fn not_a_url_and_credentials_are_refused() {
        let c = UrlCheck::of("open sesame");
        assert_eq!((c.can_open(), kinds(&c)), (false, vec![UrlWarningKind::Invalid]));
        let c = UrlCheck::of("https://bank.example.com@evil.example/");
        assert_eq!((c.can_open(), kinds(&c)), (false, vec![UrlWarningKind::Credentials]));
        assert!(c.warnings.iter().all(|w| w.refuses && w.kind.refuses()));
    }

    #[test]
    fn plain_http_opens_with_a_warning() {
        let c = UrlCheck::of("http://example.org/");
        assert!(c.can_open());
        assert_eq!(kinds(&c), [UrlWarningKind::NotEncrypted]);
        assert!(!UrlWarningKind::NotEncrypted.refuses());
    }

    #[test]
    fn a_punycode_host_is_flagged_and_shown_as_it_would_read() {
        // "аpple" with a Cyrillic а, sent in punycode as a server would.
        let c = UrlCheck::of("https://xn--pple-43d.com/login");
        assert!(c.can_open());
        assert_eq!(c.host.as_deref(), Some("xn--pple-43d.com"));
        assert_eq!(c.registrable_domain.as_deref(), Some("xn--pple-43d.com"));
        assert_eq!(kinds(&c), [UrlWarningKind::Punycode, UrlWarningKind::MixedScript]);
        assert!(c.warnings[0].message.contains("“аpple.com”"), "{c:?}");
    }

    #[test]
    fn a_unicode_host_is_sent_in_punycode_and_mixed_scripts_are_flagged() {
        // Latin "p", "a" with Cyrillic "р" (U+0440) in the middle: one label, two alphabets.
        let c = UrlCheck::of("https://accounts.pа\u{0440}pal.com/");
        let host = c.host.clone().unwrap();
        assert!(host.starts_with("accounts.xn--"), "{host}");
        assert!(c.href.as_deref().unwrap().is_ascii());
        assert!(kinds(&c).contains(&UrlWarningKind::MixedScript), "{c:?}");
    }

    #[test]
    fn a_whole_label_in_one_script_or_japanese_beside_latin_is_not_mixed() {
        let c = UrlCheck::of("https://пример.рф/");
        assert_eq!(kinds(&c), [UrlWarningKind::Punycode], "{c:?}");
        let c = UrlCheck::of("https://ソニーsony.jp/");
        assert_eq!(kinds(&c), [UrlWarningKind::Punycode], "{c:?}");
        assert!(mixes_scripts("gοogle"), "a Greek omicron among Latin letters");
    }

    #[test]
    fn nothing_invisible_survives_into_the_address_or_its_warnings() {
        // Tabs and newlines are dropped by the URL parser; what is left is percent-encoded.
        let c = UrlCheck::of("https://example.com/a\u{202E}b\tc\n?q=\u{200B}");
        let href = c.href.unwrap();
        assert!(href.chars().all(|ch| ch.is_ascii_graphic()), "{href}");
        assert_eq!(href, "https://example.com/a%E2%80%AEbc?q=%E2%80%8B");
    }
}
