//! API tokens: `fz_` followed by 256 random bits in URL-safe base64. Only the SHA-256
//! of a token is stored; a token is looked up by that hash.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use rand::rngs::OsRng;
use rand::RngCore;
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

/// Never change this: issued tokens carry it, and look-ups reject anything without it.
pub const TOKEN_PREFIX: &str = "fz_";

/// A new token secret and the hash to store.
pub fn new_token() -> (Zeroizing<String>, [u8; 32]) {
    let secret = prefixed_secret(TOKEN_PREFIX);
    let hash = hash_token(&secret);
    (secret, hash)
}

/// 256 random bits in URL-safe base64 after `prefix`, which makes a leaked secret
/// recognisable (API tokens, webhook secrets, gateway tokens and credentials).
pub fn prefixed_secret(prefix: &str) -> Zeroizing<String> {
    let mut bytes = Zeroizing::new([0u8; 32]);
    OsRng.fill_bytes(bytes.as_mut());
    Zeroizing::new(format!("{prefix}{}", URL_SAFE_NO_PAD.encode(bytes.as_ref())))
}

pub fn hash_token(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_prefixed_random_and_hashed() {
        let (a, ha) = new_token();
        let (b, hb) = new_token();
        assert!(a.starts_with(TOKEN_PREFIX));
        assert_eq!(a.len(), 3 + 43, "256 bits in unpadded base64");
        assert_ne!(*a, *b);
        assert_ne!(ha, hb);
        assert_eq!(hash_token(&a), ha);
    }
}
