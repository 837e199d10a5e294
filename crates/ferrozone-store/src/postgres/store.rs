//! The [`Store`] on PostgreSQL: the SQL shared with SQLite from [`crate::sql`], the locking
//! variants from [`super`], the multi-statement rules from [`ferrozone_domain::rules`].

use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use ferrozone_domain::audit::context::{self, Context};
use ferrozone_domain::audit::{changes, AuditKey, Entry};
use ferrozone_domain::crypto::Sealed;
use ferrozone_domain::egress::{EgressPolicy, EgressRules, Membership, Rule};
use ferrozone_domain::error::Result;
use ferrozone_domain::import::{ImportBatch, ImportMode, ImportOutcome};
use ferrozone_domain::input::RuleChanges;
use ferrozone_domain::ipam::Pools;
use ferrozone_domain::model::{
    ActivePeer, ApiToken, DataPlaneChanges, Device, DeviceInsert, DeviceUpdate, OidcConnection, Session, SignInFlow,
    StatsReport, TotpRecord, User, UserUpdate,
};
use ferrozone_domain::rules;
use ferrozone_domain::rules::tx::{finish, Begin, Commit};
use ferrozone_domain::store::{DeviceBatches, DeviceQuery, Store, TokenPage, STREAM_DEPTH};
use ferrozone_domain::vpn_session::VpnSession;
use ferrozone_domain::Timestamp;
use futures_util::future::BoxFuture;
use futures_util::StreamExt;
use sqlx::postgres::{PgArguments, PgRow};
use sqlx::query::Map;
use sqlx::{PgPool, Postgres};
use tokio::sync::{mpsc, Notify};
use uuid::Uuid;

use super::cursor_blocks::Cursors;
use super::errors::OrDb;
use super::rows::{from_row, read_aliased, session_with_user, token_with_user};
use super::tx::PgTx;
use crate::columns::Columns;
use crate::rows::{
    decode_all, ActivePeerRow, Batcher, DeviceRow, OidcConnectionRow, PointReads, RuleMembershipRow, RuleRow,
    RuleSourceRow, SessionRow, SignInFlowRow, TokenRow, UserRow,
};
use crate::sql;

mod audit_log;
mod gateways;
mod groups;
mod import;
mod links;
mod sample;
mod scim;
mod users_page;
mod watch;
mod webhooks;

use watch::{CONFIGURATION_CHANNEL, PEERS_CHANNEL, RULES_PAYLOAD};

/// Runs a multi-statement write to its end even when the caller goes away: a request
/// cancelled by a client disconnect must not abandon a transaction halfway (holding its
/// row locks until the connection is reused). The spawned task commits or rolls back.
async fn to_completion<T: Send + 'static>(work: impl Future<Output = Result<T>> + Send + 'static) -> Result<T> {
    tokio::spawn(work)
        .await
        .map_err(|e| ferrozone_domain::DomainError::Internal(anyhow::anyhow!("write task failed: {e}")))?
}

/// Replaces the user's recovery codes with `codes` (hashes), inside `tx`.
async fn insert_recovery_codes(tx: &mut sqlx::PgConnection, user_id: Uuid, codes: &[Vec<u8>]) -> Result<()> {
    const CONTEXT: &str = "store recovery codes";
    sqlx::query(sql::totp::DELETE_RECOVERY_CODES).bind(user_id).execute(&mut *tx).await.or_db(CONTEXT)?;
    for code in codes {
        sqlx::query(sql::totp::INSERT_RECOVERY_CODE)
            .bind(user_id)
            .bind(code.clone())
            .execute(&mut *tx)
            .await
            .or_db(CONTEXT)?;
    }
    Ok(())
}

/// [`sql::list_devices`] with the arguments of `query` bound in its parameter order.
fn list_query<'q>(
    sql: &'q str,
    query: &DeviceQuery,
) -> Map<'q, Postgres, fn(PgRow) -> sqlx::Result<DeviceRow>, PgArguments> {
    let mut q = sqlx::query(sql);
    if let Some(user_id) = query.user_id {
        q = q.bind(user_id);
    }
    if let Some(presence) = query.presence {
        q = q.bind(presence.cutoff().micros());
    }
    if let Some((inserted_at, id)) = query.after {
        q = q.bind(inserted_at.micros()).bind(id);
    }
    if let Some(limit) = query.limit {
        q = q.bind(i64::from(limit));
    }
    q.try_map(from_row::<DeviceRow>)
}

