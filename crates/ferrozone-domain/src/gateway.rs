//! Gateways on other hosts (docs/design/gateways.md): the registry an administrator keeps,
//! and the enrolment that gives a gateway its own credential. A gateway's enrolment token
//! and credential are 256 random bits each, shown once; only their SHA-256 is stored.

pub mod state;

use serde_json::json;
use uuid::Uuid;

use crate::audit::{Change, Entry, Subject};
use crate::time::Timestamp;

/// How long an enrolment token lasts unless its creator says otherwise: a day.
pub const ENROLMENT_HOURS: u32 = 24;
/// The longest an enrolment token may last: 30 days.
pub const MAX_ENROLMENT_HOURS: u32 = 720;
/// An enrolment token's prefix, so that a leaked one is recognisable.
pub const ENROLMENT_PREFIX: &str = "fzge_";
/// A gateway credential's prefix.
pub const CREDENTIAL_PREFIX: &str = "fzgw_";
/// The longest name.
pub const MAX_NAME_LEN: usize = 64;

/// A gateway as stored (never its token or credential).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gateway {
    pub id: Uuid,
    pub name: String,
    /// Until when its enrolment token works, while it has one.
    pub enrolment_expires_at: Option<Timestamp>,
    pub enrolled_at: Option<Timestamp>,
    pub revoked_at: Option<Timestamp>,
    pub last_seen_at: Option<Timestamp>,
    /// Since when a gateway process holds its session (polls the control plane); `None`
    /// while none does.
    pub connected_since: Option<Timestamp>,
    /// The version the gateway reported.
    pub version: Option<String>,
    pub inserted_at: Timestamp,
    pub updated_at: Timestamp,
    /// What its process last said of its data plane.
    pub report: GatewayReport,
}

/// What a gateway process says of its data plane with each poll; `None` where it has not
/// said (an absent value keeps the one said before).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GatewayReport {
    /// `kernel`, `userspace` or `none`.
    pub backend: Option<String>,
    /// The peers on its interface after its last successful reconcile.
    pub peers_applied: Option<i64>,
    /// The peers over its backend's limit (wireguard-go: 65,536).
    pub peers_refused: Option<i64>,
    /// Whether its last reconcile failed.
    pub reconcile_failed: Option<bool>,
    /// The version it runs.
    pub version: Option<String>,
}

/// Where a gateway stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GatewayStatus {
    /// Created; its enrolment token has not been used and still works.
    AwaitingEnrolment,
    /// Its enrolment token expired unused.
    EnrolmentExpired,
    Enrolled,
    Revoked,
}

impl GatewayStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AwaitingEnrolment => "awaiting_enrolment",
            Self::EnrolmentExpired => "enrolment_expired",
            Self::Enrolled => "enrolled",
            Self::Revoked => "revoked",
        }
    }
}

impl Gateway {
    /// Whether a process holds its session and polled within [`LEASE_SECS`].
    pub fn connected(&self, now: Timestamp) -> bool {
        self.connected_since.is_some() && self.last_seen_at.is_some_and(|at| at > now.plus_secs(-LEASE_SECS))
    }

    pub fn status(&self, now: Timestamp) -> GatewayStatus {
        if self.revoked_at.is_some() {
            GatewayStatus::Revoked
        } else if self.enrolled_at.is_some() {
            GatewayStatus::Enrolled
        } else if self.enrolment_expires_at.is_some_and(|at| at > now) {
            GatewayStatus::AwaitingEnrolment
        } else {
            GatewayStatus::EnrolmentExpired
        }
    }
}

/// A gateway to insert, with its enrolment token's hash.
#[derive(Debug, Clone)]
pub struct GatewayInsert {
    pub gateway: Gateway,
    pub enrolment_hash: Vec<u8>,
}

/// An enrolment to record: the token's hash, the new credential's hash, the version the
/// gateway reported.
#[derive(Debug, Clone)]
pub struct Enrolment {
    pub enrolment_hash: Vec<u8>,
    pub credential_hash: Vec<u8>,
    pub version: Option<String>,
    pub now: Timestamp,
}

