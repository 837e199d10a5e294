//! Rows as both backends store them, and their conversion to and from the domain model.
//!
//! The row types hold only types both drivers encode and decode the same way (`Uuid`,
//! `String`, `i64`, `i32`, `bool`, `Vec<u8>`), so one conversion to and from the model
//! serves SQLite and PostgreSQL alike. Reading and binding differ by driver: PostgreSQL
//! (sqlx) reads rows by column name through the `FromRow` derives and binds parameters with
//! the `bind_*!` macros below; SQLite (rusqlite) reads by position in `sqlite/rows.rs` and
//! binds its own parameters where it runs each statement.

use anyhow::{anyhow, Context};
use ferrozone_domain::crypto::Sealed;
use ferrozone_domain::error::Result;
use ferrozone_domain::model::{
    email_key, ActivePeer, ApiToken, CustomConfig, Device, OidcConnection, PeerStats, Role, Session, SignInFlow,
    UseDefaults, User,
};
use ferrozone_domain::store::STREAM_BATCH;
use ferrozone_domain::{DomainError, Timestamp};
use uuid::Uuid;

/// A `users` row.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct UserRow {
    pub id: Uuid,
    pub email: String,
    pub email_key: String,
    pub role: String,
    pub password_hash: Option<String>,
    pub disabled_at: Option<i64>,
    pub last_signed_in_at: Option<i64>,
    pub last_signed_in_method: Option<String>,
    pub inserted_at: i64,
    pub updated_at: i64,
}

impl From<&User> for UserRow {
    fn from(user: &User) -> Self {
        Self {
            id: user.id,
            email: user.email.clone(),
            email_key: email_key(&user.email),
            role: user.role.as_str().to_owned(),
            password_hash: user.password_hash.clone(),
            disabled_at: user.disabled_at.map(Timestamp::micros),
            last_signed_in_at: user.last_signed_in_at.map(Timestamp::micros),
            last_signed_in_method: user.last_signed_in_method.clone(),
            inserted_at: user.inserted_at.micros(),
            updated_at: user.updated_at.micros(),
        }
    }
}

impl TryFrom<UserRow> for User {
    type Error = DomainError;

    fn try_from(row: UserRow) -> Result<Self> {
        let role = Role::parse(&row.role).ok_or_else(|| corrupt(anyhow!("user {} has role {:?}", row.id, row.role)))?;
        Ok(User {
            id: row.id,
            email: row.email,
            role,
            password_hash: row.password_hash,
            disabled_at: row.disabled_at.map(Timestamp::from_micros),
            last_signed_in_at: row.last_signed_in_at.map(Timestamp::from_micros),
            last_signed_in_method: row.last_signed_in_method,
            inserted_at: Timestamp::from_micros(row.inserted_at),
            updated_at: Timestamp::from_micros(row.updated_at),
        })
    }
}

/// An `api_tokens` row.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct TokenRow {
    pub id: Uuid,
    pub user_id: Uuid,
    pub name: String,
    pub token_hash: Vec<u8>,
    pub inserted_at: i64,
    pub expires_at: i64,
    pub last_used_at: Option<i64>,
}

impl From<TokenRow> for ApiToken {
    fn from(row: TokenRow) -> Self {
        ApiToken {
            id: row.id,
            user_id: row.user_id,
            name: row.name,
            token_hash: row.token_hash,
            inserted_at: Timestamp::from_micros(row.inserted_at),
            expires_at: Timestamp::from_micros(row.expires_at),
            last_used_at: row.last_used_at.map(Timestamp::from_micros),
        }
    }
}

/// A token with its owner (if the token exists) and a device (if it exists and the token
/// does): the answer of [`ferrozone_domain::Store::token_and_device`].
pub(crate) type TokenAndDevice = (Option<(ApiToken, User)>, Option<Device>);

/// What [`PointReads`] is asked: a token hash and a device id.
pub(crate) type Question = (Vec<u8>, Uuid);

/// The queue of token-and-device reads, answered in batches by each backend.
pub(crate) type PointReads = crate::coalesce::Coalescer<Question, TokenAndDevice>;

/// What a failed token-and-device read says it was doing.
pub(crate) const CONTEXT: &str = "load a token and a device";

/// The answer of a token-and-device read whose token was found, from its rows.
pub(crate) fn token_and_device(token: TokenUserRow, device: Option<DeviceRow>) -> Result<TokenAndDevice> {
    Ok((Some(<(ApiToken, User)>::try_from(token)?), device.map(Device::try_from).transpose()?))
}

