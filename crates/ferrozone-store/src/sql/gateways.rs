//! The gateways' statements, shared by both backends ([`ferrozone_domain::gateway`]).

use ferrozone_domain::gateway::{Gateway, GatewayReport};
use ferrozone_domain::Timestamp;
use uuid::Uuid;

/// The columns [`GatewayColumns`] decodes, in its order.
macro_rules! columns {
    () => {
        "id, name, enrolment_expires_at, enrolled_at, revoked_at, last_seen_at, version, inserted_at, updated_at, \
         connected_since, backend, peers_applied, peers_refused, reconcile_failed"
    };
}

/// What a poll's report sets, from the parameters numbered `$b` (backend), `$p` (peers
/// applied), `$r` (refused), `$f` (reconcile failed), `$v` (version): each only when said.
macro_rules! report_set {
    ($b:literal, $p:literal, $r:literal, $f:literal, $v:literal) => {
        concat!(
            "backend = COALESCE($",
            $b,
            ", backend), peers_applied = COALESCE($",
            $p,
            ", peers_applied), ",
            "peers_refused = COALESCE($",
            $r,
            ", peers_refused), ",
            "reconcile_failed = COALESCE($",
            $f,
            ", reconcile_failed), version = COALESCE($",
            $v,
            ", version)"
        )
    };
}

pub(crate) const INSERT: &str = "INSERT INTO gateways (id, name, enrolment_hash, enrolment_expires_at, \
     inserted_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)";

pub(crate) const LIST: &str = concat!("SELECT ", columns!(), " FROM gateways ORDER BY inserted_at, id");

pub(crate) const BY_ID: &str = concat!("SELECT ", columns!(), " FROM gateways WHERE id = $1");

pub(crate) const BY_CREDENTIAL: &str =
    concat!("SELECT ", columns!(), " FROM gateways WHERE credential_hash = $1 AND revoked_at IS NULL");

/// `$1` the token's hash, `$2` the credential's, `$3` the version, `$4` now.
pub(crate) const ENROL: &str = concat!(
    "UPDATE gateways SET enrolment_hash = NULL, enrolment_expires_at = NULL, credential_hash = $2, \
     version = $3, enrolled_at = $4, updated_at = $4 \
     WHERE enrolment_hash = $1 AND enrolment_expires_at > $4 AND revoked_at IS NULL RETURNING ",
    columns!()
);

/// `$1` the gateway, `$2` now.
pub(crate) const REVOKE: &str = concat!(
    "UPDATE gateways SET enrolment_hash = NULL, enrolment_expires_at = NULL, credential_hash = NULL, \
     session_id = NULL, connected_since = NULL, revoked_at = $2, updated_at = $2 \
     WHERE id = $1 AND revoked_at IS NULL RETURNING ",
    columns!()
);

/// Renews the session this process holds: `$1` the credential's hash, `$2` the session,
/// `$3` now, `$4`… the report. The one statement of most polls.
pub(crate) const RENEW: &str = concat!(
    "UPDATE gateways SET last_seen_at = $3, ",
    report_set!("4", "5", "6", "7", "8"),
    " \
     WHERE credential_hash = $1 AND revoked_at IS NULL AND session_id = $2 RETURNING ",
    columns!()
);

/// Starts a session when no other process holds one that is alive: `$4` the moment before
/// which a session has lapsed, `$5`… the report.
pub(crate) const START: &str = concat!(
    "UPDATE gateways SET session_id = $2, connected_since = $3, last_seen_at = $3, updated_at = $3, ",
    report_set!("5", "6", "7", "8", "9"),
    " \
     WHERE credential_hash = $1 AND revoked_at IS NULL \
     AND (session_id IS NULL OR last_seen_at IS NULL OR last_seen_at < $4) RETURNING ",
    columns!()
);

/// Whether a live gateway has the credential `$1` (when neither statement above took it).
pub(crate) const CREDENTIAL_EXISTS: &str = "SELECT 1 FROM gateways WHERE credential_hash = $1 AND revoked_at IS NULL";

/// When the session `$2` of credential `$1` started.
pub(crate) const BY_SESSION: &str =
    "SELECT connected_since FROM gateways WHERE credential_hash = $1 AND session_id = $2";

/// Ends the session `$2` of credential `$1` (the process stops), at `$3`.
pub(crate) const RELEASE: &str = concat!(
    "UPDATE gateways SET session_id = NULL, connected_since = NULL, last_seen_at = $3 \
     WHERE credential_hash = $1 AND session_id = $2 RETURNING ",
    columns!()
);

/// Ends the sessions with no poll since `$1`; their `connected_since` is read first.
pub(crate) const LAPSED: &str = "SELECT id, connected_since FROM gateways \
     WHERE session_id IS NOT NULL AND last_seen_at < $1";
/// Ends one lapsed session (`$1` the gateway, `$2` the same moment), unless it was renewed.
pub(crate) const END_LAPSED: &str = concat!(
    "UPDATE gateways SET session_id = NULL, connected_since = NULL \
     WHERE id = $1 AND session_id IS NOT NULL AND last_seen_at < $2 RETURNING ",
    columns!()
);

/// The users whose VPN sessions expire, with their last sign-in (`$1` the cutoff: those
/// after it are active), for the expiry times gateways hold.
pub(crate) const SESSION_STARTS: &str = "SELECT id, last_signed_in_at FROM users \
     WHERE disabled_at IS NULL AND last_signed_in_at > $1";

/// A gateway's columns as both backends read them.
pub(crate) struct GatewayColumns {
    pub id: Uuid,
    pub name: String,
    pub enrolment_expires_at: Option<i64>,
    pub enrolled_at: Option<i64>,
    pub revoked_at: Option<i64>,
    pub last_seen_at: Option<i64>,
    pub version: Option<String>,
    pub inserted_at: i64,
    pub updated_at: i64,
    pub connected_since: Option<i64>,
    pub backend: Option<String>,
    pub peers_applied: Option<i64>,
    pub peers_refused: Option<i64>,
    pub reconcile_failed: Option<bool>,
}

impl From<GatewayColumns> for Gateway {
    fn from(c: GatewayColumns) -> Self {
        let at = |micros: Option<i64>| micros.map(Timestamp::from_micros);
        Gateway {
            id: c.id,
            name: c.name,
            enrolment_expires_at: at(c.enrolment_expires_at),
            enrolled_at: at(c.enrolled_at),
            revoked_at: at(c.revoked_at),
            last_seen_at: at(c.last_seen_at),
            version: c.version,
            inserted_at: Timestamp::from_micros(c.inserted_at),
            updated_at: Timestamp::from_micros(c.updated_at),
            connected_since: at(c.connected_since),
            report: GatewayReport {
                backend: c.backend,
                peers_applied: c.peers_applied,
                peers_refused: c.peers_refused,
                reconcile_failed: c.reconcile_failed,
                version: None,
            },
        }
    }
}
