//! What the API sends and accepts, with the schemas the OpenAPI document shows.
//!
//! Request bodies are read by [`crate::wire`], which describes their schemas too.

use std::collections::BTreeMap;

use ferrozone_domain::egress::Rule;
use ferrozone_domain::model::DisabledBy;
use ferrozone_domain::service::access::AccessAnswer;
use ferrozone_domain::service::devices::CreatedDevice;
use ferrozone_domain::{Device, Domain, Timestamp, User};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use ferrozone_http::error::ApiError;

/// A timestamp in the API's format, e.g. `2026-11-22T10:04:05.123456Z`.
#[derive(Serialize, ToSchema)]
#[schema(value_type = String, format = DateTime, example = "2026-11-22T10:04:05.123456Z")]
pub struct Time(pub(crate) Timestamp);

fn time(t: Option<Timestamp>) -> Option<Time> {
    t.map(Time)
}

/// A WireGuard peer of a user, with its tunnel settings and statistics.
#[derive(Serialize, ToSchema)]
pub struct DeviceDto {
    pub id: Uuid,
    pub user_id: Uuid,
    pub name: String,
    pub description: Option<String>,
    /// Base64 of the device's 32-byte public key.
    pub public_key: String,
    /// Base64 of the device's private key. Present only in the create response, and only
    /// when the request had no `public_key`, so that the server generated the key pair;
    /// the server does not keep it, so it is never shown again.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false, nullable = false, value_type = String)]
    pub private_key: Option<String>,
    /// Base64 of the 32-byte preshared key.
    pub preshared_key: String,
    /// The server's WireGuard public key; the same for every device.
    pub server_public_key: String,
    pub ipv4: Option<String>,
    pub ipv6: Option<String>,
    pub allowed_ips: Vec<String>,
    pub dns: Vec<String>,
    pub endpoint: Option<String>,
    pub mtu: Option<i32>,
    pub persistent_keepalive: Option<i32>,
    pub use_default_allowed_ips: bool,
    pub use_default_dns: bool,
    pub use_default_endpoint: bool,
    pub use_default_mtu: bool,
    pub use_default_persistent_keepalive: bool,
    pub latest_handshake: Option<Time>,
    /// The peer's last address, without port.
    pub remote_ip: Option<String>,
    pub rx_bytes: Option<i64>,
    pub tx_bytes: Option<i64>,
    pub inserted_at: Time,
    pub updated_at: Time,
    /// Ferrozone's own: when the device was paused (off the VPN, its keys and addresses
    /// kept). Absent while the device is active, so a Firezone client reads what it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false, nullable = false, value_type = String, format = DateTime)]
    pub paused_at: Option<Time>,
}

impl DeviceDto {
    /// The device as the API shows it: defaults filled in where `use_default_*` is on.
    pub fn new(domain: &Domain, d: Device) -> Result<Self, ApiError> {
        let preshared_key = domain.reveal(&d.preshared_key)?;
        let effective = d.effective(&domain.client_defaults());
        let u = d.use_default;
        Ok(Self {
            id: d.id,
            user_id: d.user_id,
            name: d.name,
            description: d.description,
            public_key: d.public_key,
            private_key: None,
            preshared_key,
            server_public_key: domain.server_public_key().to_owned(),
            ipv4: d.ipv4.map(|a| a.to_string()),
            ipv6: d.ipv6.map(|a| a.to_string()),
            allowed_ips: effective.allowed_ips,
            dns: effective.dns,
            endpoint: effective.endpoint,
            mtu: effective.mtu,
            persistent_keepalive: effective.persistent_keepalive,
            use_default_allowed_ips: u.allowed_ips,
            use_default_dns: u.dns,
            use_default_endpoint: u.endpoint,
            use_default_mtu: u.mtu,
            use_default_persistent_keepalive: u.persistent_keepalive,
            latest_handshake: time(d.stats.latest_handshake),
            remote_ip: d.stats.remote_ip,
            rx_bytes: d.stats.rx_bytes,
            tx_bytes: d.stats.tx_bytes,
            inserted_at: Time(d.inserted_at),
            updated_at: Time(d.updated_at),
            paused_at: d.paused_at.map(Time),
        })
    }