/// The [`Store`] on a PostgreSQL database. Several processes may share the database.
///
/// `pool` serves reads and writes. `cursors` moves the address-pool cursors
/// (`ip_pools.next_offset`) on a pool of its own, each move a statement committed at once with
/// `synchronous_commit` off: a cursor that waited for the insert's commit would make every
/// insert into a network wait for the previous one's disk flush. Skipping that flush
/// cannot hand an address out twice: a device that used a claimed offset commits later,
/// and flushing its commit flushes the earlier cursor move with it; and the unique
/// indexes on addresses decide in any case. `reader` is the one connection of the point
/// reader, whose planner only probes indexes (see `point_reads`).
#[derive(Debug, Clone)]
pub struct PgStore {
    pub(crate) pool: PgPool,
    pub(crate) cursors: Cursors,
    pub(crate) reader: PgPool,
    /// [`Store::token_and_device`], many in one statement ([`crate::coalesce`]).
    pub(crate) point_reads: PointReads,
    /// The MAC key of the audit chain.
    pub(crate) audit_key: AuditKey,
    /// Notified after each commit that appended an audit event: wakes the sealer
    /// ([`ferrozone_domain::store::AuditLog::keep_audit_events_sealed`]).
    pub(crate) sealer: Arc<Notify>,
}

impl PgStore {
    /// Closes the pools, waiting for connections in use to come back.
    pub async fn close(&self) {
        self.pool.close().await;
        self.cursors.pool.close().await;
        self.reader.close().await;
    }
}

/// The store as the rules begin its transactions: for the audit context of one store call.
pub(crate) struct Audited {
    store: PgStore,
    audit: Context,
}

impl Audited {
    async fn begin_tx(&self) -> Result<PgTx> {
        let tx = self.store.pool.begin().await.or_db("begin a write transaction")?;
        Ok(PgTx::new(tx, self.store.cursors.clone(), self.store.sealer.clone(), self.audit.clone()))
    }
}

#[async_trait]
impl Begin for Audited {
    async fn begin(&self) -> Result<Box<dyn Commit>> {
        Ok(Box::new(self.begin_tx().await?))
    }
}

impl PgStore {
    /// The store for the transactions of the current call, with its audit context: read
    /// here, in the caller's task, since the work is spawned ([`to_completion`]).
    pub(crate) fn audited(&self) -> Audited {
        Audited { store: self.clone(), audit: context::current() }
    }

    /// Seals the committed pending audit events ([`super::audit::seal`]), to the end even
    /// when the caller goes away: a seal holds the chain's head until it commits.
    pub(crate) async fn seal(&self) -> Result<u64> {
        let (pool, key) = (self.pool.clone(), self.audit_key.clone());
        to_completion(async move { super::audit::seal(&pool, &key).await }).await
    }

    /// Runs `body` in a write transaction of its own to its end (see [`to_completion`]),
    /// committing it when `body` succeeds.
    async fn write<T, F>(&self, body: F) -> Result<T>
    where
        T: Send + 'static,
        F: for<'t> FnOnce(&'t mut PgTx) -> BoxFuture<'t, Result<T>> + Send + 'static,
    {
        let db = self.audited();
        to_completion(async move {
            let mut tx = db.begin_tx().await?;
            let result = body(&mut tx).await;
            finish(Box::new(tx), result).await
        })
        .await
    }

    /// One statement in a transaction of its own, recording `entry` when it changed a row;
    /// returns whether it did.
    async fn execute_recorded(&self, context: &'static str, query: PgQuery, entry: Entry) -> Result<bool> {
        self.write(move |tx| {
            Box::pin(async move {
                if query.execute(tx.conn()).await.or_db(context)?.rows_affected() == 0 {
                    return Ok(false);
                }
                tx.append(entry).await?;
                Ok(true)
            })
        })
        .await
    }
}

/// A statement with its arguments bound, ready to run in another task.
type PgQuery = sqlx::query::Query<'static, Postgres, PgArguments>;

#[async_trait]
impl Store for PgStore {
    async fn ping(&self) -> Result<()> {
        sqlx::query(sql::PING).execute(&self.pool).await.or_db("ping")?;
        Ok(())
    }

    async fn setting(&self, key: &str) -> Result<Option<Vec<u8>>> {
        sqlx::query_scalar(sql::SETTING).bind(key.to_owned()).fetch_optional(&self.pool).await.or_db("load a setting")
    }

    async fn init_setting(&self, key: &str, value: &[u8]) -> Result<Vec<u8>> {
        // Both statements on one (write) connection: the read sees the insert or the
        // value a racing process stored first.
        let mut conn = self.pool.acquire().await.or_db("store a setting")?;
        sqlx::query(sql::INIT_SETTING)
            .bind(key.to_owned())
            .bind(value.to_vec())
            .execute(&mut *conn)
            .await
            .or_db("store a setting")?;
        sqlx::query_scalar(sql::SETTING).bind(key.to_owned()).fetch_one(&mut *conn).await.or_db("load a setting")
    }

