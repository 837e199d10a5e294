//! Webhooks: endpoints that receive the audit events as signed JSON (docs/operations.md,
//! "Webhooks").
//!
//! The outbox is the audit log itself plus one cursor per endpoint (`delivered_seq`, the
//! last event handled). An event is committed with the change it records, so nothing
//! acknowledged can be missed and nothing is written on the change's path; delivering in
//! order is reading the events after the cursor, in seq order, one at a time.

use serde::Serialize;
use uuid::Uuid;

use crate::audit::context::Context;
use crate::audit::{AuditKey, Change, NewAuditEvent, Subject};
use crate::crypto::Sealed;
use crate::time::Timestamp;

pub mod address;
pub mod validate;

/// The most attempts each endpoint keeps (newest first in `GET /v0/webhooks/{id}/attempts`).
pub const KEPT_ATTEMPTS: i64 = 100;

/// How long an event is retried before it is given up.
pub const GIVE_UP_AFTER_SECS: u64 = 24 * 3600;

/// The first retry's delay; each next one doubles, up to [`MAX_BACKOFF_SECS`].
pub const FIRST_BACKOFF_SECS: u64 = 1;
pub const MAX_BACKOFF_SECS: u64 = 3600;

/// An endpoint as stored (its secret sealed, never shown).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Webhook {
    pub id: Uuid,
    pub url: String,
    /// The actions (`device.created`) or prefixes (`device.`) it receives; empty: all.
    pub events: Vec<String>,
    pub enabled: bool,
    /// The last event handled (delivered, skipped by the filter or given up).
    pub delivered_seq: i64,
    /// Roughly how many events after `delivered_seq` are still to be handled.
    pub pending: i64,
    /// When the current event first failed, while it keeps failing.
    pub failing_since: Option<Timestamp>,
    /// The most recent attempt, if any.
    pub last_attempt: Option<LastAttempt>,
    pub inserted_at: Timestamp,
    pub updated_at: Timestamp,
}

/// What the endpoint list shows of the most recent attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LastAttempt {
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub at: Timestamp,
    pub outcome: Outcome,
    /// The receiver's HTTP status, when it answered.
    pub status: Option<u16>,
}

/// A new endpoint, validated, its secret sealed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookInsert {
    pub id: Uuid,
    pub url: String,
    pub events: Vec<String>,
    pub secret: Sealed,
    pub enabled: bool,
    pub now: Timestamp,
}

/// A change to an endpoint, validated; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WebhookUpdate {
    pub url: Option<String>,
    pub events: Option<Vec<String>>,
    pub enabled: Option<bool>,
    /// A new secret (a rotation), sealed.
    pub secret: Option<Sealed>,
}

/// How one delivery attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The receiver answered 2xx.
    Delivered,
    /// Another status, a timeout or a connection error: retried later.
    Failed,
    /// The URL resolved only to addresses Ferrozone does not call: retried later (the
    /// name may resolve elsewhere then).
    RefusedAddress,
    /// The event failed for [`GIVE_UP_AFTER_SECS`]; the endpoint moved on past it.
    GaveUp,
}

impl Outcome {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Delivered => "delivered",
            Self::Failed => "failed",
            Self::RefusedAddress => "refused_address",
            Self::GaveUp => "gave_up",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [Self::Delivered, Self::Failed, Self::RefusedAddress, Self::GaveUp].into_iter().find(|o| o.as_str() == text)
    }
}

/// One delivery attempt of one event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Attempt {
    /// The event's seq.
    pub seq: i64,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub at: Timestamp,
    pub outcome: Outcome,
    /// The receiver's HTTP status, when it answered.
    pub status: Option<u16>,
    /// Why it failed, in a few words (at most [`validate::MAX_ERROR_LEN`] bytes).
    pub error: Option<String>,
    /// How long the attempt took, in milliseconds.
    pub duration_ms: i64,
}

/// An endpoint leased to one delivering process, with what it needs to deliver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookLease {
    pub id: Uuid,
    pub url: String,
    pub events: Vec<String>,
    pub secret: Sealed,
    pub delivered_seq: i64,
    pub failing_since: Option<Timestamp>,
    /// Attempts on the current event so far.
    pub attempts: i64,
}

/// The state an endpoint moves to after a step of delivery, with the attempt that led
/// there (none when events were only skipped by the filter).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    pub attempt: Option<Attempt>,
    pub delivered_seq: i64,
    pub next_attempt_at: Timestamp,
    pub failing_since: Option<Timestamp>,
    pub attempts: i64,
}

/// Actions an endpoint receives only when its `events` name them exactly (not through an
/// empty list or a prefix): the summaries of refused sign-ins of unknown accounts, which
/// anyone can cause, so that a flood of them never holds up the delivery of real events.
pub const OPT_IN_ACTIONS: &[&str] = &[crate::service::refused_sign_ins::SUMMARY_ACTION];