    /// A new device for the create response, with the private key when the server
    /// generated the key pair.
    pub fn created(domain: &Domain, created: CreatedDevice) -> Result<Self, ApiError> {
        let mut dto = Self::new(domain, created.device)?;
        dto.private_key = created.private_key.map(|k| k.expose().to_owned());
        Ok(dto)
    }
}

/// An account. Passwords are never returned.
#[derive(Serialize, ToSchema)]
pub struct UserDto {
    pub id: Uuid,
    pub email: String,
    /// `admin` or `unprivileged`.
    #[schema(example = "unprivileged")]
    pub role: &'static str,
    /// When the user was disabled (by an admin, the operator, or a provider's refusal);
    /// `null` when enabled.
    pub disabled_at: Option<Time>,
    /// Who disabled the user: `admin` (through this API or the admin console), `cli`
    /// (`ferrozone user disable`) or `identity_provider` (the OpenID Connect refresh, when the
    /// provider refused the user's refresh token). Absent while the user is enabled, and for a
    /// user disabled before Ferrozone recorded who did it. Read-only.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false, nullable = false, read_only, value_type = String, example = "admin")]
    pub disabled_by: Option<&'static str>,
    /// The id of the identity provider that disabled the user; present only with
    /// `"disabled_by": "identity_provider"`. Read-only.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false, nullable = false, read_only, value_type = String, example = "google")]
    pub disabled_by_provider: Option<String>,
    pub last_signed_in_at: Option<Time>,
    pub last_signed_in_method: Option<String>,
    pub inserted_at: Time,
    pub updated_at: Time,
}

impl From<User> for UserDto {
    fn from(u: User) -> Self {
        Self {
            id: u.id,
            email: u.email,
            role: u.role.as_str(),
            disabled_at: time(u.disabled_at),
            disabled_by: u.disabled_by.as_ref().map(DisabledBy::as_str),
            disabled_by_provider: u.disabled_by.as_ref().and_then(DisabledBy::provider_id).map(str::to_owned),
            last_signed_in_at: time(u.last_signed_in_at),
            last_signed_in_method: u.last_signed_in_method,
            inserted_at: Time(u.inserted_at),
            updated_at: Time(u.updated_at),
        }
    }
}

/// `{"data": device}`
#[derive(Serialize, ToSchema)]
pub struct DeviceData {
    pub data: DeviceDto,
}

/// `{"data": user}`
#[derive(Serialize, ToSchema)]
pub struct UserData {
    pub data: UserDto,
}

/// Paging information, present when `limit` was given.
#[derive(Serialize, ToSchema)]
pub struct PageMetadata {
    pub limit: u32,
    /// Pass as `page_cursor` for the next page; `null` on the last page.
    pub next_page_cursor: Option<String>,
}

/// `{"data": [devices…]}`, with `metadata` when paged.
#[derive(Serialize, ToSchema)]
pub struct DeviceList {
    pub data: Vec<DeviceDto>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<PageMetadata>,
}

/// `{"data": [users…]}`, with `metadata` when paged.
#[derive(Serialize, ToSchema)]
pub struct UserList {
    pub data: Vec<UserDto>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<PageMetadata>,
}

/// A browser session of the web sign-in. Its secret is never shown.
#[derive(Serialize, ToSchema)]
pub struct SessionDto {
    pub id: Uuid,
    /// When the user signed in.
    pub inserted_at: Time,
    pub expires_at: Time,
}

impl From<ferrozone_domain::model::Session> for SessionDto {
    fn from(s: ferrozone_domain::model::Session) -> Self {
        Self { id: s.id, inserted_at: Time(s.inserted_at), expires_at: Time(s.expires_at) }
    }
}

/// `{"data": [sessions…]}`
#[derive(Serialize, ToSchema)]
pub struct SessionList {
    pub data: Vec<SessionDto>,
}

