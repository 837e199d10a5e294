//! The webhook statements, shared by both backends ([`ferrozone_domain::webhook`]).

use ferrozone_domain::webhook::{LastAttempt, Outcome, Webhook};
use ferrozone_domain::Timestamp;
use uuid::Uuid;

/// The columns [`webhook`] decodes, in its order; `pending` against the audit head.
macro_rules! columns {
    () => {
        "SELECT id, url, events, enabled, delivered_seq, \
         (SELECT last_seq FROM audit_head WHERE id = 1) - delivered_seq, failing_since, \
         last_attempt_at, last_outcome, last_status, inserted_at, updated_at FROM webhooks"
    };
}

pub(crate) const LIST: &str = concat!(columns!(), " ORDER BY inserted_at, id");
pub(crate) const BY_ID: &str = concat!(columns!(), " WHERE id = $1");

/// A new endpoint starts at the audit head: it receives the events committed after it.
pub(crate) const INSERT: &str = "INSERT INTO webhooks (id, url, events, secret, enabled, delivered_seq, \
     next_attempt_at, attempts, lease_until, inserted_at, updated_at) \
     VALUES ($1, $2, $3, $4, $5, (SELECT last_seq FROM audit_head WHERE id = 1), $6, 0, 0, $6, $6)";

/// An edit also makes the endpoint due now: a fixed URL is tried without waiting out the
/// backoff of the broken one.
pub(crate) const UPDATE: &str = "UPDATE webhooks SET url = $2, events = $3, enabled = $4, \
     secret = COALESCE($5, secret), next_attempt_at = $6, updated_at = $6 WHERE id = $1";

pub(crate) const DELETE: &str = "DELETE FROM webhooks WHERE id = $1";

pub(crate) const ATTEMPTS: &str = "SELECT seq, at, outcome, status, error, duration_ms FROM webhook_attempts \
     WHERE webhook_id = $1 ORDER BY id DESC LIMIT $2";

/// Leases due endpoints with events to deliver to `$1` until `$2`, `$3` being now and `$4`
/// the most. The outer condition is checked again on the row as it is when updated, so of
/// processes racing for an endpoint one wins.
pub(crate) const CLAIM: &str = "UPDATE webhooks SET lease_owner = $1, lease_until = $2 \
     WHERE id IN (SELECT id FROM webhooks WHERE enabled AND next_attempt_at <= $3 AND lease_until < $3 \
                  AND delivered_seq < (SELECT last_seq FROM audit_head WHERE id = 1) \
                  ORDER BY next_attempt_at LIMIT $4) \
     AND enabled AND lease_until < $3 \
     RETURNING id, url, events, secret, delivered_seq, failing_since, attempts";

pub(crate) const RENEW: &str = "UPDATE webhooks SET lease_until = $3 WHERE id = $1 AND lease_owner = $2";

pub(crate) const RELEASE: &str =
    "UPDATE webhooks SET lease_owner = NULL, lease_until = 0 WHERE id = $1 AND lease_owner = $2";

/// A step of `$2`'s delivery to endpoint `$1`. Refused when `$2` lost the lease, and when it
/// would move the cursor back: a step computed from a cursor that has moved on since (by
/// another delivery of the same process, which took the expired lease again) is stale.
pub(crate) const PROGRESS: &str = "UPDATE webhooks SET delivered_seq = $3, next_attempt_at = $4, \
     failing_since = $5, attempts = $6 WHERE id = $1 AND lease_owner = $2 AND delivered_seq <= $3";

pub(crate) const LAST_ATTEMPT: &str =
    "UPDATE webhooks SET last_attempt_at = $2, last_outcome = $3, last_status = $4 WHERE id = $1";

pub(crate) const INSERT_ATTEMPT: &str = "INSERT INTO webhook_attempts \
     (webhook_id, seq, at, outcome, status, error, duration_ms) VALUES ($1, $2, $3, $4, $5, $6, $7)";

/// Keeps the newest `$2` attempts of endpoint `$1`.
pub(crate) const PRUNE_ATTEMPTS: &str = "DELETE FROM webhook_attempts WHERE webhook_id = $1 AND id <= \
     (SELECT id FROM webhook_attempts WHERE webhook_id = $1 ORDER BY id DESC LIMIT 1 OFFSET $2)";

/// A row of [`LIST`] or [`BY_ID`], as the backends read it.
pub(crate) struct WebhookColumns {
    pub id: Uuid,
    pub url: String,
    pub events: String,
    pub enabled: bool,
    pub delivered_seq: i64,
    pub pending: Option<i64>,
    pub failing_since: Option<i64>,
    pub last_attempt_at: Option<i64>,
    pub last_outcome: Option<String>,
    pub last_status: Option<i32>,
    pub inserted_at: i64,
    pub updated_at: i64,
}

/// The stored event filter.
pub(crate) fn events(text: &str) -> Vec<String> {
    serde_json::from_str(text).unwrap_or_default()
}

pub(crate) fn events_text(events: &[String]) -> String {
    serde_json::to_string(events).unwrap_or_else(|_| "[]".to_owned())
}

pub(crate) fn webhook(row: WebhookColumns) -> Webhook {
    let last_attempt = match (row.last_attempt_at, row.last_outcome.as_deref().and_then(Outcome::parse)) {
        (Some(at), Some(outcome)) => Some(LastAttempt {
            at: Timestamp::from_micros(at),
            outcome,
            status: row.last_status.and_then(|s| u16::try_from(s).ok()),
        }),
        _ => None,
    };
    Webhook {
        id: row.id,
        url: row.url,
        events: events(&row.events),
        enabled: row.enabled,
        delivered_seq: row.delivered_seq,
        pending: row.pending.unwrap_or(0).max(0),
        failing_since: row.failing_since.map(Timestamp::from_micros),
        last_attempt,
        inserted_at: Timestamp::from_micros(row.inserted_at),
        updated_at: Timestamp::from_micros(row.updated_at),
    }
}
