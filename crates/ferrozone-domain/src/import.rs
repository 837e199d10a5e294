//! What an import from another installation writes: its rows, already turned into
//! Ferrozone's model (secrets sealed with this database's key), applied by the store in one
//! transaction so that an import is all or nothing.

use uuid::Uuid;

use crate::crypto::Sealed;
use crate::egress::Rule;
use crate::model::{Device, OidcConnection, User};
use crate::time::Timestamp;

/// Everything one import writes.
#[derive(Debug, Clone, Default)]
pub struct ImportBatch {
    pub users: Vec<User>,
    /// Devices with their addresses, keys (preshared key sealed) and statistics as they were.
    pub devices: Vec<Device>,
    /// API tokens whose bearer strings were signed by the source installation.
    pub tokens: Vec<ImportedToken>,
    pub rules: Vec<Rule>,
    /// Provider sign-ins, refresh tokens sealed.
    pub oidc_connections: Vec<OidcConnection>,
    /// Confirmed authenticator apps, secrets sealed.
    pub totp: Vec<ImportedTotp>,
    /// Settings rows written as they are (key, value): the server's key pair (sealed), the
    /// configuration, the provider lists, the source's token-signing secret (sealed).
    pub settings: Vec<(String, Vec<u8>)>,
}

/// An API token of the source installation: only its row is known; the bearer string the
/// client holds is checked against the source's signing secret and this row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportedToken {
    pub id: Uuid,
    pub user_id: Uuid,
    pub inserted_at: Timestamp,
    /// `None`: the source let the token live until revoked.
    pub expires_at: Option<Timestamp>,
}

/// A confirmed authenticator app of the source installation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportedTotp {
    pub user_id: Uuid,
    pub sealed_secret: Sealed,
    pub confirmed_at: Timestamp,
    /// The last 30-second step a code was accepted for (replay guard), when known.
    pub last_step: Option<i64>,
}

/// How an import treats a database that already holds users or devices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImportMode {
    /// Refuse unless the database holds no users and no devices.
    Fresh,
    /// Add to what is there; rows whose email, key or address is taken are skipped and
    /// reported, never overwritten.
    Merge,
}

/// What the store wrote, and what it skipped and why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportOutcome {
    pub users: u64,
    pub devices: u64,
    pub tokens: u64,
    pub rules: u64,
    pub oidc_connections: u64,
    pub totp: u64,
    pub skipped: Vec<Skipped>,
}

/// One source row the store did not write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// `user`, `device`, `token`, `rule`, `oidc_connection` or `totp`.
    pub kind: &'static str,
    /// The source row's id (or email, for users), for the operator to find it.
    pub id: String,
    pub reason: String,
}

/// The settings row holding the source installation's token-signing secret, sealed: API
/// tokens it issued are accepted for imported token rows while it is there.
pub const LEGACY_TOKEN_SECRET_SETTING: &str = "firezone_token_secret";