/// An egress rule. `destination` and `port_range` are exactly as the client sent them.
#[derive(Serialize, ToSchema)]
pub struct RuleDto {
    pub id: Uuid,
    #[schema(example = "10.0.0.0/8")]
    pub destination: String,
    /// `accept` or `drop`.
    #[schema(example = "drop")]
    pub action: &'static str,
    /// `tcp`, `udp` or `null`.
    pub port_type: Option<&'static str>,
    #[schema(example = "80 - 90")]
    pub port_range: Option<String>,
    /// `null` (and no `group_id`): every user.
    pub user_id: Option<Uuid>,
    /// Ferrozone's own: the group whose members the rule applies to. Present only on a
    /// group's rule, so a Firezone client never sees it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group_id: Option<Uuid>,
    pub inserted_at: Time,
    pub updated_at: Time,
}

impl From<Rule> for RuleDto {
    fn from(r: Rule) -> Self {
        let (port_type, port_range) = match r.ports {
            Some(p) => (Some(p.port_type.as_str()), Some(p.range)),
            None => (None, None),
        };
        RuleDto {
            id: r.id,
            destination: r.destination,
            action: r.action.as_str(),
            port_type,
            port_range,
            user_id: r.user_id,
            group_id: r.group_id,
            inserted_at: Time(r.inserted_at),
            updated_at: Time(r.updated_at),
        }
    }
}

/// `{"data": rule}`
#[derive(Serialize, ToSchema)]
pub struct RuleData {
    pub data: RuleDto,
}

/// `{"data": [rules…]}`
#[derive(Serialize, ToSchema)]
pub struct RuleList {
    pub data: Vec<RuleDto>,
}

/// What the egress rules do with one kind of traffic from a user's or device's tunnel
/// address (Ferrozone's own).
#[derive(Serialize, ToSchema)]
pub struct AccessCheckDto {
    /// `accept` or `drop`.
    #[schema(example = "drop")]
    pub action: &'static str,
    /// `rule`, `default_action`, or `user_disabled` (the user's devices are off the VPN).
    #[schema(example = "rule")]
    pub decided_by: &'static str,
    /// The deciding rule when `decided_by` is `rule`.
    pub rule: Option<RuleDto>,
    /// What traffic no rule matches gets.
    #[schema(example = "accept")]
    pub default_action: &'static str,
    /// The answer in one sentence.
    #[schema(example = "Dropped by the global rule drop 10.0.0.0/8.")]
    pub explanation: String,
    pub user_id: Uuid,
    /// `null` when a user was asked about.
    pub device_id: Option<Uuid>,
}

impl From<AccessAnswer> for AccessCheckDto {
    fn from(answer: AccessAnswer) -> Self {
        AccessCheckDto {
            action: answer.action.as_str(),
            decided_by: answer.decided_by.as_str(),
            explanation: answer.explanation(),
            default_action: answer.default_action.as_str(),
            user_id: answer.user_id,
            device_id: answer.device_id,
            rule: answer.rule.map(RuleDto::from),
        }
    }
}

/// `{"data": answer}`
#[derive(Serialize, ToSchema)]
pub struct AccessCheckData {
    pub data: AccessCheckDto,
}

/// 422: attribute → messages; errors not tied to one attribute are under `base`.
#[allow(dead_code)]
#[derive(ToSchema)]
pub struct ValidationErrors {
    errors: BTreeMap<String, Vec<String>>,
}

/// 401: `{"errors": {"auth": "unauthenticated" | "invalid_token" | "user_disabled"}}`
#[allow(dead_code)]
#[derive(ToSchema)]
pub struct AuthErrors {
    errors: AuthReason,
}

#[allow(dead_code)]
#[derive(ToSchema)]
pub struct AuthReason {
    auth: String,
}

/// Other errors: `{"error": "not_found"}` and the like; 400, and a 403 that a configuration
/// switch causes, add a `message`.
#[allow(dead_code)]
#[derive(ToSchema)]
pub struct ErrorBody {
    error: String,
    message: Option<String>,
}