/// Whether `action` is one an endpoint with `events` receives.
pub fn wants(events: &[String], action: &str) -> bool {
    if OPT_IN_ACTIONS.contains(&action) {
        return events.iter().any(|pattern| pattern == action);
    }
    events.is_empty()
        || events
            .iter()
            .any(|pattern| if pattern.ends_with('.') { action.starts_with(pattern) } else { action == pattern })
}

fn subject(id: Uuid) -> Subject {
    Subject { kind: "webhook".to_owned(), id: Some(id.to_string()) }
}

/// How a receiver URL is recorded in the audit log, and so in the `webhook.*` events
/// delivered to the other endpoints: its origin (scheme, host and port) and a fingerprint
/// of the whole URL under the chain's key. A URL often carries a credential in its path or
/// query, which is never recorded; a change of path or query still shows, as another
/// fingerprint (docs/api.md, "Webhooks").
pub fn recorded_url(key: &AuditKey, url: &str) -> serde_json::Value {
    let origin = url::Url::parse(url).ok().and_then(|parsed| {
        Some(format!("{}://{}:{}", parsed.scheme(), parsed.host_str()?, parsed.port_or_known_default()?))
    });
    serde_json::json!({ "origin": origin, "fingerprint": key.fingerprint("webhook url", url.as_bytes()) })
}

/// The event of a created endpoint: its fields, the URL as [`recorded_url`], the secret
/// only named.
pub fn created_event(context: &Context, key: &AuditKey, webhook: &WebhookInsert) -> NewAuditEvent {
    let changes = vec![
        Change::value("url", None, Some(recorded_url(key, &webhook.url))),
        Change::value("events", None, Some(webhook.events.clone().into())),
        Change::value("enabled", None, Some(webhook.enabled.into())),
        Change::secret("secret"),
    ];
    context.event("webhook.created", subject(webhook.id)).with_changes(changes)
}

/// The event of a changed endpoint: the fields that changed.
pub fn updated_event(
    context: &Context,
    key: &AuditKey,
    before: &Webhook,
    after: &Webhook,
    secret_changed: bool,
) -> NewAuditEvent {
    let mut changes = Vec::new();
    if before.url != after.url {
        let (was, is) = (recorded_url(key, &before.url), recorded_url(key, &after.url));
        changes.push(Change::value("url", Some(was), Some(is)));
    }
    if before.events != after.events {
        changes.push(Change::value("events", Some(before.events.clone().into()), Some(after.events.clone().into())));
    }
    if before.enabled != after.enabled {
        changes.push(Change::value("enabled", Some(before.enabled.into()), Some(after.enabled.into())));
    }
    if secret_changed {
        changes.push(Change::secret("secret"));
    }
    context.event("webhook.updated", subject(after.id)).with_changes(changes)
}

/// The event of a deleted endpoint.
pub fn deleted_event(context: &Context, key: &AuditKey, webhook: &Webhook) -> NewAuditEvent {
    let changes = vec![Change::value("url", Some(recorded_url(key, &webhook.url)), None)];
    context.event("webhook.deleted", subject(webhook.id)).with_changes(changes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_match_actions_and_prefixes() {
        let events = vec!["device.".to_owned(), "user.deleted".to_owned()];
        assert!(wants(&events, "device.created"));
        assert!(wants(&events, "user.deleted"));
        assert!(!wants(&events, "user.created"));
        assert!(!wants(&events, "devices.created"));
        assert!(wants(&[], "anything.at_all"));
        let summary = crate::service::refused_sign_ins::SUMMARY_ACTION;
        assert!(!wants(&[], summary), "only when named");
        assert!(!wants(&["user.".to_owned()], summary));
        assert!(wants(&[summary.to_owned()], summary));
    }

    #[test]
    fn a_recorded_url_keeps_its_origin_and_a_keyed_fingerprint_only() {
        let key = AuditKey::unkeyed();
        let url = "https://hooks.example.com/services/T0KEN?sig=s3cret";
        let recorded = recorded_url(&key, url);
        assert_eq!(recorded["origin"], "https://hooks.example.com:443");
        let text = recorded.to_string();
        assert!(!text.contains("T0KEN") && !text.contains("s3cret") && !text.contains("services"), "{text}");
        assert_eq!(recorded_url(&key, url), recorded, "the same URL, the same fingerprint");
        let other_query = recorded_url(&key, "https://hooks.example.com/services/T0KEN?sig=other");
        assert_eq!(other_query["origin"], recorded["origin"]);
        assert_ne!(other_query["fingerprint"], recorded["fingerprint"], "a changed query shows");
        let other_key = AuditKey::from_cipher(
            &crate::crypto::Cipher::from_base64(&crate::crypto::Cipher::generate_key()).expect("a key"),
        );
        assert_ne!(recorded_url(&other_key, url)["fingerprint"], recorded["fingerprint"], "keyed");
        assert_eq!(recorded_url(&key, "http://[2001:db8::1]:8080/x")["origin"], "http://[2001:db8::1]:8080");
    }
}
