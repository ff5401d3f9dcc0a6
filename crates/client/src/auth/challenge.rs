//! `WWW-Authenticate` challenges (RFC 9110 §11.6.1 syntax, RFC 6750 and RFC 9728 parameters).
//!
//! The header comes from an untrusted server: it is read in one pass, bounded in length and in
//! the number of challenges and parameters, and anything it cannot read ends the parse with what
//! was read so far rather than an error. Control characters are dropped from values, because a
//! description may be shown to the user.

/// Headers longer than this are not read at all: no honest challenge comes near it.
pub const MAX_HEADER: usize = 8 * 1024;
const MAX_CHALLENGES: usize = 16;
const MAX_PARAMS: usize = 32;

/// One challenge: a scheme with its parameters (or a token68).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Challenge {
    /// As sent; compare with `eq_ignore_ascii_case`.
    pub scheme: String,
    /// Names lowercased (they are case-insensitive), values unquoted and unescaped.
    pub params: Vec<(String, String)>,
    pub token68: Option<String>,
}

impl Challenge {
    /// The first value of a parameter.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// The Bearer challenge's parameters MCP acts on.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BearerChallenge {
    /// RFC 9728 §5.1: where the protected resource metadata is.
    pub resource_metadata: Option<String>,
    /// RFC 6750 §3: the scopes this request needs; authoritative for it.
    pub scope: Vec<String>,
    pub error: Option<String>,
    pub error_description: Option<String>,
    pub realm: Option<String>,
}

impl BearerChallenge {
    /// The first Bearer challenge in a `WWW-Authenticate` value, if there is one.
    pub fn from_header(header: &str) -> Option<BearerChallenge> {
        let challenge = parse_challenges(header).into_iter().find(|c| c.scheme.eq_ignore_ascii_case("bearer"))?;
        Some(BearerChallenge {
            resource_metadata: challenge.param("resource_metadata").map(str::to_owned),
            scope: challenge.param("scope").map(split_scopes).unwrap_or_default(),
            error: challenge.param("error").map(str::to_owned),
            error_description: challenge.param("error_description").map(str::to_owned),
            realm: challenge.param("realm").map(str::to_owned),
        })
    }

