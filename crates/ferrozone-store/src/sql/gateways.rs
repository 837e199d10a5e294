//! The gateways' statements, shared by both backends ([`ferrozone_domain::gateway`]).

use ferrozone_domain::gateway::Gateway;
use ferrozone_domain::Timestamp;
use uuid::Uuid;

/// The columns [`GatewayColumns`] decodes, in its order.
macro_rules! columns {
    () => {
        "id, name, enrolment_expires_at, enrolled_at, revoked_at, last_seen_at, version, inserted_at, updated_at"
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
     revoked_at = $2, updated_at = $2 WHERE id = $1 AND revoked_at IS NULL RETURNING ",
    columns!()
);

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
        }
    }
}