    async fn put_settings(&self, entries: &[(String, Vec<u8>)]) -> Result<()> {
        const CONTEXT: &str = "store settings";
        let entries = entries.to_vec();
        self.write(move |tx| {
            Box::pin(async move {
                let mut before: Vec<Option<Vec<u8>>> = Vec::with_capacity(entries.len());
                for (key, value) in &entries {
                    let old = sqlx::query_scalar(SETTING_FOR_UPDATE)
                        .bind(key)
                        .fetch_optional(tx.conn())
                        .await
                        .or_db(CONTEXT)?;
                    before.push(old);
                    sqlx::query(sql::PUT_SETTING).bind(key).bind(value).execute(tx.conn()).await.or_db(CONTEXT)?;
                }
                let rows = entries
                    .iter()
                    .zip(&before)
                    .map(|((key, after), before)| (key.as_str(), before.as_deref(), after.as_slice()));
                if let Some(entry) = changes::configuration_updated(rows) {
                    tx.append(entry).await?;
                }
                Ok(())
            })
        })
        .await
    }

    async fn list_users(&self) -> Result<Vec<User>> {
        let rows = sqlx::query(sql::LIST_USERS)
            .try_map(from_row::<UserRow>)
            .fetch_all(&self.pool)
            .await
            .or_db("list users")?;
        decode_all(rows)
    }

    async fn user_by_id(&self, id: Uuid) -> Result<Option<User>> {
        let row = sqlx::query(sql::USER_BY_ID)
            .bind(id)
            .try_map(from_row::<UserRow>)
            .fetch_optional(&self.pool)
            .await
            .or_db("load a user")?;
        row.map(User::try_from).transpose()
    }

    async fn user_by_email(&self, email_key: &str) -> Result<Option<User>> {
        let row = sqlx::query(sql::USER_BY_EMAIL)
            .bind(email_key.to_owned())
            .try_map(from_row::<UserRow>)
            .fetch_optional(&self.pool)
            .await
            .or_db("load a user")?;
        row.map(User::try_from).transpose()
    }