/// A row of [`crate::sql::TOKEN_WITH_USER`]: a token and its owner.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct TokenUserRow {
    pub token_id: Uuid,
    pub token_name: String,
    pub token_hash: Vec<u8>,
    pub token_inserted_at: i64,
    pub expires_at: i64,
    pub last_used_at: Option<i64>,
    #[sqlx(flatten)]
    pub user: UserRow,
}

impl TryFrom<TokenUserRow> for (ApiToken, User) {
    type Error = DomainError;

    fn try_from(row: TokenUserRow) -> Result<Self> {
        let token = ApiToken {
            id: row.token_id,
            user_id: row.user.id,
            name: row.token_name,
            token_hash: row.token_hash,
            inserted_at: Timestamp::from_micros(row.token_inserted_at),
            expires_at: Timestamp::from_micros(row.expires_at),
            last_used_at: row.last_used_at.map(Timestamp::from_micros),
        };
        Ok((token, User::try_from(row.user)?))
    }
}

/// A row of [`crate::sql::SESSION_WITH_USER`]: a session and its user.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct SessionUserRow {
    pub session_id: Uuid,
    pub secret_hash: Vec<u8>,
    pub session_inserted_at: i64,
    pub expires_at: i64,
    #[sqlx(flatten)]
    pub user: UserRow,
}

impl TryFrom<SessionUserRow> for (Session, User) {
    type Error = DomainError;

    fn try_from(row: SessionUserRow) -> Result<Self> {
        let session = Session {
            id: row.session_id,
            user_id: row.user.id,
            secret_hash: row.secret_hash,
            inserted_at: Timestamp::from_micros(row.session_inserted_at),
            expires_at: Timestamp::from_micros(row.expires_at),
        };
        Ok((session, User::try_from(row.user)?))
    }
}

/// An `oidc_connections` row.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct OidcConnectionRow {
    pub user_id: Uuid,
    pub provider_id: String,
    pub refresh_token: Vec<u8>,
    pub refreshed_at: i64,
    pub inserted_at: i64,
    pub updated_at: i64,
}

impl From<OidcConnectionRow> for OidcConnection {
    fn from(row: OidcConnectionRow) -> Self {
        Self {
            user_id: row.user_id,
            provider_id: row.provider_id,
            refresh_token: Sealed(row.refresh_token),
            refreshed_at: Timestamp::from_micros(row.refreshed_at),
            inserted_at: Timestamp::from_micros(row.inserted_at),
            updated_at: Timestamp::from_micros(row.updated_at),
        }
    }
}

/// A `sign_in_flows` row.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct SignInFlowRow {
    pub state_hash: Vec<u8>,
    pub provider_id: String,
    pub sealed: Vec<u8>,
    pub return_to: String,
    pub expires_at: i64,
}

impl From<SignInFlowRow> for SignInFlow {
    fn from(row: SignInFlowRow) -> Self {
        SignInFlow {
            state_hash: row.state_hash,
            provider_id: row.provider_id,
            sealed: Sealed(row.sealed),
            return_to: row.return_to,
            expires_at: Timestamp::from_micros(row.expires_at),
        }
    }
}

/// A `devices` row. Addresses are their canonical text, lists are JSON arrays.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct DeviceRow {
    pub id: Uuid,
    pub user_id: Uuid,
    pub name: String,
    pub description: Option<String>,
    pub public_key: String,
    pub preshared_key: Vec<u8>,
    pub ipv4: Option<String>,
    pub ipv6: Option<String>,
    pub allowed_ips: String,
    pub dns: String,
    pub endpoint: Option<String>,
    pub mtu: Option<i32>,
    pub persistent_keepalive: Option<i32>,
    pub use_default_allowed_ips: bool,
    pub use_default_dns: bool,
    pub use_default_endpoint: bool,
    pub use_default_mtu: bool,
    pub use_default_persistent_keepalive: bool,
    pub latest_handshake: Option<i64>,
    pub remote_ip: Option<String>,
    pub rx_bytes: Option<i64>,
    pub tx_bytes: Option<i64>,
    pub inserted_at: i64,
    pub updated_at: i64,
}

