//! Reading a Firezone 0.7.26–0.7.36 database ([`super::schema`] checked it) as it is:
//! PostgreSQL-specific types are turned into text and numbers by the queries (`inet` →
//! address text, `int4range` → bounds, timestamps → microseconds since the epoch), so that
//! the conversion works on plain values.

use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};
use uuid::Uuid;

/// Microseconds since the epoch of a timestamp column (with or without time zone; the
/// latter are UTC in Firezone).
macro_rules! micros {
    ($column:literal) => {
        concat!("(extract(epoch from ", $column, ") * 1000000)::int8")
    };
}

/// `inet[]` as texts, without the mask of single addresses (as Firezone's API shows them).
macro_rules! inets {
    ($column:literal) => {
        concat!("ARRAY(SELECT abbrev(a) FROM unnest(", $column, ") a)")
    };
}

#[derive(Debug, Clone)]
pub struct FzUser {
    pub id: Uuid,
    pub email: Option<String>,
    pub password_hash: Option<String>,
    pub role: String,
    pub last_signed_in_at: Option<i64>,
    pub last_signed_in_method: Option<String>,
    pub disabled_at: Option<i64>,
    pub inserted_at: i64,
    pub updated_at: i64,
}

#[derive(Debug, Clone)]
pub struct FzDevice {
    pub id: Uuid,
    pub user_id: Uuid,
    pub name: String,
    pub description: Option<String>,
    pub public_key: String,
    /// Cloak value of the base64 PSK; `None` for devices older than preshared keys.
    pub preshared_key: Option<Vec<u8>>,
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
    pub remote_ip: Option<String>,
    pub latest_handshake: Option<i64>,
    pub rx_bytes: Option<i64>,
    pub tx_bytes: Option<i64>,
    pub inserted_at: i64,
    pub updated_at: i64,
}

#[derive(Debug, Clone)]
pub struct FzRule {
    pub id: Uuid,
    pub user_id: Option<Uuid>,
    pub destination: String,
    pub action: String,
    pub port_type: Option<String>,
    /// Inclusive bounds (PostgreSQL keeps `[lo, hi + 1)`).
    pub port_range: Option<(i32, i32)>,
    pub inserted_at: i64,
    pub updated_at: i64,
}

#[derive(Debug, Clone)]
pub struct FzApiToken {
    pub id: Uuid,
    pub user_id: Uuid,
    pub expires_at: Option<i64>,
    pub inserted_at: i64,
}

#[derive(Debug, Clone)]
pub struct FzMfaMethod {
    pub id: Uuid,
    pub user_id: Uuid,
    pub kind: String,
    /// Cloak value of `{"secret": "<base64>"}`.
    pub payload: Vec<u8>,
    /// `0` (the epoch) means never used.
    pub last_used_at: i64,
    pub inserted_at: i64,
}

#[derive(Debug, Clone)]
pub struct FzOidcConnection {
    pub user_id: Uuid,
    pub provider: String,
    pub refresh_token: Option<String>,
    pub refreshed_at: Option<i64>,
    pub inserted_at: i64,
    pub updated_at: i64,
}

#[derive(Debug, Clone)]
pub struct FzConfiguration {
    pub id: Uuid,
    pub local_auth_enabled: Option<bool>,
    pub allow_unprivileged_device_management: Option<bool>,
    pub allow_unprivileged_device_configuration: Option<bool>,
    pub disable_vpn_on_oidc_error: Option<bool>,
    pub default_client_persistent_keepalive: Option<i32>,
    pub default_client_mtu: Option<i32>,
    pub default_client_endpoint: Option<String>,
    pub default_client_dns: Vec<String>,
    pub default_client_allowed_ips: Vec<String>,
    pub vpn_session_duration: i32,
    /// JSON text of the provider arrays.
    pub openid_connect_providers: String,
    pub saml_identity_providers: String,
    pub inserted_at: i64,
    pub updated_at: i64,
}

/// Everything of the source that an import uses.
#[derive(Debug, Clone, Default)]
pub struct Source {
    pub users: Vec<FzUser>,
    pub devices: Vec<FzDevice>,
    pub rules: Vec<FzRule>,
    pub api_tokens: Vec<FzApiToken>,
    pub mfa_methods: Vec<FzMfaMethod>,
    pub oidc_connections: Vec<FzOidcConnection>,
    /// The singleton's rows (one, unless the database was edited by hand).
    pub configurations: Vec<FzConfiguration>,
}

