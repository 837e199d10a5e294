//! The token of a sign-in waiting for its second step: the password was right, the code is
//! still to come. `user id || expiry || random || return_to || HMAC(key, "pending-sign-in"
//! || all before)` in URL-safe base64, the key derived from the secret key. It lives in a
//! short-lived cookie; only this server (or another sharing its secret key) can make one,
//! and it grants nothing but the right to send a code for that user.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use rand::rngs::OsRng;
use rand::RngCore;
use sha2::Sha256;
use uuid::Uuid;
use zeroize::Zeroizing;

/// What the token's key is derived for ([`super::Cipher::derive_key`]).
pub const PENDING_SIGN_IN_PURPOSE: &str = "pending-sign-in";

const ID_LEN: usize = 16;
const EXPIRY_LEN: usize = 8;
const RANDOM_LEN: usize = 16;
const HEAD_LEN: usize = ID_LEN + EXPIRY_LEN + RANDOM_LEN;
const TAG_LEN: usize = 32;

/// What a valid token says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingSignIn {
    pub user_id: Uuid,
    /// Unix seconds.
    pub expires_at: i64,
    /// Where the password step was to go afterwards.
    pub return_to: String,
}

/// The key that makes and checks pending sign-in tokens.
#[derive(Clone)]
pub struct PendingSignInKey(Zeroizing<[u8; 32]>);

impl std::fmt::Debug for PendingSignInKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PendingSignInKey(..)")
    }
}

impl PendingSignInKey {
    pub fn new(key: Zeroizing<[u8; 32]>) -> Self {
        Self(key)
    }

    /// A token for `pending`.
    pub fn issue(&self, pending: &PendingSignIn) -> String {
        let mut token = Vec::with_capacity(HEAD_LEN + pending.return_to.len() + TAG_LEN);
        token.extend_from_slice(pending.user_id.as_bytes());
        token.extend_from_slice(&pending.expires_at.to_be_bytes());
        let mut random = [0u8; RANDOM_LEN];
        OsRng.fill_bytes(&mut random);
        token.extend_from_slice(&random);
        token.extend_from_slice(pending.return_to.as_bytes());
        let tag = self.mac(&token).finalize().into_bytes();
        token.extend_from_slice(&tag);
        URL_SAFE_NO_PAD.encode(token)
    }

    /// What `token` says, if this key made it and it has not expired at `now` (Unix
    /// seconds). The tag is compared in constant time.
    pub fn verify(&self, token: &str, now: i64) -> Option<PendingSignIn> {
        let bytes = URL_SAFE_NO_PAD.decode(token).ok()?;
        if bytes.len() < HEAD_LEN + TAG_LEN {
            return None;
        }
        let (signed, tag) = bytes.split_at(bytes.len() - TAG_LEN);
        self.mac(signed).verify_slice(tag).ok()?;
        let user_id = Uuid::from_slice(&signed[..ID_LEN]).ok()?;
        let expires_at = i64::from_be_bytes(signed[ID_LEN..ID_LEN + EXPIRY_LEN].try_into().ok()?);
        let return_to = String::from_utf8(signed[HEAD_LEN..].to_vec()).ok()?;
        (now < expires_at).then_some(PendingSignIn { user_id, expires_at, return_to })
    }

    fn mac(&self, signed: &[u8]) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(self.0.as_ref())
            .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
        mac.update(PENDING_SIGN_IN_PURPOSE.as_bytes());
        mac.update(b"\0");
        mac.update(signed);
        mac
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_its_own_unexpired_unaltered_tokens_pass() {
        let (key, other) =
            (PendingSignInKey::new(Zeroizing::new([1; 32])), PendingSignInKey::new(Zeroizing::new([2; 32])));
        let pending = PendingSignIn { user_id: Uuid::now_v7(), expires_at: 1_000, return_to: "/devices?x=1".into() };
        let token = key.issue(&pending);
        assert_ne!(token, key.issue(&pending), "random");
        assert_eq!(key.verify(&token, 999), Some(pending));
        assert_eq!(key.verify(&token, 1_000), None, "expired");
        assert_eq!(other.verify(&token, 0), None, "another key");
        let mut altered = URL_SAFE_NO_PAD.decode(&token).unwrap();
        altered[0] ^= 1;
        assert_eq!(key.verify(&URL_SAFE_NO_PAD.encode(&altered), 0), None, "another user");
        for junk in ["", "forged", "!!!!", &token[..token.len() - 1]] {
            assert_eq!(key.verify(junk, 0), None, "{junk:?}");
        }
    }
}