/// How long a gateway process's session lasts without a poll: past it, the gateway counts
/// as disconnected and another process may take its credential's session.
pub const LEASE_SECS: i64 = 60;

/// A gateway process asking to hold (or keep) its credential's session at `now`.
#[derive(Debug, Clone)]
pub struct Lease {
    pub credential_hash: Vec<u8>,
    /// The process's own random id, for as long as it runs.
    pub session: Uuid,
    pub now: Timestamp,
    /// What the process says of its data plane (nothing with a statistics request).
    pub report: GatewayReport,
}

impl Lease {
    /// A session whose last poll is before this has lapsed.
    pub fn lapsed_before(&self) -> Timestamp {
        self.now.plus_secs(-LEASE_SECS)
    }
}

/// What a [`Lease`] got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseOutcome {
    /// No gateway has that credential (or it was revoked).
    Unknown,
    /// Another process holds the session and polled within [`LEASE_SECS`].
    HeldElsewhere,
    /// This process held it already.
    Held(Gateway),
    /// This process's session starts now (`gateway.connected`).
    Started(Gateway),
}

/// `gateway.connected`: a gateway process started its session.
pub fn connected_entry(gateway: &Gateway) -> Entry {
    let changes = vec![Change::value("connected_since", None, Some(json!(gateway.connected_since)))];
    Entry::new("gateway.connected", Subject::new("gateway", gateway.id), changes)
}

/// `gateway.disconnected`: a gateway's session ended, `reason` `stopped` (the process said
/// so) or `lost` (no poll for [`LEASE_SECS`]).
pub fn disconnected_entry(gateway: &Gateway, since: Option<Timestamp>, reason: &str) -> Entry {
    let changes = vec![
        Change::value("connected_since", Some(json!(since)), None),
        Change::value("reason", None, Some(json!(reason))),
        Change::value("last_seen_at", None, Some(json!(gateway.last_seen_at))),
    ];
    Entry::new("gateway.disconnected", Subject::new("gateway", gateway.id), changes)
}

/// `gateway.created`: its name and until when its enrolment token works; the token only named.
pub fn created_entry(gateway: &Gateway) -> Entry {
    let changes = vec![
        Change::value("name", None, Some(json!(gateway.name))),
        Change::value("enrolment_expires_at", None, Some(json!(gateway.enrolment_expires_at))),
        Change::secret("enrolment_token"),
    ];
    Entry::new("gateway.created", Subject::new("gateway", gateway.id), changes)
}

/// `gateway.enrolled`: when, with which version; the credential only named.
pub fn enrolled_entry(gateway: &Gateway) -> Entry {
    let changes = vec![
        Change::value("enrolled_at", None, Some(json!(gateway.enrolled_at))),
        Change::value("version", None, Some(json!(gateway.version))),
        Change::secret("credential"),
    ];
    Entry::new("gateway.enrolled", Subject::new("gateway", gateway.id), changes)
}

/// `gateway.revoked`: when; its credential stops working.
pub fn revoked_entry(gateway: &Gateway) -> Entry {
    let changes = vec![Change::value("revoked_at", None, Some(json!(gateway.revoked_at)))];
    Entry::new("gateway.revoked", Subject::new("gateway", gateway.id), changes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gateway_awaits_enrolment_until_its_token_expires_and_revocation_wins() {
        let now = Timestamp::from_secs(1_000);
        let mut gateway = Gateway {
            id: Uuid::nil(),
            name: "office".into(),
            enrolment_expires_at: Some(now.plus_secs(60)),
            enrolled_at: None,
            revoked_at: None,
            last_seen_at: None,
            connected_since: None,
            version: None,
            inserted_at: now,
            updated_at: now,
            report: GatewayReport::default(),
        };
        assert_eq!(gateway.status(now), GatewayStatus::AwaitingEnrolment);
        assert_eq!(gateway.status(now.plus_secs(60)), GatewayStatus::EnrolmentExpired);
        gateway.enrolled_at = Some(now);
        assert_eq!(gateway.status(now.plus_secs(600)), GatewayStatus::Enrolled);
        gateway.revoked_at = Some(now);
        assert_eq!(gateway.status(now), GatewayStatus::Revoked);
    }
}