/// Reads the source, oldest rows first, in one repeatable-read snapshot.
pub async fn read(conn: &mut PgConnection) -> sqlx::Result<Source> {
    sqlx::query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY").execute(&mut *conn).await?;
    let source = read_all(conn).await;
    sqlx::query("ROLLBACK").execute(&mut *conn).await?;
    source
}

async fn read_all(conn: &mut PgConnection) -> sqlx::Result<Source> {
    Ok(Source {
        users: rows(conn, USERS, user).await?,
        devices: rows(conn, DEVICES, device).await?,
        rules: rows(conn, RULES, rule).await?,
        api_tokens: rows(conn, API_TOKENS, api_token).await?,
        mfa_methods: rows(conn, MFA_METHODS, mfa_method).await?,
        oidc_connections: rows(conn, OIDC_CONNECTIONS, oidc_connection).await?,
        configurations: rows(conn, CONFIGURATIONS, configuration).await?,
    })
}

async fn rows<T>(conn: &mut PgConnection, sql: &str, map: fn(&PgRow) -> sqlx::Result<T>) -> sqlx::Result<Vec<T>> {
    sqlx::query(sql).fetch_all(&mut *conn).await?.iter().map(map).collect()
}

const USERS: &str = concat!(
    "SELECT id, email::text, password_hash, role::text, ",
    micros!("last_signed_in_at"),
    ", last_signed_in_method, ",
    micros!("disabled_at"),
    ", ",
    micros!("inserted_at"),
    ", ",
    micros!("updated_at"),
    " FROM users ORDER BY inserted_at, id"
);

fn user(r: &PgRow) -> sqlx::Result<FzUser> {
    Ok(FzUser {
        id: r.try_get(0)?,
        email: r.try_get(1)?,
        password_hash: r.try_get(2)?,
        role: r.try_get(3)?,
        last_signed_in_at: r.try_get(4)?,
        last_signed_in_method: r.try_get(5)?,
        disabled_at: r.try_get(6)?,
        inserted_at: r.try_get(7)?,
        updated_at: r.try_get(8)?,
    })
}

const DEVICES: &str = concat!(
    "SELECT id, user_id, name, description, public_key, preshared_key, host(ipv4), host(ipv6), ",
    inets!("allowed_ips"),
    ", coalesce(dns, '{}')::text[], endpoint, mtu, persistent_keepalive, use_default_allowed_ips, \
     use_default_dns, use_default_endpoint, use_default_mtu, use_default_persistent_keepalive, host(remote_ip), ",
    micros!("latest_handshake"),
    ", rx_bytes, tx_bytes, ",
    micros!("inserted_at"),
    ", ",
    micros!("updated_at"),
    " FROM devices ORDER BY inserted_at, id"
);

fn device(r: &PgRow) -> sqlx::Result<FzDevice> {
    Ok(FzDevice {
        id: r.try_get(0)?,
        user_id: r.try_get(1)?,
        name: r.try_get(2)?,
        description: r.try_get(3)?,
        public_key: r.try_get(4)?,
        preshared_key: r.try_get(5)?,
        ipv4: r.try_get(6)?,
        ipv6: r.try_get(7)?,
        allowed_ips: r.try_get(8)?,
        dns: r.try_get(9)?,
        endpoint: r.try_get(10)?,
        mtu: r.try_get(11)?,
        persistent_keepalive: r.try_get(12)?,
        use_default_allowed_ips: r.try_get(13)?,
        use_default_dns: r.try_get(14)?,
        use_default_endpoint: r.try_get(15)?,
        use_default_mtu: r.try_get(16)?,
        use_default_persistent_keepalive: r.try_get(17)?,
        remote_ip: r.try_get(18)?,
        latest_handshake: r.try_get(19)?,
        rx_bytes: r.try_get(20)?,
        tx_bytes: r.try_get(21)?,
        inserted_at: r.try_get(22)?,
        updated_at: r.try_get(23)?,
    })
}

