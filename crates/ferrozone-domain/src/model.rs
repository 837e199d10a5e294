//! The records Ferrozone keeps.

use std::net::{Ipv4Addr, Ipv6Addr};

use uuid::Uuid;

use crate::crypto::Sealed;
use crate::time::Timestamp;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Admin,
    Unprivileged,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Unprivileged => "unprivileged",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "admin" => Some(Role::Admin),
            "unprivileged" => Some(Role::Unprivileged),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub id: Uuid,
    /// As entered (trimmed); uniqueness is on [`email_key`].
    pub email: String,
    pub role: Role,
    /// argon2id PHC string; `None` for users who sign in only through a provider.
    pub password_hash: Option<String>,
    pub disabled_at: Option<Timestamp>,
    /// Who disabled the user, set and cleared with `disabled_at`. `None` while enabled, and
    /// for a user disabled before Ferrozone kept the reason (then it is unknown).
    pub disabled_by: Option<DisabledBy>,
    pub last_signed_in_at: Option<Timestamp>,
    pub last_signed_in_method: Option<String>,
    pub inserted_at: Timestamp,
    pub updated_at: Timestamp,
}

impl User {
    /// A user created now: a fresh id, never signed in, not disabled.
    pub fn new(email: String, role: Role, password_hash: Option<String>, now: Timestamp) -> Self {
        User {
            id: Uuid::now_v7(),
            email,
            role,
            password_hash,
            disabled_at: None,
            disabled_by: None,
            last_signed_in_at: None,
            last_signed_in_method: None,
            inserted_at: now,
            updated_at: now,
        }
    }
}

/// Who disabled a user. Operators need it because the way back differs: a user an admin
/// or the operator disabled is enabled again, one the identity provider refused needs
/// the provider connection (or the user's grant) fixed first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DisabledBy {
    /// An admin, through `/v0/users` or the admin console.
    Admin,
    /// The local operator, with `ferrozone user disable`.
    Cli,
    /// The OpenID Connect refresh: the provider with this id refused the user's refresh
    /// token (with `disable_vpn_on_oidc_error` on).
    IdentityProvider(String),
    /// A SCIM client (the directory): `active: false`, or a delete of the SCIM user.
    Scim,
}

impl DisabledBy {
    /// The stable wire and storage name of who disabled the user.
    pub fn as_str(&self) -> &'static str {
        match self {
            DisabledBy::Admin => "admin",
            DisabledBy::Cli => "cli",
            DisabledBy::IdentityProvider(_) => "identity_provider",
            DisabledBy::Scim => "scim",
        }
    }

    /// The provider's id, when an identity provider disabled the user.
    pub fn provider_id(&self) -> Option<&str> {
        match self {
            DisabledBy::IdentityProvider(id) => Some(id),
            DisabledBy::Admin | DisabledBy::Cli | DisabledBy::Scim => None,
        }
    }

    /// The inverse of [`DisabledBy::as_str`] and [`DisabledBy::provider_id`]; `None` for
    /// an unknown name, or a provider without its id.
    pub fn parse(name: &str, provider_id: Option<String>) -> Option<Self> {
        match (name, provider_id) {
            ("admin", None) => Some(DisabledBy::Admin),
            ("cli", None) => Some(DisabledBy::Cli),
            ("scim", None) => Some(DisabledBy::Scim),
            ("identity_provider", Some(id)) => Some(DisabledBy::IdentityProvider(id)),
            _ => None,
        }
    }
}

/// The form of an email that uniqueness and look-ups use: emails match case-insensitively,
/// by their Unicode lower case (so a look-alike such as `\u{212A}ate@…` is a duplicate of
/// `kate@…`). Provider sign-ins are stricter: they accept only emails whose Unicode lower
/// case is their ASCII one, and a user whose email matches in ASCII case (docs/design/identity-providers.md,
/// "Provider sign-in").
pub fn email_key(email: &str) -> String {
    email.trim().to_lowercase()
}

/// A stored API token. The secret itself is never kept, only its SHA-256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiToken {
    pub id: Uuid,
    pub user_id: Uuid,
    pub name: String,
    /// Empty for a token imported from Firezone: its bearer string is a JWT signed by the
    /// source installation, checked against that installation's secret instead.
    pub token_hash: Vec<u8>,
    pub inserted_at: Timestamp,
    pub expires_at: Timestamp,
    pub last_used_at: Option<Timestamp>,
}

