//! Authenticator apps: Firezone's `mfa_methods` of type `totp`, whose payload is the Cloak
//! value of `{"secret": "<base64 of the raw secret>"}`. Ferrozone keeps one per user.

use std::collections::HashMap;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use ferrozone_domain::crypto::totp::step_at;
use ferrozone_domain::import::ImportedTotp;
use serde_json::Value;
use uuid::Uuid;
use zeroize::Zeroizing;

use super::{at, Converter};
use crate::firezone::read::FzMfaMethod;

impl Converter<'_> {
    pub(super) fn totp(&mut self, rows: &[FzMfaMethod]) {
        // Per user, the method kept so far (the most recently used) and its secret.
        let mut kept: HashMap<Uuid, (&FzMfaMethod, Zeroizing<Vec<u8>>)> = HashMap::new();
        let mut order = Vec::new();
        for m in rows {
            if m.kind != "totp" {
                self.report.skip(
                    "totp",
                    m.id,
                    format!("is a {:?} method; only authenticator apps are imported", m.kind),
                );
                continue;
            }
            if !self.has_user("totp", m.id, m.user_id) {
                continue;
            }
            let Some(secret) = self.totp_secret(m) else { continue };
            match kept.get(&m.user_id) {
                Some((other, _)) if other.last_used_at >= m.last_used_at => self.skip_second(m.id),
                Some((other, _)) => {
                    self.skip_second(other.id);
                    kept.insert(m.user_id, (m, secret));
                }
                None => {
                    order.push(m.user_id);
                    kept.insert(m.user_id, (m, secret));
                }
            }
        }
        for user_id in order {
            let Some((m, secret)) = kept.remove(&user_id) else { continue };
            let last_step = (m.last_used_at > 0).then(|| step_at(m.last_used_at / 1_000_000));
            self.batch.totp.push(ImportedTotp {
                user_id,
                sealed_secret: self.keys.cipher.seal(&secret),
                confirmed_at: at(m.inserted_at),
                last_step,
            });
        }
    }

    fn skip_second(&mut self, id: Uuid) {
        let reason = "the user has another authenticator; Ferrozone keeps one per user, the most recently used";
        self.report.skip("totp", id, reason);
    }

    /// The raw secret of `m`, or `None` (reported) when its payload does not open or read.
    fn totp_secret(&mut self, m: &FzMfaMethod) -> Option<Zeroizing<Vec<u8>>> {
        let payload = match self.open(&m.payload) {
            Ok(payload) => payload,
            Err(e) => {
                self.report.skip("totp", m.id, format!("its payload {e}; the user sets the authenticator up again"));
                return None;
            }
        };
        let secret = serde_json::from_slice::<Value>(&payload)
            .ok()
            .and_then(|v| v.get("secret").and_then(Value::as_str).map(|s| STANDARD.decode(s)))
            .and_then(Result::ok)
            .filter(|bytes| !bytes.is_empty())
            .map(Zeroizing::new);
        if secret.is_none() {
            let reason = "its payload is not {\"secret\": base64}; the user sets the authenticator up again";
            self.report.skip("totp", m.id, reason);
        }
        secret
    }
}