const RULES: &str = concat!(
    "SELECT id, user_id, abbrev(destination), action::text, port_type::text, lower(port_range), \
     upper(port_range) - 1, ",
    micros!("inserted_at"),
    ", ",
    micros!("updated_at"),
    " FROM rules ORDER BY inserted_at, id"
);

fn rule(r: &PgRow) -> sqlx::Result<FzRule> {
    let lo: Option<i32> = r.try_get(5)?;
    let hi: Option<i32> = r.try_get(6)?;
    Ok(FzRule {
        id: r.try_get(0)?,
        user_id: r.try_get(1)?,
        destination: r.try_get(2)?,
        action: r.try_get(3)?,
        port_type: r.try_get(4)?,
        port_range: lo.zip(hi),
        inserted_at: r.try_get(7)?,
        updated_at: r.try_get(8)?,
    })
}

const API_TOKENS: &str = concat!(
    "SELECT id, user_id, ",
    micros!("expires_at"),
    ", ",
    micros!("inserted_at"),
    " FROM api_tokens ORDER BY inserted_at, id"
);

fn api_token(r: &PgRow) -> sqlx::Result<FzApiToken> {
    Ok(FzApiToken { id: r.try_get(0)?, user_id: r.try_get(1)?, expires_at: r.try_get(2)?, inserted_at: r.try_get(3)? })
}

const MFA_METHODS: &str = concat!(
    "SELECT id, user_id, type::text, payload, ",
    micros!("last_used_at"),
    ", ",
    micros!("inserted_at"),
    " FROM mfa_methods ORDER BY inserted_at, id"
);

fn mfa_method(r: &PgRow) -> sqlx::Result<FzMfaMethod> {
    Ok(FzMfaMethod {
        id: r.try_get(0)?,
        user_id: r.try_get(1)?,
        kind: r.try_get(2)?,
        payload: r.try_get(3)?,
        last_used_at: r.try_get(4)?,
        inserted_at: r.try_get(5)?,
    })
}

const OIDC_CONNECTIONS: &str = concat!(
    "SELECT user_id, provider, refresh_token, ",
    micros!("refreshed_at"),
    ", ",
    micros!("inserted_at"),
    ", ",
    micros!("updated_at"),
    " FROM oidc_connections ORDER BY inserted_at, id"
);

fn oidc_connection(r: &PgRow) -> sqlx::Result<FzOidcConnection> {
    Ok(FzOidcConnection {
        user_id: r.try_get(0)?,
        provider: r.try_get(1)?,
        refresh_token: r.try_get(2)?,
        refreshed_at: r.try_get(3)?,
        inserted_at: r.try_get(4)?,
        updated_at: r.try_get(5)?,
    })
}

const CONFIGURATIONS: &str = concat!(
    "SELECT id, local_auth_enabled, allow_unprivileged_device_management, \
     allow_unprivileged_device_configuration, disable_vpn_on_oidc_error, \
     default_client_persistent_keepalive, default_client_mtu, default_client_endpoint, \
     coalesce(default_client_dns, '{}')::text[], ",
    inets!("default_client_allowed_ips"),
    ", vpn_session_duration, openid_connect_providers::text, saml_identity_providers::text, ",
    micros!("inserted_at"),
    ", ",
    micros!("updated_at"),
    " FROM configurations ORDER BY inserted_at, id"
);

fn configuration(r: &PgRow) -> sqlx::Result<FzConfiguration> {
    Ok(FzConfiguration {
        id: r.try_get(0)?,
        local_auth_enabled: r.try_get(1)?,
        allow_unprivileged_device_management: r.try_get(2)?,
        allow_unprivileged_device_configuration: r.try_get(3)?,
        disable_vpn_on_oidc_error: r.try_get(4)?,
        default_client_persistent_keepalive: r.try_get(5)?,
        default_client_mtu: r.try_get(6)?,
        default_client_endpoint: r.try_get(7)?,
        default_client_dns: r.try_get(8)?,
        default_client_allowed_ips: r.try_get(9)?,
        vpn_session_duration: r.try_get(10)?,
        openid_connect_providers: r.try_get(11)?,
        saml_identity_providers: r.try_get(12)?,
        inserted_at: r.try_get(13)?,
        updated_at: r.try_get(14)?,
    })
}