impl ApiToken {
    /// Whether the token came from a Firezone import (see [`ApiToken::token_hash`]).
    pub fn is_imported(&self) -> bool {
        self.token_hash.is_empty()
    }
}

/// A browser session of the web sign-in. The secret itself is never kept, only its
/// SHA-256; the session's CSRF token is derived from the secret
/// ([`crate::crypto::csrf_token`]), so it is not kept either.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    pub id: Uuid,
    pub user_id: Uuid,
    pub secret_hash: Vec<u8>,
    pub inserted_at: Timestamp,
    pub expires_at: Timestamp,
}

/// What an OpenID Connect sign-in leaves for the refresh job: the provider's refresh token
/// for one user, sealed with the secret key. `refreshed_at` is when a process last claimed
/// it for a refresh (at first, the sign-in); see [`crate::store::Store::claim_oidc_connection`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OidcConnection {
    pub user_id: Uuid,
    pub provider_id: String,
    pub refresh_token: Sealed,
    pub refreshed_at: Timestamp,
    pub inserted_at: Timestamp,
    pub updated_at: Timestamp,
}

/// A provider sign-in in progress: the browser went to an identity provider and has not
/// come back yet. Keyed by the SHA-256 of its random `state`; used at most once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignInFlow {
    pub state_hash: Vec<u8>,
    pub provider_id: String,
    /// What the flow must remember (nonce, PKCE verifier, request id), sealed.
    pub sealed: Sealed,
    pub return_to: String,
    pub expires_at: Timestamp,
}

/// Which device settings follow the server defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UseDefaults {
    pub allowed_ips: bool,
    pub dns: bool,
    pub endpoint: bool,
    pub mtu: bool,
    pub persistent_keepalive: bool,
}

impl Default for UseDefaults {
    fn default() -> Self {
        Self { allowed_ips: true, dns: true, endpoint: true, mtu: true, persistent_keepalive: true }
    }
}

/// The device's own tunnel settings, used where the matching `use_default_*` is false.
/// Cleared when the default is switched back on.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CustomConfig {
    pub allowed_ips: Vec<String>,
    pub dns: Vec<String>,
    pub endpoint: Option<String>,
    pub mtu: Option<i32>,
    pub persistent_keepalive: Option<i32>,
}

/// What the data plane last reported about a peer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PeerStats {
    pub latest_handshake: Option<Timestamp>,
    pub remote_ip: Option<String>,
    pub rx_bytes: Option<i64>,
    pub tx_bytes: Option<i64>,
}

/// A device is online while its latest handshake is at most this old: WireGuard redoes
/// the handshake every two minutes on a live tunnel, so three minutes leave a margin.
pub const ONLINE_WINDOW_SECS: i64 = 180;

/// The oldest handshake that still counts as online at `now`.
pub fn online_cutoff(now: Timestamp) -> Timestamp {
    now.plus_secs(-ONLINE_WINDOW_SECS)
}

impl PeerStats {
    /// Whether the latest handshake is recent enough to call the device online at `now`.
    pub fn is_online(&self, now: Timestamp) -> bool {
        self.latest_handshake.is_some_and(|at| at >= online_cutoff(now))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    pub id: Uuid,
    pub user_id: Uuid,
    pub name: String,
    pub description: Option<String>,
    pub public_key: String,
    /// Encrypted at rest; opened with [`crate::crypto::Cipher::open_str`].
    pub preshared_key: Sealed,
    pub ipv4: Option<Ipv4Addr>,
    pub ipv6: Option<Ipv6Addr>,
    pub use_default: UseDefaults,
    pub custom: CustomConfig,
    pub stats: PeerStats,
    /// When the device was paused: off the interface, its keys and addresses kept
    /// (docs/design/devices.md, "Paused devices"); `None` while active.
    pub paused_at: Option<Timestamp>,
    pub inserted_at: Timestamp,
    pub updated_at: Timestamp,
}

/// Which addresses a new device gets: a given one, or one from the pool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddressRequest<A> {
    /// The family is disabled: no address.
    None,
    /// The client asked for this address; it was checked against the network already.
    Given(A),
    /// Take the next free address of the pool.
    Assign,
}

