//! Browser session secrets: 256 random bits in URL-safe base64, kept in a cookie. Only the
//! SHA-256 of a secret is stored. The session's CSRF token is derived from the secret with
//! a separate hash, so neither the database nor the token reveals the secret.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use rand::rngs::OsRng;
use rand::RngCore;
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

/// What the CSRF token's hash starts with, so that it never equals the stored hash.
const CSRF_CONTEXT: &[u8] = b"ferrozone csrf v1\0";

/// 256 random bits in URL-safe base64 (43 characters): a session secret or a sign-in
/// form's CSRF token.
pub fn random_secret() -> Zeroizing<String> {
    let mut bytes = Zeroizing::new([0u8; 32]);
    OsRng.fill_bytes(bytes.as_mut());
    Zeroizing::new(URL_SAFE_NO_PAD.encode(bytes.as_ref()))
}

/// The stored form of a session secret.
pub fn hash_session_secret(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

/// The CSRF token of the session with `secret`: what a page of that session sends back in
/// `x-csrf-token` (or a form field) on a write.
pub fn csrf_token(secret: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(CSRF_CONTEXT);
    hasher.update(secret.as_bytes());
    URL_SAFE_NO_PAD.encode(hasher.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_random_and_tokens_differ_from_hashes() {
        let (a, b) = (random_secret(), random_secret());
        assert_eq!(a.len(), 43, "256 bits in unpadded base64");
        assert_ne!(*a, *b);
        assert_eq!(csrf_token(&a), csrf_token(&a));
        assert_ne!(csrf_token(&a), csrf_token(&b));
        assert_ne!(csrf_token(&a), URL_SAFE_NO_PAD.encode(hash_session_secret(&a)));
    }
}