impl DeviceRow {
    /// The row that stores `device`.
    pub(crate) fn encode(device: &Device) -> Result<Self> {
        let json = |list: &[String]| serde_json::to_string(list).context("encode a device list as JSON");
        Ok(Self {
            id: device.id,
            user_id: device.user_id,
            name: device.name.clone(),
            description: device.description.clone(),
            public_key: device.public_key.clone(),
            preshared_key: device.preshared_key.0.clone(),
            ipv4: device.ipv4.map(|a| a.to_string()),
            ipv6: device.ipv6.map(|a| a.to_string()),
            allowed_ips: json(&device.custom.allowed_ips)?,
            dns: json(&device.custom.dns)?,
            endpoint: device.custom.endpoint.clone(),
            mtu: device.custom.mtu,
            persistent_keepalive: device.custom.persistent_keepalive,
            use_default_allowed_ips: device.use_default.allowed_ips,
            use_default_dns: device.use_default.dns,
            use_default_endpoint: device.use_default.endpoint,
            use_default_mtu: device.use_default.mtu,
            use_default_persistent_keepalive: device.use_default.persistent_keepalive,
            latest_handshake: device.stats.latest_handshake.map(Timestamp::micros),
            remote_ip: device.stats.remote_ip.clone(),
            rx_bytes: device.stats.rx_bytes,
            tx_bytes: device.stats.tx_bytes,
            inserted_at: device.inserted_at.micros(),
            updated_at: device.updated_at.micros(),
        })
    }
}

impl TryFrom<DeviceRow> for Device {
    type Error = DomainError;

    fn try_from(row: DeviceRow) -> Result<Self> {
        let id = row.id;
        let decode = move || -> anyhow::Result<Device> {
            let list = |text: &str| {
                serde_json::from_str::<Vec<String>>(text).context("a device list is not a JSON array of strings")
            };
            Ok(Device {
                id: row.id,
                user_id: row.user_id,
                name: row.name,
                description: row.description,
                public_key: row.public_key,
                preshared_key: Sealed(row.preshared_key),
                ipv4: address(row.ipv4, "ipv4 is not an IPv4 address")?,
                ipv6: address(row.ipv6, "ipv6 is not an IPv6 address")?,
                use_default: UseDefaults {
                    allowed_ips: row.use_default_allowed_ips,
                    dns: row.use_default_dns,
                    endpoint: row.use_default_endpoint,
                    mtu: row.use_default_mtu,
                    persistent_keepalive: row.use_default_persistent_keepalive,
                },
                custom: CustomConfig {
                    allowed_ips: list(&row.allowed_ips)?,
                    dns: list(&row.dns)?,
                    endpoint: row.endpoint,
                    mtu: row.mtu,
                    persistent_keepalive: row.persistent_keepalive,
                },
                stats: PeerStats {
                    latest_handshake: row.latest_handshake.map(Timestamp::from_micros),
                    remote_ip: row.remote_ip,
                    rx_bytes: row.rx_bytes,
                    tx_bytes: row.tx_bytes,
                },
                inserted_at: Timestamp::from_micros(row.inserted_at),
                updated_at: Timestamp::from_micros(row.updated_at),
            })
        };
        decode().map_err(|err| corrupt(err.context(format!("stored device {id}"))))
    }
}

/// A row of [`crate::sql::ACTIVE_PEERS`].
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct ActivePeerRow {
    pub public_key: String,
    pub preshared_key: Vec<u8>,
    pub ipv4: Option<String>,
    pub ipv6: Option<String>,
}

impl TryFrom<ActivePeerRow> for ActivePeer {
    type Error = DomainError;

    fn try_from(row: ActivePeerRow) -> Result<Self> {
        let decode = || -> anyhow::Result<ActivePeer> {
            Ok(ActivePeer {
                ipv4: address(row.ipv4, "ipv4 is not an IPv4 address")?,
                ipv6: address(row.ipv6, "ipv6 is not an IPv6 address")?,
                preshared_key: Sealed(row.preshared_key),
                public_key: row.public_key,
            })
        };
        decode().map_err(corrupt)
    }
}

/// A stored address column (canonical text) as the family its column holds; `problem`
/// says what is wrong otherwise.
fn address<A: std::str::FromStr>(text: Option<String>, problem: &'static str) -> anyhow::Result<Option<A>> {
    text.map(|a| a.parse::<A>()).transpose().map_err(|_| anyhow!(problem))
}