    /// A 403 that asks for more scopes (a step-up), rather than refusing outright.
    pub fn is_insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// Space-separated scopes (RFC 6749 §3.3), duplicates dropped, order kept.
pub fn split_scopes(value: &str) -> Vec<String> {
    let mut scopes: Vec<String> = Vec::new();
    for s in value.split_ascii_whitespace() {
        if !scopes.iter().any(|k| k == s) {
            scopes.push(s.to_owned());
        }
    }
    scopes
}

/// Every challenge in a `WWW-Authenticate` value (several headers joined with `,` read the same).
pub fn parse_challenges(header: &str) -> Vec<Challenge> {
    if header.len() > MAX_HEADER {
        return Vec::new();
    }
    let mut out: Vec<Challenge> = Vec::new();
    for item in split_top_level(header) {
        let item = item.trim_matches(is_ows);
        if item.is_empty() {
            continue;
        }
        let (first, rest) = take_token(item);
        if first.is_empty() {
            // Not a token where one must be: the rest cannot be read with confidence.
            break;
        }
        let after = rest.trim_start_matches(is_ows);
        if after.starts_with('=') && !after.trim_start_matches('=').trim_matches(is_ows).is_empty() {
            // `name = value`: a parameter of the challenge before it.
            if let Some(current) = out.last_mut() {
                if current.params.len() < MAX_PARAMS
                    && let Some(value) = read_value(after[1..].trim_start_matches(is_ows))
                {
                    current.params.push((first.to_ascii_lowercase(), value));
                }
                continue;
            }
            break;
        }
        if out.len() == MAX_CHALLENGES {
            break;
        }
        // `scheme`, `scheme name=value` or `scheme token68`.
        let mut challenge = Challenge { scheme: first.to_owned(), ..Challenge::default() };
        if !after.is_empty() {
            let (name, tail) = take_token(after);
            let tail = tail.trim_start_matches(is_ows);
            if !name.is_empty()
                && tail.starts_with('=')
                && !tail.trim_start_matches('=').trim_matches(is_ows).is_empty()
            {
                if let Some(value) = read_value(tail[1..].trim_start_matches(is_ows)) {
                    challenge.params.push((name.to_ascii_lowercase(), value));
                }
            } else if is_token68(after) {
                challenge.token68 = Some(after.to_owned());
            }
        }
        out.push(challenge);
    }
    out
}

fn is_ows(c: char) -> bool {
    c == ' ' || c == '\t'
}

fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

fn is_token68(s: &str) -> bool {
    let body = s.trim_end_matches('=');
    !body.is_empty() && body.chars().all(|c| c.is_ascii_alphanumeric() || "-._~+/".contains(c))
}

/// The leading token and what follows it.
fn take_token(s: &str) -> (&str, &str) {
    let end = s.find(|c: char| !is_tchar(c)).unwrap_or(s.len());
    s.split_at(end)
}

/// A token or a quoted string, unescaped, with control characters dropped; `None` when it is
/// neither (an unterminated quote, stray characters after the value).
fn read_value(s: &str) -> Option<String> {
    let s = s.trim_end_matches(is_ows);
    if let Some(body) = s.strip_prefix('"') {
        let mut value = String::new();
        let mut chars = body.chars();
        loop {
            match chars.next()? {
                '"' => break,
                '\\' => value.push(chars.next()?),
                c => value.push(c),
            }
        }
        if !chars.as_str().trim_matches(is_ows).is_empty() {
            return None;
        }
        value.retain(|c| !c.is_control());
        Some(value)
    } else {
        // Some servers send unquoted URLs; accept anything up to the item's end that has no
        // whitespace or quote in it.
        if s.is_empty() || s.contains(|c: char| c.is_whitespace() || c == '"' || c.is_control()) {
            return None;
        }
        Some(s.to_owned())
    }
}

/// The value split at commas outside quoted strings.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let mut start = 0;
    let mut quoted = false;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            ',' if !quoted => {
                items.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&s[start..]);
    items
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bearer_challenge_with_quoted_parameters_is_read() {
        let c = BearerChallenge::from_header(
            r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", scope="files:read files:write""#,
        )
        .expect("bearer");
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("https://mcp.example.com/.well-known/oauth-protected-resource")
        );
        assert_eq!(c.scope, vec!["files:read", "files:write"]);
        assert!(!c.is_insufficient_scope());
    }

    #[test]
    fn the_bearer_challenge_is_found_among_several() {
        let h = r#"Basic realm="a, b", Bearer error="insufficient_scope", scope="x y", error_description="need \"y\"", DPoP algs="ES256""#;
        let all = parse_challenges(h);
        assert_eq!(all.iter().map(|c| c.scheme.as_str()).collect::<Vec<_>>(), vec!["Basic", "Bearer", "DPoP"]);
        assert_eq!(all[0].param("realm"), Some("a, b"));
        let c = BearerChallenge::from_header(h).expect("bearer");
        assert!(c.is_insufficient_scope());
        assert_eq!(c.scope, vec!["x", "y"]);
        assert_eq!(c.error_description.as_deref(), Some(r#"need "y""#));
    }

    #[test]
    fn names_and_scheme_are_case_insensitive_and_tokens_need_no_quotes() {
        let c = BearerChallenge::from_header("bearer Resource_Metadata=https://a.example/x , Error = invalid_token")
            .expect("bearer");
        assert_eq!(c.resource_metadata.as_deref(), Some("https://a.example/x"));
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
    }

    #[test]
    fn a_bare_bearer_and_a_token68_are_read() {
        assert_eq!(BearerChallenge::from_header("Bearer"), Some(BearerChallenge::default()));
        let all = parse_challenges("Negotiate abc+/==, Bearer");
        assert_eq!(all[0].token68.as_deref(), Some("abc+/=="));
        assert_eq!(all[1].scheme, "Bearer");
    }

    #[test]
    fn hostile_challenges_never_panic_and_stay_bounded() {
        let long = format!("Bearer scope=\"{}\"", "a".repeat(MAX_HEADER));
        assert!(parse_challenges(&long).is_empty());
        let many = "Bearer a=b, ".repeat(600);
        let parsed = parse_challenges(&many[..MAX_HEADER.min(many.len())]);
        assert!(parsed.len() <= MAX_CHALLENGES);
        let params = format!("Bearer {}", (0..500).map(|i| format!("p{i}=v")).collect::<Vec<_>>().join(", "));
        let parsed = parse_challenges(&params);
        assert!(parsed[0].params.len() <= MAX_PARAMS);
        for h in [
            "",
            ",,,",
            "=",
            "Bearer =",
            "Bearer scope=\"unterminated",
            "Bearer scope=\"a\\",
            "Bearer scope=\"a\" trailing",
            "\"Bearer\"",
            "Bearer scope=\"\u{0}\u{1b}[31mred\"",
            "Bearer é=ü, ü",
            "Bearer realm=\"\u{10FFFF}\\\u{10FFFF}\"",
            "Bearer ,,, scope = , =x",
        ] {
            let _ = parse_challenges(h);
            let _ = BearerChallenge::from_header(h);
        }
        let c = BearerChallenge::from_header("Bearer error_description=\"\u{0}\u{1b}[31mred\"").expect("bearer");
        assert_eq!(c.error_description.as_deref(), Some("[31mred"));
        assert_eq!(BearerChallenge::from_header("Bearer scope=\"unterminated").map(|c| c.scope), Some(vec![]));
    }
}