/// A device about to be inserted. Addresses are settled by the store, inside the
/// same transaction as the insert, so concurrent creates never share one.
#[derive(Debug, Clone)]
pub struct DeviceInsert {
    pub id: Uuid,
    pub user_id: Uuid,
    pub name: String,
    pub description: Option<String>,
    pub public_key: String,
    pub preshared_key: Sealed,
    pub ipv4: AddressRequest<Ipv4Addr>,
    pub ipv6: AddressRequest<Ipv6Addr>,
    pub use_default: UseDefaults,
    pub custom: CustomConfig,
    pub now: Timestamp,
}

/// A validated change to a device: the complete new state of every editable field.
/// The store writes it only if it differs from the stored row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceUpdate {
    pub name: String,
    pub description: Option<String>,
    pub public_key: String,
    pub preshared_key: Option<Sealed>,
    pub ipv4: Option<Ipv4Addr>,
    pub ipv6: Option<Ipv6Addr>,
    pub use_default: UseDefaults,
    pub custom: CustomConfig,
}

/// A validated change to a user; `None` keeps the stored value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserUpdate {
    pub email: Option<String>,
    pub role: Option<Role>,
    pub password_hash: Option<String>,
    /// `Some(true)` disables the user (keeping an earlier `disabled_at`), `Some(false)`
    /// enables it.
    pub disabled: Option<bool>,
    /// Who disables, recorded with a new `disabled_at` (a user already disabled keeps its
    /// first reason, as it keeps its first time). `None` records no reason.
    pub disabled_by: Option<DisabledBy>,
    /// Refuse to disable the only admin that is not disabled (the API's rule; the local
    /// operator may disable anyone).
    pub keep_an_enabled_admin: bool,
    /// With a new password: the session that stays signed in (the one that changed it);
    /// every other session of the user ends. Without it, a new password ends them all.
    pub keep_session: Option<Uuid>,
}

/// The data plane's two wake-ups after a committed change (one stored permit each, so
/// nothing is missed; one permit wakes one waiter). Apart because they cost apart: a peer
/// change makes the gateway read every active device, a rule change only the rules and the
/// memberships (docs/design/groups.md, "Membership changes").
#[derive(Debug, Clone, Default)]
pub struct DataPlaneChanges {
    /// Devices written or deleted, users disabled, enabled or deleted, a VPN session renewed,
    /// a new `vpn_session_duration` or default action: what the peers and the rules'
    /// sources are built from.
    pub peers: std::sync::Arc<tokio::sync::Notify>,
    /// Rules written or deleted, memberships changed, groups deleted: nothing the peers
    /// are built from.
    pub rules: std::sync::Arc<tokio::sync::Notify>,
}

/// What the data plane needs of an active device, one that should be a peer on the
/// interface (its owner is not disabled and its VPN session has not expired:
/// [`crate::vpn_session::VpnSession`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivePeer {
    /// The device's owner (for the per-user egress rules).
    pub user_id: Uuid,
    pub public_key: String,
    pub preshared_key: Sealed,
    pub ipv4: Option<Ipv4Addr>,
    pub ipv6: Option<Ipv6Addr>,
}

/// The statistics one gateway read of one peer that has completed a handshake with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatsReport {
    pub public_key: String,
    pub latest_handshake: Timestamp,
    /// The peer's address, without port.
    pub remote_ip: Option<String>,
    pub rx_bytes: i64,
    pub tx_bytes: i64,
}

/// A user's authenticator (TOTP) as stored: the sealed secret, whether and when enrolment
/// was confirmed (a pending one has made a secret but not yet seen a code from it), the
/// last step whose code was accepted, and how many recovery codes are unused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TotpRecord {
    pub sealed_secret: Sealed,
    pub confirmed_at: Option<Timestamp>,
    pub last_step: Option<i64>,
    pub recovery_codes_left: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn online_means_a_handshake_at_most_three_minutes_old() {
        let now = Timestamp::from_secs(1_800_000_000);
        let seen = |at: Option<Timestamp>| PeerStats { latest_handshake: at, ..PeerStats::default() }.is_online(now);
        assert!(seen(Some(now)) && seen(Some(now.plus_secs(-180))) && seen(Some(online_cutoff(now))));
        assert!(seen(Some(now.plus_secs(5))), "a clock a little ahead is still online");
        assert!(!seen(Some(Timestamp::from_micros(online_cutoff(now).micros() - 1))));
        assert!(!seen(Some(now.plus_secs(-181))) && !seen(None));
    }
}