    async fn count_admins(&self) -> Result<u64> {
        let n: i64 = sqlx::query_scalar(sql::COUNT_ADMINS).fetch_one(&self.pool).await.or_db("count admins")?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    async fn user_device_count(&self, user_id: Uuid) -> Result<Option<u64>> {
        let n: Option<i64> = sqlx::query_scalar(sql::COUNT_USER_DEVICES)
            .bind(user_id)
            .fetch_optional(&self.pool)
            .await
            .or_db("count devices")?;
        Ok(n.map(|n| u64::try_from(n).unwrap_or(0)))
    }

    async fn insert_user(&self, user: &User) -> Result<()> {
        let (row, entry) = (UserRow::from(user), changes::user_created(user));
        self.write(move |tx| {
            Box::pin(async move {
                row.bind_insert(sqlx::query(sql::INSERT_USER)).execute(tx.conn()).await.or_db("insert a user")?;
                tx.append(entry).await
            })
        })
        .await
    }

    async fn update_user(&self, id: Uuid, update: &UserUpdate, now: Timestamp) -> Result<User> {
        let (db, update) = (self.audited(), update.clone());
        to_completion(async move { rules::update_user(&db, id, &update, now).await }).await
    }

    async fn delete_user(&self, id: Uuid) -> Result<()> {
        let db = self.audited();
        to_completion(async move { rules::delete_user(&db, id).await }).await
    }

    async fn insert_token(&self, token: &ApiToken) -> Result<()> {
        let (row, entry) = (TokenRow::from(token), changes::token_created(token));
        self.write(move |tx| {
            Box::pin(async move {
                row.bind_insert(sqlx::query(sql::INSERT_TOKEN)).execute(tx.conn()).await.or_db("insert a token")?;
                tx.append(entry).await
            })
        })
        .await
    }

    async fn token_by_hash(&self, hash: &[u8]) -> Result<Option<(ApiToken, User)>> {
        let row = sqlx::query(sql::TOKEN_WITH_USER)
            .bind(hash.to_vec())
            .try_map(token_with_user)
            .fetch_optional(&self.pool)
            .await
            .or_db("load a token")?;
        row.map(<(ApiToken, User)>::try_from).transpose()
    }

    async fn token_by_id(&self, id: Uuid) -> Result<Option<(ApiToken, User)>> {
        let row = sqlx::query(sql::TOKEN_WITH_USER_BY_ID)
            .bind(id)
            .try_map(token_with_user)
            .fetch_optional(&self.pool)
            .await
            .or_db("load a token")?;
        row.map(<(ApiToken, User)>::try_from).transpose()
    }

    /// One statement, one round trip, shared with the other reads of this kind waiting then.
    async fn token_and_device(&self, hash: &[u8], id: Uuid) -> Result<(Option<(ApiToken, User)>, Option<Device>)> {
        self.point_reads.ask((hash.to_vec(), id), crate::rows::CONTEXT).await
    }

    async fn list_tokens(&self, user_id: Uuid) -> Result<Vec<ApiToken>> {
        let rows = sqlx::query(sql::LIST_TOKENS)
            .bind(user_id)
            .try_map(from_row::<TokenRow>)
            .fetch_all(&self.pool)
            .await
            .or_db("list tokens")?;
        Ok(rows.into_iter().map(ApiToken::from).collect())
    }

    async fn list_all_tokens(&self, page: TokenPage) -> Result<Vec<(ApiToken, User)>> {
        let (inserted_at, id) = page.after.unwrap_or((Timestamp::from_micros(i64::MIN), Uuid::nil()));
        let rows = sqlx::query(sql::LIST_ALL_TOKENS)
            .bind(inserted_at.micros())
            .bind(id)
            .bind(i64::from(page.limit))
            .try_map(token_with_user)
            .fetch_all(&self.pool)
            .await
            .or_db("list every token")?;
        rows.into_iter().map(<(ApiToken, User)>::try_from).collect()
    }

    async fn touch_token(&self, id: Uuid, now: Timestamp) -> Result<()> {
        sqlx::query(sql::TOUCH_TOKEN).bind(id).bind(now.micros()).execute(&self.pool).await.or_db("touch a token")?;
        Ok(())
    }

    async fn delete_token(&self, id: Uuid) -> Result<bool> {
        self.write(move |tx| {
            Box::pin(async move {
                let gone: Option<(Uuid, String)> = sqlx::query_as(sql::DELETE_TOKEN)
                    .bind(id)
                    .fetch_optional(tx.conn())
                    .await
                    .or_db("delete a token")?;
                let Some((user_id, name)) = gone else { return Ok(false) };
                tx.append(changes::token_deleted(id, user_id, &name)).await?;
                Ok(true)
            })
        })
        .await
    }

    async fn record_sign_in(&self, user_id: Uuid, method: &str, at: Timestamp) -> Result<()> {
        sqlx::query(sql::RECORD_SIGN_IN)
            .bind(user_id)
            .bind(at.micros())
            .bind(method.to_owned())
            .execute(&self.pool)
            .await
            .or_db("record a sign-in")?;
        Ok(())
    }

    async fn insert_session(&self, session: &Session, method: &str) -> Result<()> {
        let row = SessionRow::from(session);
        let entry = changes::signed_in(session.user_id, session.id, method);
        let user_id = session.user_id;
        self.write(move |tx| {
            Box::pin(async move {
                row.bind_insert(sqlx::query(sql::INSERT_SESSION)).execute(tx.conn()).await.or_db("insert a session")?;
                let audit = tx.audit().clone().signing_in(user_id);
                tx.append_as(&audit, entry).await
            })
        })
        .await
    }

    async fn session_by_hash(&self, hash: &[u8]) -> Result<Option<(Session, User)>> {
        let row = sqlx::query(sql::SESSION_WITH_USER)
            .bind(hash.to_vec())
            .try_map(session_with_user)
            .fetch_optional(&self.pool)
            .await
            .or_db("load a session")?;
        row.map(<(Session, User)>::try_from).transpose()
    }

    async fn delete_session(&self, id: Uuid) -> Result<bool> {
        self.write(move |tx| {
            Box::pin(async move {
                let user_id: Option<Uuid> = sqlx::query_scalar(sql::DELETE_SESSION)
                    .bind(id)
                    .fetch_optional(tx.conn())
                    .await
                    .or_db("delete a session")?;
                let Some(user_id) = user_id else { return Ok(false) };
                let entry = changes::session_ended(&tx.audit().actor, id, user_id);
                tx.append(entry).await?;
                Ok(true)
            })
        })
        .await
    }

    async fn insert_sign_in_flow(&self, flow: &SignInFlow, now: Timestamp) -> Result<()> {
        sqlx::query(sql::DELETE_EXPIRED_SIGN_IN_FLOWS)
            .bind(now.micros())
            .execute(&self.pool)
            .await
            .or_db("delete expired sign-in flows")?;
        let row = SignInFlowRow::from(flow);
        row.bind_insert(sqlx::query(sql::INSERT_SIGN_IN_FLOW))
            .execute(&self.pool)
            .await
            .or_db("insert a sign-in flow")?;
        Ok(())
    }

    async fn take_sign_in_flow(&self, state_hash: &[u8]) -> Result<Option<SignInFlow>> {
        let row = sqlx::query(sql::TAKE_SIGN_IN_FLOW)
            .bind(state_hash)
            .try_map(from_row::<SignInFlowRow>)
            .fetch_optional(&self.pool)
            .await
            .or_db("take a sign-in flow")?;
        Ok(row.map(SignInFlow::from))
    }

    async fn delete_user_sessions(&self, user_id: Uuid) -> Result<u64> {
        self.write(move |tx| {
            Box::pin(async move {
                let done = sqlx::query(sql::DELETE_USER_SESSIONS)
                    .bind(user_id)
                    .execute(tx.conn())
                    .await
                    .or_db("delete a user's sessions")?;
                let deleted = done.rows_affected();
                if deleted > 0 {
                    tx.append(changes::sessions_revoked(user_id, deleted)).await?;
                }
                Ok(deleted)
            })
        })
        .await
    }

    async fn delete_expired_sessions(&self, now: Timestamp) -> Result<u64> {
        let done = sqlx::query(sql::DELETE_EXPIRED_SESSIONS)
            .bind(now.micros())
            .execute(&self.pool)
            .await
            .or_db("delete expired sessions")?;
        Ok(done.rows_affected())
    }

    async fn upsert_oidc_connection(&self, connection: &OidcConnection) -> Result<()> {
        const CONTEXT: &str = "store an OIDC connection";
        let row = OidcConnectionRow::from(connection);
        let (user_id, provider_id) = (connection.user_id, connection.provider_id.clone());
        self.write(move |tx| {
            Box::pin(async move {
                let existed = sqlx::query(sql::OIDC_CONNECTION_EXISTS)
                    .bind(user_id)
                    .bind(&provider_id)
                    .fetch_optional(tx.conn())
                    .await
                    .or_db(CONTEXT)?
                    .is_some();
                row.bind_insert(sqlx::query(sql::UPSERT_OIDC_CONNECTION)).execute(tx.conn()).await.or_db(CONTEXT)?;
                if existed {
                    return Ok(());
                }
                let audit = tx.audit().clone().signing_in(user_id);
                tx.append_as(&audit, changes::oidc_connection_created(user_id, &provider_id)).await
            })
        })
        .await
    }

    async fn list_oidc_connections(&self) -> Result<Vec<OidcConnection>> {
        let rows = sqlx::query(sql::LIST_OIDC_CONNECTIONS)
            .try_map(from_row::<OidcConnectionRow>)
            .fetch_all(&self.pool)
            .await
            .or_db("list OIDC connections")?;
        Ok(rows.into_iter().map(OidcConnection::from).collect())
    }

    async fn claim_oidc_connection(
        &self,
        user_id: Uuid,
        provider_id: &str,
        seen: Timestamp,
        now: Timestamp,
    ) -> Result<bool> {
        let done = sqlx::query(sql::CLAIM_OIDC_CONNECTION)
            .bind(user_id)
            .bind(provider_id.to_owned())
            .bind(seen.micros())
            .bind(now.micros())
            .execute(&self.pool)
            .await
            .or_db("claim an OIDC connection")?;
        Ok(done.rows_affected() > 0)
    }

    async fn rotate_oidc_refresh_token(
        &self,
        user_id: Uuid,
        provider_id: &str,
        claimed_at: Timestamp,
        refresh_token: &Sealed,
        now: Timestamp,
    ) -> Result<bool> {
        let done = sqlx::query(sql::ROTATE_OIDC_REFRESH_TOKEN)
            .bind(user_id)
            .bind(provider_id.to_owned())
            .bind(refresh_token.0.clone())
            .bind(now.micros())
            .bind(claimed_at.micros())
            .execute(&self.pool)
            .await
            .or_db("rotate an OIDC refresh token")?;
        Ok(done.rows_affected() > 0)
    }

    async fn delete_oidc_connection(&self, user_id: Uuid, provider_id: &str, claimed_at: Timestamp) -> Result<bool> {
        let query = sqlx::query(sql::DELETE_OIDC_CONNECTION)
            .bind(user_id)
            .bind(provider_id.to_owned())
            .bind(claimed_at.micros());
        let entry = changes::oidc_connection_deleted(user_id, provider_id);
        self.execute_recorded("delete an OIDC connection", query, entry).await
    }

    async fn totp_of(&self, user_id: Uuid) -> Result<Option<TotpRecord>> {
        let row: Option<(Vec<u8>, Option<i64>, Option<i64>, i64)> = sqlx::query_as(sql::totp::TOTP_OF)
            .bind(user_id)
            .fetch_optional(&self.pool)
            .await
            .or_db("load an authenticator")?;
        Ok(row.map(|(sealed, confirmed_at, last_step, left)| TotpRecord {
            sealed_secret: Sealed(sealed),
            confirmed_at: confirmed_at.map(Timestamp::from_micros),
            last_step,
            recovery_codes_left: u32::try_from(left).unwrap_or(u32::MAX),
        }))
    }

    async fn start_totp(&self, user_id: Uuid, secret: &Sealed, now: Timestamp) -> Result<bool> {
        let query = sqlx::query(sql::totp::START_TOTP).bind(user_id).bind(secret.0.clone()).bind(now.micros());
        self.execute_recorded("start an authenticator", query, changes::totp(user_id, "totp.started", None)).await
    }

    async fn confirm_totp(&self, user_id: Uuid, step: i64, now: Timestamp, recovery_codes: &[Vec<u8>]) -> Result<bool> {
        const CONTEXT: &str = "confirm an authenticator";
        let codes = recovery_codes.to_vec();
        self.write(move |tx| {
            Box::pin(async move {
                let done = sqlx::query(sql::totp::CONFIRM_TOTP)
                    .bind(user_id)
                    .bind(now.micros())
                    .bind(step)
                    .execute(tx.conn())
                    .await
                    .or_db(CONTEXT)?;
                if done.rows_affected() == 0 {
                    return Ok(false);
                }
                insert_recovery_codes(tx.conn(), user_id, &codes).await?;
                tx.append(changes::totp(user_id, "totp.confirmed", Some(codes.len()))).await?;
                Ok(true)
            })
        })
        .await
    }

    async fn accept_totp_step(&self, user_id: Uuid, step: i64) -> Result<bool> {
        let done = sqlx::query(sql::totp::ACCEPT_TOTP_STEP)
            .bind(user_id)
            .bind(step)
            .execute(&self.pool)
            .await
            .or_db("use an authenticator code")?;
        Ok(done.rows_affected() > 0)
    }

    async fn replace_recovery_codes(&self, user_id: Uuid, recovery_codes: &[Vec<u8>]) -> Result<bool> {
        const CONTEXT: &str = "replace recovery codes";
        let codes = recovery_codes.to_vec();
        self.write(move |tx| {
            Box::pin(async move {
                let confirmed = sqlx::query(&format!("{} FOR UPDATE", sql::totp::TOTP_CONFIRMED))
                    .bind(user_id)
                    .fetch_optional(tx.conn())
                    .await
                    .or_db(CONTEXT)?;
                if confirmed.is_none() {
                    return Ok(false);
                }
                insert_recovery_codes(tx.conn(), user_id, &codes).await?;
                tx.append(changes::totp(user_id, "totp.recovery_codes_replaced", Some(codes.len()))).await?;
                Ok(true)
            })
        })
        .await
    }

    async fn use_recovery_code(&self, user_id: Uuid, code_hash: &[u8]) -> Result<bool> {
        let code_hash = code_hash.to_vec();
        self.write(move |tx| {
            Box::pin(async move {
                let done = sqlx::query(sql::totp::USE_RECOVERY_CODE)
                    .bind(user_id)
                    .bind(code_hash)
                    .execute(tx.conn())
                    .await
                    .or_db("use a recovery code")?;
                if done.rows_affected() == 0 {
                    return Ok(false);
                }
                let audit = tx.audit().clone().signing_in(user_id);
                tx.append_as(&audit, changes::totp(user_id, "totp.recovery_code_used", None)).await?;
                Ok(true)
            })
        })
        .await
    }

    async fn delete_totp(&self, user_id: Uuid) -> Result<bool> {
        let query = sqlx::query(sql::totp::DELETE_TOTP).bind(user_id);
        self.execute_recorded("delete an authenticator", query, changes::totp(user_id, "totp.deleted", None)).await
    }

    async fn list_devices(&self, query: &DeviceQuery) -> Result<Vec<Device>> {
        let sql = sql::list_devices(query);
        let rows = list_query(&sql, query).fetch_all(&self.pool).await.or_db("list devices")?;
        decode_all(rows)
    }

    async fn stream_devices(&self, query: &DeviceQuery) -> Result<DeviceBatches> {
        let (sql, query, pool) = (sql::list_devices(query), query.clone(), self.pool.clone());
        let (sender, batches) = mpsc::channel(STREAM_DEPTH);
        tokio::spawn(async move {
            let mut rows = list_query(&sql, &query).fetch(&pool);
            let mut batcher = Batcher::new();
            while let Some(row) = rows.next().await {
                let Some(batch) = row.or_db("list devices").and_then(|row| batcher.push(row)).transpose() else {
                    continue;
                };
                let failed = batch.is_err();
                if sender.send(batch).await.is_err() || failed {
                    return;
                }
            }
            if let Some(last) = batcher.rest() {
                // The reader may have gone; nothing is left to do either way.
                let _ = sender.send(Ok(last)).await;
            }
        });
        Ok(batches)
    }

    async fn device_by_id(&self, id: Uuid) -> Result<Option<Device>> {
        let row = sqlx::query(sql::DEVICE_BY_ID)
            .bind(id)
            .try_map(from_row::<DeviceRow>)
            .fetch_optional(&self.pool)
            .await
            .or_db("load a device")?;
        row.map(Device::try_from).transpose()
    }

    async fn insert_device(&self, device: &DeviceInsert, pools: &Pools, max_devices: u32) -> Result<Device> {
        let (db, device, pools) = (self.audited(), device.clone(), pools.clone());
        to_completion(async move { rules::insert_device(&db, &device, &pools, max_devices).await }).await
    }

    async fn update_device(&self, id: Uuid, update: &DeviceUpdate, now: Timestamp) -> Result<Device> {
        let (db, update) = (self.audited(), update.clone());
        to_completion(async move { rules::update_device(&db, id, &update, now).await }).await
    }

    async fn set_device_paused(&self, id: Uuid, paused: bool, now: Timestamp) -> Result<Option<Device>> {
        let db = self.audited();
        to_completion(async move { rules::devices::set_paused(&db, id, paused, now).await }).await
    }

    async fn delete_device(&self, id: Uuid) -> Result<bool> {
        // The release trigger puts its addresses back into ip_released.
        self.write(move |tx| {
            Box::pin(async move {
                let row = sqlx::query(sql::DELETE_DEVICE)
                    .bind(id)
                    .try_map(from_row::<DeviceRow>)
                    .fetch_optional(tx.conn())
                    .await
                    .or_db("delete a device")?;
                let Some(row) = row else { return Ok(false) };
                tx.append(changes::device_deleted(&Device::try_from(row)?)).await?;
                Ok(true)
            })
        })
        .await
    }

    async fn list_rules(&self) -> Result<Vec<Rule>> {
        let rows = sqlx::query(sql::LIST_RULES)
            .try_map(from_row::<RuleRow>)
            .fetch_all(&self.pool)
            .await
            .or_db("list rules")?;
        decode_all(rows)
    }

    async fn rule_by_id(&self, id: Uuid) -> Result<Option<Rule>> {
        let row = sqlx::query(sql::RULE_BY_ID)
            .bind(id)
            .try_map(from_row::<RuleRow>)
            .fetch_optional(&self.pool)
            .await
            .or_db("load a rule")?;
        row.map(Rule::try_from).transpose()
    }

    async fn insert_rule(&self, rule: &Rule) -> Result<()> {
        let (db, rule) = (self.audited(), rule.clone());
        to_completion(async move { rules::egress::insert_rule(&db, &rule).await }).await
    }

    async fn update_rule(&self, id: Uuid, changes: &RuleChanges, now: Timestamp) -> Result<Option<Rule>> {
        let (db, changes) = (self.audited(), changes.clone());
        to_completion(async move { rules::egress::update_rule(&db, id, &changes, now).await }).await
    }

    async fn delete_rule(&self, id: Uuid) -> Result<bool> {
        self.write(move |tx| {
            Box::pin(async move {
                let row = sqlx::query(sql::DELETE_RULE)
                    .bind(id)
                    .try_map(from_row::<RuleRow>)
                    .fetch_optional(tx.conn())
                    .await
                    .or_db("delete a rule")?;
                let Some(row) = row else { return Ok(false) };
                tx.append(changes::rule_deleted(&Rule::try_from(row)?)).await?;
                Ok(true)
            })
        })
        .await
    }

    async fn egress_policy(&self, session: VpnSession) -> Result<EgressPolicy> {
        const CONTEXT: &str = "read the egress rules";
        // Three statements, one snapshot: a REPEATABLE READ transaction.
        let mut tx = self.pool.begin().await.or_db(CONTEXT)?;
        sqlx::query(SNAPSHOT).execute(&mut *tx).await.or_db(CONTEXT)?;
        let EgressRules { rules, memberships, .. } = egress_rules_in(&mut tx).await?;
        let sources = sqlx::query(sql::RULE_SOURCES)
            .bind(session.cutoff().map(Timestamp::micros))
            .try_map(|row: PgRow| read_aliased::<RuleSourceRow>(&row))
            .fetch_all(&mut *tx)
            .await
            .or_db(CONTEXT)?;
        tx.commit().await.or_db(CONTEXT)?;
        // The default action is the configuration's; the domain sets it.
        Ok(EgressPolicy { rules, sources: decode_all(sources)?, memberships, ..Default::default() })
    }

    async fn egress_rules(&self) -> Result<EgressRules> {
        let mut tx = self.pool.begin().await.or_db("read the egress rules")?;
        sqlx::query(SNAPSHOT).execute(&mut *tx).await.or_db("read the egress rules")?;
        let rules = egress_rules_in(&mut tx).await?;
        tx.commit().await.or_db("read the egress rules")?;
        Ok(rules)
    }

    async fn active_peers(&self, session: VpnSession) -> Result<Vec<ActivePeer>> {
        let rows = sqlx::query(sql::ACTIVE_PEERS)
            .bind(session.cutoff().map(Timestamp::micros))
            .try_map(|row: PgRow| read_aliased::<ActivePeerRow>(&row))
            .fetch_all(&self.pool)
            .await
            .or_db("list the active peers")?;
        decode_all(rows)
    }

    async fn record_stats_from(&self, source: Uuid, reports: Vec<StatsReport>) -> Result<()> {
        let sorted = crate::sql::stats::ordered(reports);
        let handshakes: Vec<i64> = sorted.iter().map(|r| r.latest_handshake.micros()).collect();
        let rx: Vec<i64> = sorted.iter().map(|r| r.rx_bytes).collect();
        let tx: Vec<i64> = sorted.iter().map(|r| r.tx_bytes).collect();
        let (keys, ips): (Vec<String>, Vec<Option<String>>) =
            sorted.into_iter().map(|r| (r.public_key, r.remote_ip)).unzip();
        let pool = self.pool.clone();
        to_completion(async move {
            let query = sqlx::query(crate::sql::stats::ADD_STATS_POSTGRES)
                .bind(source)
                .bind(keys)
                .bind(handshakes)
                .bind(ips)
                .bind(rx)
                .bind(tx);
            query.execute(&pool).await.map(|_| ()).or_db("record peer statistics")
        })
        .await
    }

    async fn watch_data_plane(&self, changes: DataPlaneChanges) -> Result<()> {
        let wakes = [("", changes.peers), (RULES_PAYLOAD, changes.rules)];
        self.listen(PEERS_CHANNEL, &wakes, false, "listen for peer changes").await
    }

    async fn watch_configuration_changes(&self, changed: Arc<Notify>) -> Result<()> {
        self.listen(CONFIGURATION_CHANNEL, &[("", changed)], true, "listen for configuration changes").await
    }

    async fn import(&self, batch: &ImportBatch, mode: ImportMode) -> Result<ImportOutcome> {
        self.import_batch(batch, mode).await
    }
}

/// A setting's value, locked for the transaction that replaces it (its audit event names
/// the value before).
const SETTING_FOR_UPDATE: &str = "SELECT value FROM settings WHERE key = $1 FOR UPDATE";

/// Makes a transaction's statements read one snapshot (its first statement).
const SNAPSHOT: &str = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY";

/// Every rule and the memberships of the groups they name, read in `tx` (a snapshot: both
/// [`Store::egress_policy`] and [`Store::egress_rules`] read them so). The default action is
/// the caller's.
async fn egress_rules_in(tx: &mut sqlx::PgConnection) -> Result<EgressRules> {
    const CONTEXT: &str = "read the egress rules";
    let rules = sqlx::query(sql::LIST_RULES).try_map(from_row::<RuleRow>).fetch_all(&mut *tx).await.or_db(CONTEXT)?;
    let memberships = sqlx::query(sql::RULE_MEMBERSHIPS)
        .try_map(|row: PgRow| read_aliased::<RuleMembershipRow>(&row))
        .fetch_all(&mut *tx)
        .await
        .or_db(CONTEXT)?;
    Ok(EgressRules {
        rules: decode_all(rules)?,
        memberships: memberships.into_iter().map(Membership::from).collect(),
        ..Default::default()
    })
}
