//! The sign-in form's CSRF token: `expiry || random || HMAC(key, "sign-in-form" || expiry ||
//! random)` in URL-safe base64, the key derived from the secret key. Only this server (or
//! another sharing its secret key) can make one, so a cookie and field pair planted by
//! someone else is refused even when the two match.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use rand::rngs::OsRng;
use rand::RngCore;
use sha2::Sha256;
use zeroize::Zeroizing;

/// What the form's key is derived for ([`super::Cipher::derive_key`]).
pub const FORM_TOKEN_PURPOSE: &str = "sign-in-form";

const EXPIRY_LEN: usize = 8;
const RANDOM_LEN: usize = 16;
const TAG_LEN: usize = 32;
const TOKEN_LEN: usize = EXPIRY_LEN + RANDOM_LEN + TAG_LEN;

/// The key that makes and checks sign-in form tokens.
#[derive(Clone)]
pub struct FormTokenKey(Zeroizing<[u8; 32]>);

impl std::fmt::Debug for FormTokenKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FormTokenKey(..)")
    }
}

impl FormTokenKey {
    pub fn new(key: Zeroizing<[u8; 32]>) -> Self {
        Self(key)
    }

    /// A fresh token valid until `expires_at` (Unix seconds).
    pub fn issue(&self, expires_at: i64) -> String {
        let mut token = [0u8; TOKEN_LEN];
        token[..EXPIRY_LEN].copy_from_slice(&expires_at.to_be_bytes());
        OsRng.fill_bytes(&mut token[EXPIRY_LEN..EXPIRY_LEN + RANDOM_LEN]);
        let tag = self.mac(&token[..EXPIRY_LEN + RANDOM_LEN]).finalize().into_bytes();
        token[EXPIRY_LEN + RANDOM_LEN..].copy_from_slice(&tag);
        URL_SAFE_NO_PAD.encode(token)
    }

    /// Whether `token` was issued with this key and has not expired at `now` (Unix seconds).
    /// The tag is compared in constant time.
    pub fn verify(&self, token: &str, now: i64) -> bool {
        let Ok(bytes) = URL_SAFE_NO_PAD.decode(token) else {
            return false;
        };
        let Ok(bytes) = <[u8; TOKEN_LEN]>::try_from(bytes.as_slice()) else {
            return false;
        };
        let (signed, tag) = bytes.split_at(EXPIRY_LEN + RANDOM_LEN);
        let mut expiry = [0u8; EXPIRY_LEN];
        expiry.copy_from_slice(&signed[..EXPIRY_LEN]);
        self.mac(signed).verify_slice(tag).is_ok() && now < i64::from_be_bytes(expiry)
    }

    fn mac(&self, signed: &[u8]) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(self.0.as_ref())
            .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
        mac.update(FORM_TOKEN_PURPOSE.as_bytes());
        mac.update(b"\0");
        mac.update(signed);
        mac
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(byte: u8) -> FormTokenKey {
        FormTokenKey::new(Zeroizing::new([byte; 32]))
    }

    #[test]
    fn only_its_own_unexpired_unaltered_tokens_pass() {
        let (k, other) = (key(1), key(2));
        let token = k.issue(1_000);
        assert_ne!(token, k.issue(1_000), "random");
        assert!(k.verify(&token, 999));
        assert!(!k.verify(&token, 1_000), "expired");
        assert!(!other.verify(&token, 999), "another key");
        let mut altered = URL_SAFE_NO_PAD.decode(&token).unwrap();
        altered[7] ^= 1;
        assert!(!k.verify(&URL_SAFE_NO_PAD.encode(&altered), 0), "a moved expiry");
        for junk in ["", "forged", "!!!!", &token[..token.len() - 1], &format!("{token}AA")] {
            assert!(!k.verify(junk, 0), "{junk:?}");
        }
    }
}
