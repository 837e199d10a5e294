//! An event as the API shows it and webhooks send it: one JSON shape for both.

use serde::Serialize;
use uuid::Uuid;

use super::{Actor, AuditEvent, Change, Origin, Subject};
use crate::time::Timestamp;

/// An audit event in JSON (docs/api.md, "Audit events").
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EventView {
    /// Its place in the chain: 1, 2, 3, ... with no gap.
    pub seq: i64,
    pub id: Uuid,
    /// When it happened (RFC 3339, UTC, microseconds).
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub at: Timestamp,
    pub actor: Actor,
    /// `<subject kind>.<verb>`, as `device.created`.
    pub action: String,
    pub subject: Subject,
    /// The fields that changed; a secret is named (`"secret": true`) without values.
    pub changes: Vec<Change>,
    pub origin: Origin,
    /// The previous event's hash and this one's, in hex (see `ferrozone audit verify`).
    pub prev_hash: String,
    pub hash: String,
}

impl From<AuditEvent> for EventView {
    fn from(event: AuditEvent) -> Self {
        let AuditEvent { seq, event, prev_hash, hash } = event;
        Self {
            seq,
            id: event.id,
            at: event.at,
            actor: event.actor,
            action: event.action,
            subject: event.subject,
            changes: event.changes,
            origin: event.origin,
            prev_hash: hex::encode(prev_hash),
            hash: hex::encode(hash),
        }
    }
}
