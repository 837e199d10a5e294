//! Rows as both backends store them, and their conversion to and from the domain model.
//!
//! Each row type is declared once with [`columns!`], which makes its column lists, binds and
//! reads (see [`crate::columns`]). The row types hold only types both drivers encode and
//! decode the same way (`Uuid`, `String`, `i64`, `i32`, `bool`, `Vec<u8>`), so one conversion
//! to and from the model serves SQLite and PostgreSQL alike.

use anyhow::{anyhow, Context};
use ferrozone_domain::crypto::Sealed;
use ferrozone_domain::error::Result;
use ferrozone_domain::model::{
    email_key, ActivePeer, ApiToken, CustomConfig, Device, DisabledBy, OidcConnection, PeerStats, Role, Session,
    SignInFlow, UseDefaults, User,
};
use ferrozone_domain::store::STREAM_BATCH;
use ferrozone_domain::{DomainError, Timestamp};
use uuid::Uuid;

use crate::columns::columns;

mod rule;
mod scim;

pub(crate) use rule::{RuleMembershipRow, RuleRow, RuleSourceRow};
pub(crate) use scim::{ScimTokenRow, ScimUserJoinRow, ScimUserRow};

columns! {
    /// A `users` row. Signing in is not an edit: the `UPDATE` leaves its columns alone.
    pub(crate) struct UserRow in "users" as "u" {
        id: Uuid [key],
        email: String [edit],
        email_key: String [edit],
        role: String [edit],
        password_hash: Option<String> [edit],
        disabled_at: Option<i64> [edit],
        disabled_by: Option<String> [edit],
        disabled_by_provider: Option<String> [edit],
        last_signed_in_at: Option<i64>,
        last_signed_in_method: Option<String>,
        inserted_at: i64,
        updated_at: i64 [edit],
    }
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
            disabled_by: user.disabled_by.as_ref().map(|by| by.as_str().to_owned()),
            disabled_by_provider: user.disabled_by.as_ref().and_then(|by| by.provider_id()).map(str::to_owned),
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
        let disabled_by = match row.disabled_by {
            Some(name) => Some(DisabledBy::parse(&name, row.disabled_by_provider.clone()).ok_or_else(|| {
                corrupt(anyhow!("user {} is disabled by {name:?} ({:?})", row.id, row.disabled_by_provider))
            })?),
            None => None,
        };
        Ok(User {
            id: row.id,
            email: row.email,
            role,
            password_hash: row.password_hash,
            disabled_at: row.disabled_at.map(Timestamp::from_micros),
            disabled_by,
            last_signed_in_at: row.last_signed_in_at.map(Timestamp::from_micros),
            last_signed_in_method: row.last_signed_in_method,
            inserted_at: Timestamp::from_micros(row.inserted_at),
            updated_at: Timestamp::from_micros(row.updated_at),
        })
    }
}

columns! {
    /// An `api_tokens` row.
    /// `origin` is `ferrozone` (a token with its hash) or `firezone` (imported, no hash):
    /// migration 0014.
    pub(crate) struct TokenRow in "api_tokens" as "t" {
        id: Uuid [key],
        user_id: Uuid,
        name: String,
        token_hash: Option<Vec<u8>>,
        inserted_at: i64,
        expires_at: i64,
        last_used_at: Option<i64>,
        origin: String,
    }
}

/// The `origin` of a token issued by Ferrozone.
pub(crate) const NATIVE_TOKEN: &str = "ferrozone";
/// The `origin` of a token imported from Firezone.
pub(crate) const IMPORTED_TOKEN: &str = "firezone";

impl From<&ApiToken> for TokenRow {
    fn from(token: &ApiToken) -> Self {
        let origin = if token.is_imported() { IMPORTED_TOKEN } else { NATIVE_TOKEN };
        Self {
            id: token.id,
            user_id: token.user_id,
            name: token.name.clone(),
            token_hash: (!token.is_imported()).then(|| token.token_hash.clone()),
            inserted_at: token.inserted_at.micros(),
            expires_at: token.expires_at.micros(),
            last_used_at: token.last_used_at.map(Timestamp::micros),
            origin: origin.to_owned(),
        }
    }
}

