//! PKCE (RFC 7636) with S256, and the other random values a sign-in needs (`state`), all from
//! the operating system's CSPRNG.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

use super::tokens::Secret;

/// A verifier and its challenge. The verifier stays in this process until the token request.
#[derive(Debug, Clone)]
pub struct Pkce {
    pub verifier: Secret,
    pub challenge: String,
}

impl Pkce {
    /// 32 random bytes make a 43-character verifier, RFC 7636 §4.1's recommended size.
    pub fn new() -> Pkce {
        let verifier = random_urlsafe(32);
        let challenge = challenge_of(&verifier);
        Pkce { verifier: Secret::new(verifier), challenge }
    }
}

impl Default for Pkce {
    fn default() -> Pkce {
        Pkce::new()
    }
}

/// BASE64URL(SHA256(verifier)), RFC 7636 §4.2.
pub fn challenge_of(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// `bytes` random bytes, base64url without padding.
pub fn random_urlsafe(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    // The OS generator failing is not something a sign-in can work around; no fallback to a
    // weaker source.
    if let Err(e) = getrandom::fill(&mut buf) {
        panic!("the operating system's random number generator failed: {e}");
    }
    URL_SAFE_NO_PAD.encode(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_s256_challenge_matches_rfc_7636_appendix_b() {
        assert_eq!(
            challenge_of("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn verifiers_are_long_enough_unreserved_and_different() {
        let a = Pkce::new();
        let b = Pkce::new();
        assert_eq!(a.verifier.expose().len(), 43);
        assert!(a.verifier.expose().chars().all(|c| c.is_ascii_alphanumeric() || "-._~".contains(c)));
        assert_ne!(a.verifier.expose(), b.verifier.expose());
        assert_eq!(a.challenge, challenge_of(a.verifier.expose()));
    }
}
