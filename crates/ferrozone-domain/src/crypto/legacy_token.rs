//! API tokens issued by a Firezone 0.7 installation, kept working after an import.
//!
//! Firezone's bearer strings are JWTs (Guardian 2.3) signed with HS512, whose key is the
//! literal bytes of the installation's `GUARDIAN_SECRET_KEY` (not its base64 decoding).
//! The claim `api` names the token's row, `exp` is the row's `expires_at`. Only the
//! signature and the claims are checked here; the caller then looks the row up, as
//! Firezone did: a revoked (deleted) row refuses the token whatever its signature.
//!
//! Built on `hmac` and `sha2`, already used by the domain: a JWT crate would bring a
//! second crypto stack for one algorithm, and the one fixed algorithm is the point.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde::Deserialize;
use sha2::Sha512;
use uuid::Uuid;

use crate::time::Timestamp;

/// The longest bearer string looked at: Firezone's are about 400 bytes. Anything longer is
/// refused before any decoding or hashing, so an unauthenticated request costs little.
pub const MAX_LEN: usize = 2048;

/// The issuer and audience Firezone's tokens carry.
const ISSUER: &str = "fz_http";

type HmacSha512 = Hmac<Sha512>;

#[derive(Deserialize)]
struct Header {
    alg: String,
}

#[derive(Deserialize)]
struct Claims {
    api: String,
    exp: i64,
    iss: String,
    #[serde(default)]
    nbf: Option<i64>,
}

/// The token row id of a Firezone bearer string signed with `secret` whose `exp` is after
/// `now`; `None` for anything else (another algorithm, a bad signature, expired, malformed).
pub fn verify(secret: &[u8], bearer: &str, now: Timestamp) -> Option<Uuid> {
    if bearer.len() > MAX_LEN {
        return None;
    }
    let (signed, signature) = bearer.rsplit_once('.')?;
    let (header, payload) = signed.split_once('.')?;
    if payload.contains('.') {
        return None;
    }
    let header: Header = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header).ok()?).ok()?;
    if header.alg != "HS512" {
        return None;
    }
    let signature = URL_SAFE_NO_PAD.decode(signature).ok()?;
    let mut mac = HmacSha512::new_from_slice(secret).ok()?;
    mac.update(signed.as_bytes());
    // Constant time: the comparison does not tell how much of a forged signature matched.
    mac.verify_slice(&signature).ok()?;
    let claims: Claims = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()?;
    let now_secs = now.micros().div_euclid(1_000_000);
    if claims.iss != ISSUER || claims.exp <= now_secs || claims.nbf.is_some_and(|nbf| nbf > now_secs) {
        return None;
    }
    claims.api.parse().ok()
}

/// A bearer string as Firezone signs one for token row `token_id` of `user_id`, expiring
/// at `exp`: for tests and fixtures.
pub fn sign(secret: &[u8], token_id: Uuid, user_id: Uuid, exp: Timestamp) -> String {
    let exp = exp.micros().div_euclid(1_000_000);
    let iat = Timestamp::now().micros().div_euclid(1_000_000);
    let header = serde_json::json!({"alg": "HS512", "typ": "JWT"});
    let claims = serde_json::json!({
        "api": token_id.to_string(),
        "aud": ISSUER,
        "exp": exp,
        "iat": iat,
        "iss": ISSUER,
        "jti": Uuid::new_v4().to_string(),
        "nbf": iat - 1,
        "sub": user_id.to_string(),
        "typ": "access",
    });
    let encode = |value: &serde_json::Value| URL_SAFE_NO_PAD.encode(value.to_string());
    let signed = format!("{}.{}", encode(&header), encode(&claims));
    let mut mac = HmacSha512::new_from_slice(secret).unwrap_or_else(|_| unreachable!("HMAC takes keys of any size"));
    mac.update(signed.as_bytes());
    format!("{signed}.{}", URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"bm90IGEgcmVhbCBndWFyZGlhbiBzZWNyZXQga2V5IGF0IGFsbCwgbm90IGF0IGFsbA==";

    fn parts(token: &str) -> Vec<String> {
        token.split('.').map(str::to_owned).collect()
    }

    fn encode(value: serde_json::Value) -> String {
        URL_SAFE_NO_PAD.encode(value.to_string())
    }

    #[test]
    fn a_token_signed_with_the_secret_names_its_row_until_it_expires() {
        let (id, now) = (Uuid::new_v4(), Timestamp::now());
        let token = sign(SECRET, id, Uuid::new_v4(), now.plus_days(1));
        assert_eq!(verify(SECRET, &token, now), Some(id));
        assert_eq!(verify(SECRET, &token, now.plus_days(1)), None, "expired");
        assert_eq!(verify(b"another secret", &token, now), None);
        assert_eq!(verify(SECRET, &format!("{token}x"), now), None, "a changed signature");
        assert_eq!(verify(SECRET, &format!("{token}.x"), now), None, "four parts");
        assert_eq!(verify(SECRET, "", now), None);
        assert_eq!(verify(SECRET, &"a".repeat(MAX_LEN + 1), now), None);
    }

    #[test]
    fn only_hs512_with_a_valid_signature_and_fz_http_as_issuer_is_accepted() {
        let (id, now) = (Uuid::new_v4(), Timestamp::now());
        let token = sign(SECRET, id, Uuid::new_v4(), now.plus_days(1));
        let [header, payload, signature] = parts(&token).try_into().unwrap();

        // `alg: none` with no signature, or with the original one.
        let none = encode(serde_json::json!({"alg": "none", "typ": "JWT"}));
        assert_eq!(verify(SECRET, &format!("{none}.{payload}."), now), None);
        assert_eq!(verify(SECRET, &format!("{none}.{payload}.{signature}"), now), None);
        // HS256 signed with the same secret.
        let hs256 = encode(serde_json::json!({"alg": "HS256", "typ": "JWT"}));
        let mut mac = Hmac::<sha2::Sha256>::new_from_slice(SECRET).unwrap();
        mac.update(format!("{hs256}.{payload}").as_bytes());
        let sig = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
        assert_eq!(verify(SECRET, &format!("{hs256}.{payload}.{sig}"), now), None);
        // Another row in the payload, the signature kept.
        let other =
            encode(serde_json::json!({"api": Uuid::new_v4().to_string(), "exp": 4_000_000_000i64, "iss": ISSUER}));
        assert_eq!(verify(SECRET, &format!("{header}.{other}.{signature}"), now), None);

        // Claims that are signed but wrong: another issuer, no UUID in `api`, not yet valid.
        let resign = |claims: serde_json::Value| {
            let signed = format!("{header}.{}", encode(claims));
            let mut mac = HmacSha512::new_from_slice(SECRET).unwrap();
            mac.update(signed.as_bytes());
            format!("{signed}.{}", URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes()))
        };
        let exp = 4_000_000_000i64;
        let good = resign(serde_json::json!({"api": id.to_string(), "exp": exp, "iss": ISSUER}));
        assert_eq!(verify(SECRET, &good, now), Some(id));
        assert_eq!(
            verify(SECRET, &resign(serde_json::json!({"api": id.to_string(), "exp": exp, "iss": "x"})), now),
            None
        );
        assert_eq!(verify(SECRET, &resign(serde_json::json!({"api": "7", "exp": exp, "iss": ISSUER})), now), None);
        let later = serde_json::json!({"api": id.to_string(), "exp": exp, "iss": ISSUER, "nbf": exp - 1});
        assert_eq!(verify(SECRET, &resign(later), now), None);
    }
}