impl From<TokenRow> for ApiToken {
    fn from(row: TokenRow) -> Self {
        ApiToken {
            id: row.id,
            user_id: row.user_id,
            name: row.name,
            token_hash: row.token_hash.unwrap_or_default(),
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
#[derive(Debug)]
pub(crate) struct TokenUserRow {
    pub token: TokenRow,
    pub user: UserRow,
}

impl TryFrom<TokenUserRow> for (ApiToken, User) {
    type Error = DomainError;

    fn try_from(row: TokenUserRow) -> Result<Self> {
        Ok((ApiToken::from(row.token), User::try_from(row.user)?))
    }
}

columns! {
    /// A `sessions` row.
    pub(crate) struct SessionRow in "sessions" as "s" {
        id: Uuid [key],
        user_id: Uuid,
        secret_hash: Vec<u8>,
        inserted_at: i64,
        expires_at: i64,
    }
}

impl From<&Session> for SessionRow {
    fn from(session: &Session) -> Self {
        Self {
            id: session.id,
            user_id: session.user_id,
            secret_hash: session.secret_hash.clone(),
            inserted_at: session.inserted_at.micros(),
            expires_at: session.expires_at.micros(),
        }
    }
}

impl From<SessionRow> for Session {
    fn from(row: SessionRow) -> Self {
        Session {
            id: row.id,
            user_id: row.user_id,
            secret_hash: row.secret_hash,
            inserted_at: Timestamp::from_micros(row.inserted_at),
            expires_at: Timestamp::from_micros(row.expires_at),
        }
    }
}

/// A row of [`crate::sql::SESSION_WITH_USER`]: a session and its user.
#[derive(Debug)]
pub(crate) struct SessionUserRow {
    pub session: SessionRow,
    pub user: UserRow,
}

impl TryFrom<SessionUserRow> for (Session, User) {
    type Error = DomainError;

    fn try_from(row: SessionUserRow) -> Result<Self> {
        let s = row.session;
        let session = Session {
            id: s.id,
            user_id: s.user_id,
            secret_hash: s.secret_hash,
            inserted_at: Timestamp::from_micros(s.inserted_at),
            expires_at: Timestamp::from_micros(s.expires_at),
        };
        Ok((session, User::try_from(row.user)?))
    }
}

columns! {
    /// An `oidc_connections` row, keyed by user and provider. A sign-in replaces the
    /// `[edit]` columns of an existing one (the upsert's `excluded` list).
    pub(crate) struct OidcConnectionRow in "oidc_connections" as "o" {
        user_id: Uuid,
        provider_id: String,
        refresh_token: Vec<u8> [edit],
        refreshed_at: i64 [edit],
        inserted_at: i64,
        updated_at: i64 [edit],
    }
}

impl From<&OidcConnection> for OidcConnectionRow {
    fn from(c: &OidcConnection) -> Self {
        Self {
            user_id: c.user_id,
            provider_id: c.provider_id.clone(),
            refresh_token: c.refresh_token.0.clone(),
            refreshed_at: c.refreshed_at.micros(),
            inserted_at: c.inserted_at.micros(),
            updated_at: c.updated_at.micros(),
        }
    }
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

columns! {
    /// A `sign_in_flows` row.
    pub(crate) struct SignInFlowRow in "sign_in_flows" as "f" {
        state_hash: Vec<u8> [key],
        provider_id: String,
        sealed: Vec<u8>,
        return_to: String,
        expires_at: i64,
    }
}

impl From<&SignInFlow> for SignInFlowRow {
    fn from(flow: &SignInFlow) -> Self {
        Self {
            state_hash: flow.state_hash.clone(),
            provider_id: flow.provider_id.clone(),
            sealed: flow.sealed.0.clone(),
            return_to: flow.return_to.clone(),
            expires_at: flow.expires_at.micros(),
        }
    }
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

columns! {
    /// A `devices` row. Addresses are their canonical text, lists are JSON arrays. The
    /// `UPDATE` writes the editable columns; the data plane's statistics are read from
    /// `device_stats` ([`StatsRow`]) and written only by the statistics collector.
    pub(crate) struct DeviceRow in "devices" as "d" join "device_stats" as "s" on "public_key" {
        id: Uuid [key],
        user_id: Uuid,
        name: String [edit],
        description: Option<String> [edit],
        public_key: String [edit],
        preshared_key: Vec<u8> [edit],
        ipv4: Option<String> [edit],
        ipv6: Option<String> [edit],
        allowed_ips: String [edit],
        dns: String [edit],
        endpoint: Option<String> [edit],
        mtu: Option<i32> [edit],
        persistent_keepalive: Option<i32> [edit],
        use_default_allowed_ips: bool [edit],
        use_default_dns: bool [edit],
        use_default_endpoint: bool [edit],
        use_default_mtu: bool [edit],
        use_default_persistent_keepalive: bool [edit],
        latest_handshake: Option<i64> [joined],
        remote_ip: Option<String> [joined],
        rx_bytes: Option<i64> [joined],
        tx_bytes: Option<i64> [joined],
        paused_at: Option<i64> [edit],
        inserted_at: i64,
        updated_at: i64 [edit],
    }
}

columns! {
    /// A `device_stats` row: a device's figures as the data plane last reported them, kept
    /// apart from `devices` so that a statistics cycle rewrites narrow rows of one table
    /// and no index of `devices` (migration 0020).
    pub(crate) struct StatsRow in "device_stats" as "s" {
        public_key: String [key],
        latest_handshake: Option<i64> [edit],
        remote_ip: Option<String> [edit],
        rx_bytes: Option<i64> [edit],
        tx_bytes: Option<i64> [edit],
    }
}

impl StatsRow {
    /// The stored figures of `device`, `None` when it has none.
    pub(crate) fn of(device: &Device) -> Option<Self> {
        let stats = &device.stats;
        let any = stats.latest_handshake.is_some()
            || stats.remote_ip.is_some()
            || stats.rx_bytes.is_some()
            || stats.tx_bytes.is_some();
        any.then(|| Self {
            public_key: device.public_key.clone(),
            latest_handshake: stats.latest_handshake.map(Timestamp::micros),
            remote_ip: stats.remote_ip.clone(),
            rx_bytes: stats.rx_bytes,
            tx_bytes: stats.tx_bytes,
        })
    }
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
            paused_at: device.paused_at.map(Timestamp::micros),
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
                paused_at: row.paused_at.map(Timestamp::from_micros),
                inserted_at: Timestamp::from_micros(row.inserted_at),
                updated_at: Timestamp::from_micros(row.updated_at),
            })
        };
        decode().map_err(|err| corrupt(err.context(format!("stored device {id}"))))
    }
}

columns! {
    /// A row of [`crate::sql::ACTIVE_PEERS`]: the columns of a device that the data plane uses.
    pub(crate) struct ActivePeerRow in "devices" as "d" {
        user_id: Uuid,
        public_key: String,
        preshared_key: Vec<u8>,
        ipv4: Option<String>,
        ipv6: Option<String>,
    }
}

impl TryFrom<ActivePeerRow> for ActivePeer {
    type Error = DomainError;

    fn try_from(row: ActivePeerRow) -> Result<Self> {
        let decode = || -> anyhow::Result<ActivePeer> {
            Ok(ActivePeer {
                user_id: row.user_id,
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

/// The counts of [`crate::sql::users_page::BELONGINGS`] (devices, tokens, rules, sessions).
pub(crate) fn belongings([devices, tokens, rules, sessions]: [i64; 4]) -> ferrozone_domain::store::Belongings {
    let count = |n: i64| u64::try_from(n).unwrap_or(0);
    ferrozone_domain::store::Belongings {
        devices: count(devices),
        tokens: count(tokens),
        rules: count(rules),
        sessions: count(sessions),
    }
}