/// A stored value the model cannot represent: the database was changed behind our back.
fn corrupt(err: anyhow::Error) -> DomainError {
    DomainError::Internal(err.context("unexpected value in the database"))
}

/// Decodes a list of rows into domain values.
pub(crate) fn decode_all<R, T>(rows: Vec<R>) -> Result<Vec<T>>
where
    T: TryFrom<R, Error = DomainError>,
{
    rows.into_iter().map(T::try_from).collect()
}

/// Binds a [`UserRow`] to [`crate::sql::INSERT_USER`].
macro_rules! bind_user_insert {
    ($query:expr, $row:expr) => {
        $query
            .bind($row.id)
            .bind(&$row.email)
            .bind(&$row.email_key)
            .bind(&$row.role)
            .bind(&$row.password_hash)
            .bind($row.disabled_at)
            .bind($row.last_signed_in_at)
            .bind(&$row.last_signed_in_method)
            .bind($row.inserted_at)
            .bind($row.updated_at)
    };
}

/// Binds a [`UserRow`] to [`crate::sql::UPDATE_USER`].
macro_rules! bind_user_update {
    ($query:expr, $row:expr) => {
        $query
            .bind($row.id)
            .bind(&$row.email)
            .bind(&$row.email_key)
            .bind(&$row.role)
            .bind(&$row.password_hash)
            .bind($row.updated_at)
            .bind($row.disabled_at)
    };
}

/// Binds a [`DeviceRow`] to [`crate::sql::INSERT_DEVICE`].
macro_rules! bind_device_insert {
    ($query:expr, $row:expr) => {
        $query
            .bind($row.id)
            .bind($row.user_id)
            .bind(&$row.name)
            .bind(&$row.description)
            .bind(&$row.public_key)
            .bind(&$row.preshared_key)
            .bind(&$row.ipv4)
            .bind(&$row.ipv6)
            .bind(&$row.allowed_ips)
            .bind(&$row.dns)
            .bind(&$row.endpoint)
            .bind($row.mtu)
            .bind($row.persistent_keepalive)
            .bind($row.use_default_allowed_ips)
            .bind($row.use_default_dns)
            .bind($row.use_default_endpoint)
            .bind($row.use_default_mtu)
            .bind($row.use_default_persistent_keepalive)
            .bind($row.latest_handshake)
            .bind(&$row.remote_ip)
            .bind($row.rx_bytes)
            .bind($row.tx_bytes)
            .bind($row.inserted_at)
            .bind($row.updated_at)
    };
}

/// Binds a [`DeviceRow`] to [`crate::sql::UPDATE_DEVICE`].
macro_rules! bind_device_update {
    ($query:expr, $row:expr) => {
        $query
            .bind($row.id)
            .bind(&$row.name)
            .bind(&$row.description)
            .bind(&$row.public_key)
            .bind(&$row.preshared_key)
            .bind(&$row.ipv4)
            .bind(&$row.ipv6)
            .bind(&$row.allowed_ips)
            .bind(&$row.dns)
            .bind(&$row.endpoint)
            .bind($row.mtu)
            .bind($row.persistent_keepalive)
            .bind($row.use_default_allowed_ips)
            .bind($row.use_default_dns)
            .bind($row.use_default_endpoint)
            .bind($row.use_default_mtu)
            .bind($row.use_default_persistent_keepalive)
            .bind($row.updated_at)
    };
}

pub(crate) use {bind_device_insert, bind_device_update, bind_user_insert, bind_user_update};

/// Gathers decoded devices into [`DeviceBatches`](ferrozone_domain::store::DeviceBatches)
/// batches; each backend sends the full ones its own way.
pub(crate) struct Batcher {
    batch: Vec<Device>,
}

impl Batcher {
    pub fn new() -> Self {
        Self { batch: Vec::with_capacity(STREAM_BATCH) }
    }

    /// Adds a row; returns the batch once it is full.
    pub fn push(&mut self, row: DeviceRow) -> Result<Option<Vec<Device>>> {
        self.batch.push(Device::try_from(row)?);
        Ok((self.batch.len() == STREAM_BATCH)
            .then(|| std::mem::replace(&mut self.batch, Vec::with_capacity(STREAM_BATCH))))
    }

    /// The last, partial batch, if any rows are left.
    pub fn rest(self) -> Option<Vec<Device>> {
        (!self.batch.is_empty()).then_some(self.batch)
    }
}
