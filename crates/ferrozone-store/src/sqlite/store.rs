//! The [`Store`] on SQLite: reads on pooled read-only connections, writes (the
//! multi-statement rules of [`ferrozone_domain::rules`] among them) in the batches of
//! [`super::writer`].

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::Context;
use async_trait::async_trait;
use ferrozone_domain::audit::{changes, context, AuditKey, Entry};
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
use ferrozone_domain::store::{DeviceBatches, DeviceQuery, Store, TokenPage, STREAM_DEPTH};
use ferrozone_domain::vpn_session::VpnSession;
use ferrozone_domain::{DomainError, Timestamp};
use rusqlite::{params, Connection, OptionalExtension, ToSql};
use tokio::sync::{mpsc, Notify};
use uuid::Uuid;

use super::conn::Location;
use super::errors::OrDb;
use super::tx::SqliteTx;
use super::writer::Writer;
use super::{migrate, point_reads, prepare, prepare_built, rows};

mod audit_log;
mod gateways;
mod groups;
mod import;
mod links;
mod sample;
mod scim;
mod stats;
mod users_page;
mod watch;
mod webhooks;
use crate::columns::Columns;
use crate::rows::{
    decode_all, Batcher, OidcConnectionRow, PointReads, SessionRow, SignInFlowRow, TokenAndDevice, TokenRow, UserRow,
};
use crate::{sql, StoreOptions, Synchronous};

/// The [`Store`] on an SQLite database. Clones share the connections.
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
    /// [`Store::token_and_device`], many in one read transaction (see [`crate::coalesce`]).
    point_reads: PointReads,
}

pub(super) struct Inner {
    location: Location,
    synchronous: Synchronous,
    /// Idle read connections; at most `max_idle` are kept.
    idle: Mutex<Vec<Connection>>,
    max_idle: usize,
    /// Reads running now, each on a connection of its own (for the pool gauges).
    reading: AtomicUsize,
    closed: AtomicBool,
    writer: Writer,
    /// The MAC key of the audit chain.
    pub(super) audit_key: AuditKey,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").field("database", &self.inner.location.describe()).finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens (creating if missing, with its parent directories) the database at `url`:
    /// `sqlite://relative/path.db`, `sqlite:///absolute/path.db` or `sqlite::memory:`.
    pub async fn connect(url: &str, options: &StoreOptions) -> anyhow::Result<Self> {
        let location = Location::parse(url)?;
        location.prepare()?;
        let synchronous = options.synchronous;
        // The writer opens first: it creates the file and switches it to WAL before any
        // reader opens it.
        let open = location.clone();
        let conn = tokio::task::spawn_blocking(move || open.open(synchronous, true))
            .await?
            .map_err(|e| location.open_failure(e))
            .with_context(|| format!("cannot open the SQLite database {}", location.describe()))?;
        let writer = Writer::start(conn, options.audit_key.clone()).context("cannot start the SQLite writer thread")?;
        let max_idle = usize::try_from(options.max_connections.max(1)).unwrap_or(1);
        let inner = Inner {
            location,
            synchronous,
            idle: Mutex::new(Vec::new()),
            max_idle,
            reading: AtomicUsize::new(0),
            closed: false.into(),
            writer,
            audit_key: options.audit_key.clone(),
        };
        let inner = Arc::new(inner);
        let point_reads = point_reads::start(inner.clone());
        Ok(Self { inner, point_reads })
    }

    /// Applies the pending migrations, on a connection of their own (each migration is a
    /// transaction; the writer's connection is always inside its batch).
    pub async fn migrate(&self) -> anyhow::Result<()> {
        let (location, synchronous) = (self.inner.location.clone(), self.inner.synchronous);
        tokio::task::spawn_blocking(move || {
            let mut conn = location.open(synchronous, true)?;
            migrate::run(&mut conn)
        })
        .await?
        .context("cannot migrate the SQLite database")
    }

    /// Finishes the queued writes and closes every connection.
    pub async fn close(&self) {
        self.inner.closed.store(true, Ordering::Release);
        self.inner.idle.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clear();
        self.inner.writer.stop().await;
    }

    /// Runs `read` on an idle read connection (opening one if none is idle), here and now.
    fn read<T>(&self, context: &'static str, read: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T> {
        self.inner.read(context, read)
    }

    /// Runs `read` on a blocking thread: for reads whose size has no bound.
    async fn read_long<T: Send + 'static>(
        &self,
        context: &'static str,
        read: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T> {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || inner.read(context, read))
            .await
            .map_err(|e| DomainError::Internal(anyhow::anyhow!("a read task failed: {e}")))?
    }

    /// Runs `write` in the writer's next batch; returns once it is committed. The audit
    /// context is read here, in the caller's task: the writer thread has none.
    async fn write<T: Send + 'static>(
        &self,
        write: impl FnOnce(&mut SqliteTx<'_>) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let (key, audit) = (self.inner.audit_key.clone(), context::current());
        self.inner.writer.write(move |batch| write(&mut SqliteTx::new(batch, &key, &audit))).await
    }

    /// One statement in the writer's next batch; returns the number of rows it changed.
    async fn execute(&self, context: &'static str, statement: &'static str, args: Args) -> Result<usize> {
        self.write(move |tx| execute_in(tx, context, statement, &args)).await
    }

    /// [`Self::execute`], recording `entry` when the statement changed a row; returns whether.
    async fn execute_recorded(
        &self,
        context: &'static str,
        statement: &'static str,
        args: Args,
        entry: Entry,
    ) -> Result<bool> {
        self.write(move |tx| {
            if execute_in(tx, context, statement, &args)? == 0 {
                return Ok(false);
            }
            tx.append(entry)?;
            Ok(true)
        })
        .await
    }
}

/// Inserts `row` with `statement`, inside the caller's write.
fn insert_row<R: Columns>(tx: &SqliteTx<'_>, context: &'static str, statement: &'static str, row: &R) -> Result<()> {
    let args = rows::insert_args(row);
    prepare(tx.conn(), statement).and_then(|mut stmt| stmt.execute(args.as_slice())).or_db(context)?;
    Ok(())
}

/// Runs one statement inside the caller's write; returns the number of rows it changed.
fn execute_in(tx: &SqliteTx<'_>, context: &'static str, statement: &'static str, args: &Args) -> Result<usize> {
    let params: Vec<&dyn ToSql> = args.iter().map(|arg| arg.as_ref() as &dyn ToSql).collect();
    prepare(tx.conn(), statement).and_then(|mut stmt| stmt.execute(params.as_slice())).or_db(context)
}

/// A row of [`sql::totp::TOTP_OF`].
fn totp_record(row: &rusqlite::Row<'_>) -> rusqlite::Result<TotpRecord> {
    Ok(TotpRecord {
        sealed_secret: Sealed(row.get(0)?),
        confirmed_at: row.get::<_, Option<i64>>(1)?.map(Timestamp::from_micros),
        last_step: row.get(2)?,
        recovery_codes_left: u32::try_from(row.get::<_, i64>(3)?).unwrap_or(u32::MAX),
    })
}

/// Replaces the user's recovery codes with `codes` (hashes), inside the caller's transaction.
fn insert_recovery_codes(conn: &Connection, user_id: Uuid, codes: &[Vec<u8>]) -> Result<()> {
    prepare(conn, sql::totp::DELETE_RECOVERY_CODES)
        .and_then(|mut stmt| stmt.execute([user_id]))
        .or_db("replace recovery codes")?;
    let mut insert = prepare(conn, sql::totp::INSERT_RECOVERY_CODE).or_db("store recovery codes")?;
    for code in codes {
        insert.execute(params![user_id, code]).or_db("store recovery codes")?;
    }
    Ok(())
}

/// Owned statement arguments, sent to the writer thread.
type Args = Vec<Box<dyn ToSql + Send>>;

/// The arguments of [`sql::list_devices`] for `query`, in its parameter order.
fn list_args(query: &DeviceQuery) -> Args {
    let mut args: Args = Vec::new();
    if let Some(user_id) = query.user_id {
        args.push(Box::new(user_id));
    }
    if let Some(presence) = query.presence {
        args.push(Box::new(presence.cutoff().micros()));
    }
    if let Some((inserted_at, id)) = query.after {
        args.push(Box::new(inserted_at.micros()));
        args.push(Box::new(id));
    }
    if let Some(limit) = query.limit {
        args.push(Box::new(i64::from(limit)));
    }
    args
}

impl Inner {
    pub(super) fn read<T>(
        &self,
        context: &'static str,
        read: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T> {
        if self.closed.load(Ordering::Acquire) {
            crate::metrics::unavailable("sqlite");
            return Err(DomainError::Unavailable(anyhow::anyhow!("the SQLite database is closed")));
        }
        let _reading = sample::Reading::start(&self.reading);
        let idle = self.idle.lock().unwrap_or_else(std::sync::PoisonError::into_inner).pop();
        let conn = match idle {
            Some(conn) => conn,
            None => self.location.open(self.synchronous, false).or_db(context)?,
        };
        let result = read(&conn).or_db(context);
        if !conn.is_autocommit() {
            // A read that failed inside its transaction: this connection would go on
            // reading that old snapshot.
            return result;
        }
        let mut idle = self.idle.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if idle.len() < self.max_idle && !self.closed.load(Ordering::Acquire) {
            idle.push(conn);
        }
        result
    }
}

/// Runs a transaction body of [`rules`] to its end. The body's steps are [`SqliteTx`]
/// methods, which never wait, so one poll completes it.
fn run_now<T>(body: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    let mut body = std::pin::pin!(body);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match body.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(result) => result,
        std::task::Poll::Pending => Err(DomainError::Internal(anyhow::anyhow!("an SQLite write step waited"))),
    }
}

#[async_trait]
impl Store for SqliteStore {
    async fn ping(&self) -> Result<()> {
        self.read("ping", |conn| prepare(conn, sql::PING)?.query_row([], |_| Ok(())))
    }

    async fn setting(&self, key: &str) -> Result<Option<Vec<u8>>> {
        self.read("load a setting", |conn| prepare(conn, sql::SETTING)?.query_row([key], |row| row.get(0)).optional())
    }

    async fn init_setting(&self, key: &str, value: &[u8]) -> Result<Vec<u8>> {
        let (key, value) = (key.to_owned(), value.to_vec());
        // Both statements in one write: the read sees the insert or the value stored first.
        self.write(move |tx| {
            let conn = tx.conn();
            let stored = || -> rusqlite::Result<Vec<u8>> {
                prepare(conn, sql::INIT_SETTING)?.execute(params![key, value])?;
                prepare(conn, sql::SETTING)?.query_row([&key], |row| row.get(0))
            };
            stored().or_db("store a setting")
        })
        .await
    }

    async fn put_settings(&self, entries: &[(String, Vec<u8>)]) -> Result<()> {
        const CONTEXT: &str = "store settings";
        let entries = entries.to_vec();
        self.write(move |tx| {
            let mut before = Vec::with_capacity(entries.len());
            {
                let mut read = prepare(tx.conn(), sql::SETTING).or_db(CONTEXT)?;
                for (key, _) in &entries {
                    before.push(read.query_row([key], |row| row.get::<_, Vec<u8>>(0)).optional().or_db(CONTEXT)?);
                }
                let mut statement = prepare(tx.conn(), sql::PUT_SETTING).or_db(CONTEXT)?;
                for (key, value) in &entries {
                    statement.execute(params![key, value]).or_db(CONTEXT)?;
                }
            }
            let rows = entries
                .iter()
                .zip(&before)
                .map(|((key, after), before)| (key.as_str(), before.as_deref(), after.as_slice()));
            if let Some(entry) = changes::configuration_updated(rows) {
                tx.append(entry)?;
            }
            Ok(())
        })
        .await
    }

    async fn list_users(&self) -> Result<Vec<User>> {
        let rows = self.read_long("list users", |conn| {
            prepare(conn, sql::LIST_USERS)?.query_map([], rows::user)?.collect::<rusqlite::Result<Vec<_>>>()
        });
        decode_all(rows.await?)
    }

    async fn user_by_id(&self, id: Uuid) -> Result<Option<User>> {
        let row =
            self.read("load a user", |conn| prepare(conn, sql::USER_BY_ID)?.query_row([id], rows::user).optional());
        row?.map(User::try_from).transpose()
    }

    async fn user_by_email(&self, email_key: &str) -> Result<Option<User>> {
        let row = self.read("load a user", |conn| {
            prepare(conn, sql::USER_BY_EMAIL)?.query_row([email_key], rows::user).optional()
        });
        row?.map(User::try_from).transpose()
    }

    async fn count_admins(&self) -> Result<u64> {
        let n: i64 =
            self.read("count admins", |conn| prepare(conn, sql::COUNT_ADMINS)?.query_row([], |row| row.get(0)))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    async fn user_device_count(&self, user_id: Uuid) -> Result<Option<u64>> {
        let n: Option<i64> = self.read("count devices", |conn| {
            prepare(conn, sql::COUNT_USER_DEVICES)?.query_row([user_id], |row| row.get(0)).optional()
        })?;
        Ok(n.map(|n| u64::try_from(n).unwrap_or(0)))
    }

    async fn insert_user(&self, user: &User) -> Result<()> {
        let (row, entry) = (UserRow::from(user), changes::user_created(user));
        self.write(move |tx| {
            insert_row(tx, "insert a user", sql::INSERT_USER, &row)?;
            tx.append(entry)
        })
        .await
    }

    async fn update_user(&self, id: Uuid, update: &UserUpdate, now: Timestamp) -> Result<User> {
        let update = update.clone();
        self.write(move |tx| run_now(rules::users::update_in(tx, id, &update, now))).await
    }

    async fn delete_user(&self, id: Uuid) -> Result<()> {
        self.write(move |tx| run_now(rules::users::delete_in(tx, id))).await
    }

    async fn insert_token(&self, token: &ApiToken) -> Result<()> {
        let (row, entry) = (TokenRow::from(token), changes::token_created(token));
        self.write(move |tx| {
            insert_row(tx, "insert a token", sql::INSERT_TOKEN, &row)?;
            tx.append(entry)
        })
        .await
    }

    async fn token_by_hash(&self, hash: &[u8]) -> Result<Option<(ApiToken, User)>> {
        let row = self.read("load a token", |conn| {
            prepare(conn, sql::TOKEN_WITH_USER)?.query_row([hash], rows::token_with_user).optional()
        });
        row?.map(<(ApiToken, User)>::try_from).transpose()
    }

    async fn token_by_id(&self, id: Uuid) -> Result<Option<(ApiToken, User)>> {
        let row = self.read("load a token", |conn| {
            prepare(conn, sql::TOKEN_WITH_USER_BY_ID)?.query_row([id], rows::token_with_user).optional()
        });
        row?.map(<(ApiToken, User)>::try_from).transpose()
    }

    async fn list_tokens(&self, user_id: Uuid) -> Result<Vec<ApiToken>> {
        let rows = self.read("list tokens", |conn| {
            prepare(conn, sql::LIST_TOKENS)?.query_map([user_id], rows::token)?.collect::<rusqlite::Result<Vec<_>>>()
        })?;
        Ok(rows.into_iter().map(ApiToken::from).collect())
    }

    async fn list_all_tokens(&self, page: TokenPage) -> Result<Vec<(ApiToken, User)>> {
        let (inserted_at, id) = page.after.unwrap_or((Timestamp::from_micros(i64::MIN), Uuid::nil()));
        let rows = self.read("list every token", |conn| {
            prepare(conn, sql::LIST_ALL_TOKENS)?
                .query_map(params![inserted_at.micros(), id, i64::from(page.limit)], rows::token_with_user)?
                .collect::<rusqlite::Result<Vec<_>>>()
        })?;
        rows.into_iter().map(<(ApiToken, User)>::try_from).collect()
    }

    async fn touch_token(&self, id: Uuid, now: Timestamp) -> Result<()> {
        self.execute("touch a token", sql::TOUCH_TOKEN, vec![Box::new(id), Box::new(now.micros())]).await?;
        Ok(())
    }

    async fn delete_token(&self, id: Uuid) -> Result<bool> {
        self.write(move |tx| {
            let gone: Option<(Uuid, String)> = prepare(tx.conn(), sql::DELETE_TOKEN)
                .and_then(|mut stmt| stmt.query_row([id], |row| Ok((row.get(0)?, row.get(1)?))).optional())
                .or_db("delete a token")?;
            let Some((user_id, name)) = gone else { return Ok(false) };
            tx.append(changes::token_deleted(id, user_id, &name))?;
            Ok(true)
        })
        .await
    }

    async fn record_sign_in(&self, user_id: Uuid, method: &str, at: Timestamp) -> Result<()> {
        let args: Args = vec![Box::new(user_id), Box::new(at.micros()), Box::new(method.to_owned())];
        self.execute("record a sign-in", sql::RECORD_SIGN_IN, args).await?;
        Ok(())
    }

    async fn insert_session(&self, session: &Session, method: &str) -> Result<()> {
        let row = SessionRow::from(session);
        let entry = changes::signed_in(session.user_id, session.id, method);
        let user_id = session.user_id;
        self.write(move |tx| {
            insert_row(tx, "insert a session", sql::INSERT_SESSION, &row)?;
            tx.append_as(|audit| audit.signing_in(user_id), entry)
        })
        .await
    }

    async fn session_by_hash(&self, hash: &[u8]) -> Result<Option<(Session, User)>> {
        let row = self.read("load a session", |conn| {
            prepare(conn, sql::SESSION_WITH_USER)?.query_row([hash], rows::session_with_user).optional()
        });
        row?.map(<(Session, User)>::try_from).transpose()
    }

    async fn delete_session(&self, id: Uuid) -> Result<bool> {
        let actor = context::current().actor;
        self.write(move |tx| {
            let user_id: Option<Uuid> = prepare(tx.conn(), sql::DELETE_SESSION)
                .and_then(|mut stmt| stmt.query_row([id], |row| row.get(0)).optional())
                .or_db("delete a session")?;
            let Some(user_id) = user_id else { return Ok(false) };
            tx.append(changes::session_ended(&actor, id, user_id))?;
            Ok(true)
        })
        .await
    }

    async fn delete_user_sessions(&self, user_id: Uuid) -> Result<u64> {
        self.write(move |tx| {
            let args: Args = vec![Box::new(user_id)];
            let deleted = execute_in(tx, "delete a user's sessions", sql::DELETE_USER_SESSIONS, &args)? as u64;
            if deleted > 0 {
                tx.append(changes::sessions_revoked(user_id, deleted))?;
            }
            Ok(deleted)
        })
        .await
    }

    async fn delete_expired_sessions(&self, now: Timestamp) -> Result<u64> {
        let deleted =
            self.execute("delete expired sessions", sql::DELETE_EXPIRED_SESSIONS, vec![Box::new(now.micros())]).await?;
        Ok(deleted as u64)
    }

    async fn upsert_oidc_connection(&self, connection: &OidcConnection) -> Result<()> {
        const CONTEXT: &str = "store an OIDC connection";
        let row = OidcConnectionRow::from(connection);
        let (user_id, provider_id) = (connection.user_id, connection.provider_id.clone());
        self.write(move |tx| {
            let existed = prepare(tx.conn(), sql::OIDC_CONNECTION_EXISTS)
                .and_then(|mut stmt| stmt.exists(params![user_id, provider_id]))
                .or_db(CONTEXT)?;
            insert_row(tx, CONTEXT, sql::UPSERT_OIDC_CONNECTION, &row)?;
            if existed {
                return Ok(());
            }
            tx.append_as(|audit| audit.signing_in(user_id), changes::oidc_connection_created(user_id, &provider_id))
        })
        .await
    }

    async fn list_oidc_connections(&self) -> Result<Vec<OidcConnection>> {
        let rows = self.read_long("list OIDC connections", |conn| {
            let mut statement = prepare(conn, sql::LIST_OIDC_CONNECTIONS)?;
            let rows = statement.query_map([], rows::oidc_connection)?.collect::<rusqlite::Result<Vec<_>>>();
            rows
        });
        Ok(rows.await?.into_iter().map(OidcConnection::from).collect())
    }

    async fn claim_oidc_connection(
        &self,
        user_id: Uuid,
        provider_id: &str,
        seen: Timestamp,
        now: Timestamp,
    ) -> Result<bool> {
        let args: Args =
            vec![Box::new(user_id), Box::new(provider_id.to_owned()), Box::new(seen.micros()), Box::new(now.micros())];
        Ok(self.execute("claim an OIDC connection", sql::CLAIM_OIDC_CONNECTION, args).await? > 0)
    }

    async fn rotate_oidc_refresh_token(
        &self,
        user_id: Uuid,
        provider_id: &str,
        claimed_at: Timestamp,
        refresh_token: &Sealed,
        now: Timestamp,
    ) -> Result<bool> {
        let args: Args = vec![
            Box::new(user_id),
            Box::new(provider_id.to_owned()),
            Box::new(refresh_token.0.clone()),
            Box::new(now.micros()),
            Box::new(claimed_at.micros()),
        ];
        Ok(self.execute("rotate an OIDC refresh token", sql::ROTATE_OIDC_REFRESH_TOKEN, args).await? > 0)
    }

    async fn delete_oidc_connection(&self, user_id: Uuid, provider_id: &str, claimed_at: Timestamp) -> Result<bool> {
        let provider_id = provider_id.to_owned();
        self.write(move |tx| {
            let args: Args = vec![Box::new(user_id), Box::new(provider_id.clone()), Box::new(claimed_at.micros())];
            if execute_in(tx, "delete an OIDC connection", sql::DELETE_OIDC_CONNECTION, &args)? == 0 {
                return Ok(false);
            }
            tx.append(changes::oidc_connection_deleted(user_id, &provider_id))?;
            Ok(true)
        })
        .await
    }

    async fn insert_sign_in_flow(&self, flow: &SignInFlow, now: Timestamp) -> Result<()> {
        let row = SignInFlowRow::from(flow);
        self.write(move |tx| {
            let conn = tx.conn();
            prepare(conn, sql::DELETE_EXPIRED_SIGN_IN_FLOWS)
                .and_then(|mut stmt| stmt.execute([now.micros()]))
                .or_db("delete expired sign-in flows")?;
            let args = rows::insert_args(&row);
            prepare(conn, sql::INSERT_SIGN_IN_FLOW)
                .and_then(|mut stmt| stmt.execute(args.as_slice()))
                .or_db("insert a sign-in flow")
        })
        .await?;
        Ok(())
    }

    async fn take_sign_in_flow(&self, state_hash: &[u8]) -> Result<Option<SignInFlow>> {
        let hash = state_hash.to_vec();
        let row = self
            .write(move |tx| {
                prepare(tx.conn(), sql::TAKE_SIGN_IN_FLOW)
                    .and_then(|mut stmt| stmt.query_row([hash], rows::sign_in_flow).optional())
                    .or_db("take a sign-in flow")
            })
            .await?;
        Ok(row.map(SignInFlow::from))
    }

    async fn totp_of(&self, user_id: Uuid) -> Result<Option<TotpRecord>> {
        self.read("load an authenticator", |conn| {
            prepare(conn, sql::totp::TOTP_OF)?.query_row([user_id], totp_record).optional()
        })
    }

    async fn start_totp(&self, user_id: Uuid, secret: &Sealed, now: Timestamp) -> Result<bool> {
        let args: Args = vec![Box::new(user_id), Box::new(secret.0.clone()), Box::new(now.micros())];
        self.execute_recorded(
            "start an authenticator",
            sql::totp::START_TOTP,
            args,
            changes::totp(user_id, "totp.started", None),
        )
        .await
    }

    async fn confirm_totp(&self, user_id: Uuid, step: i64, now: Timestamp, recovery_codes: &[Vec<u8>]) -> Result<bool> {
        let codes = recovery_codes.to_vec();
        self.write(move |tx| {
            let conn = tx.conn();
            let confirmed = prepare(conn, sql::totp::CONFIRM_TOTP)
                .and_then(|mut stmt| stmt.execute(params![user_id, now.micros(), step]))
                .or_db("confirm an authenticator")?;
            if confirmed == 0 {
                return Ok(false);
            }
            insert_recovery_codes(conn, user_id, &codes)?;
            tx.append(changes::totp(user_id, "totp.confirmed", Some(codes.len())))?;
            Ok(true)
        })
        .await
    }

    async fn accept_totp_step(&self, user_id: Uuid, step: i64) -> Result<bool> {
        let args: Args = vec![Box::new(user_id), Box::new(step)];
        Ok(self.execute("use an authenticator code", sql::totp::ACCEPT_TOTP_STEP, args).await? > 0)
    }

    async fn replace_recovery_codes(&self, user_id: Uuid, recovery_codes: &[Vec<u8>]) -> Result<bool> {
        let codes = recovery_codes.to_vec();
        self.write(move |tx| {
            let conn = tx.conn();
            let confirmed = prepare(conn, sql::totp::TOTP_CONFIRMED)
                .and_then(|mut stmt| stmt.exists([user_id]))
                .or_db("replace recovery codes")?;
            if !confirmed {
                return Ok(false);
            }
            insert_recovery_codes(conn, user_id, &codes)?;
            tx.append(changes::totp(user_id, "totp.recovery_codes_replaced", Some(codes.len())))?;
            Ok(true)
        })
        .await
    }

    async fn use_recovery_code(&self, user_id: Uuid, code_hash: &[u8]) -> Result<bool> {
        let args: Args = vec![Box::new(user_id), Box::new(code_hash.to_vec())];
        self.write(move |tx| {
            if execute_in(tx, "use a recovery code", sql::totp::USE_RECOVERY_CODE, &args)? == 0 {
                return Ok(false);
            }
            tx.append_as(|audit| audit.signing_in(user_id), changes::totp(user_id, "totp.recovery_code_used", None))?;
            Ok(true)
        })
        .await
    }

    async fn delete_totp(&self, user_id: Uuid) -> Result<bool> {
        let args: Args = vec![Box::new(user_id)];
        self.execute_recorded(
            "delete an authenticator",
            sql::totp::DELETE_TOTP,
            args,
            changes::totp(user_id, "totp.deleted", None),
        )
        .await
    }

    async fn list_devices(&self, query: &DeviceQuery) -> Result<Vec<Device>> {
        let (statement, args) = (sql::list_devices(query), list_args(query));
        let rows = self.read_long("list devices", move |conn| {
            let params: Vec<&dyn ToSql> = args.iter().map(|arg| arg.as_ref() as &dyn ToSql).collect();
            prepare_built(conn, &statement)?
                .query_map(params.as_slice(), rows::device)?
                .collect::<rusqlite::Result<Vec<_>>>()
        });
        decode_all(rows.await?)
    }

    async fn stream_devices(&self, query: &DeviceQuery) -> Result<DeviceBatches> {
        let (statement, args) = (sql::list_devices(query), list_args(query));
        let (sender, batches) = mpsc::channel(STREAM_DEPTH);
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            let mut batcher = Batcher::new();
            // `Ok(false)`: the reader went away, or a row did not decode (already sent).
            let read = inner.read("list devices", |conn| {
                let params: Vec<&dyn ToSql> = args.iter().map(|arg| arg.as_ref() as &dyn ToSql).collect();
                let mut statement = prepare_built(conn, &statement)?;
                let mut rows = statement.query(params.as_slice())?;
                while let Some(row) = rows.next()? {
                    let Some(batch) = batcher.push(rows::device(row)?).transpose() else { continue };
                    let failed = batch.is_err();
                    if sender.blocking_send(batch).is_err() || failed {
                        return Ok(false);
                    }
                }
                Ok(true)
            });
            let last = match read {
                Ok(true) => batcher.rest().map(Ok),
                Ok(false) => None,
                Err(e) => Some(Err(e)),
            };
            if let Some(last) = last {
                // The reader may have gone; nothing is left to do either way.
                let _ = sender.blocking_send(last);
            }
        });
        Ok(batches)
    }

    async fn device_by_id(&self, id: Uuid) -> Result<Option<Device>> {
        let row = self
            .read("load a device", |conn| prepare(conn, sql::DEVICE_BY_ID)?.query_row([id], rows::device).optional());
        row?.map(Device::try_from).transpose()
    }

    /// Queued to the reader task, which answers the reads waiting at one moment in one read
    /// transaction: starting and ending one (its shared-memory and file locks) is a good part
    /// of the cost of a point read.
    async fn token_and_device(&self, hash: &[u8], id: Uuid) -> Result<TokenAndDevice> {
        self.point_reads.ask((hash.to_vec(), id), crate::rows::CONTEXT).await
    }

    async fn insert_device(&self, device: &DeviceInsert, pools: &Pools, max_devices: u32) -> Result<Device> {
        let (device, pools) = (device.clone(), pools.clone());
        self.write(move |tx| run_now(rules::devices::insert_in(tx, &device, &pools, max_devices))).await
    }

    async fn update_device(&self, id: Uuid, update: &DeviceUpdate, now: Timestamp) -> Result<Device> {
        let update = update.clone();
        self.write(move |tx| run_now(rules::devices::update_in(tx, id, &update, now))).await
    }

    async fn set_device_paused(&self, id: Uuid, paused: bool, now: Timestamp) -> Result<Option<Device>> {
        self.write(move |tx| run_now(rules::devices::set_paused_in(tx, id, paused, now))).await
    }

    async fn delete_device(&self, id: Uuid) -> Result<bool> {
        // The release trigger puts its addresses back into ip_released.
        self.write(move |tx| {
            let row = prepare(tx.conn(), sql::DELETE_DEVICE)
                .and_then(|mut stmt| stmt.query_row([id], rows::device).optional())
                .or_db("delete a device")?;
            let Some(row) = row else { return Ok(false) };
            tx.append(changes::device_deleted(&Device::try_from(row)?))?;
            Ok(true)
        })
        .await
    }

    async fn list_rules(&self) -> Result<Vec<Rule>> {
        let rows = self.read_long("list rules", |conn| {
            prepare(conn, sql::LIST_RULES)?.query_map([], rows::rule)?.collect::<rusqlite::Result<Vec<_>>>()
        });
        decode_all(rows.await?)
    }

    async fn rule_by_id(&self, id: Uuid) -> Result<Option<Rule>> {
        let row =
            self.read("load a rule", |conn| prepare(conn, sql::RULE_BY_ID)?.query_row([id], rows::rule).optional());
        row?.map(Rule::try_from).transpose()
    }

    async fn insert_rule(&self, rule: &Rule) -> Result<()> {
        let rule = rule.clone();
        self.write(move |tx| run_now(rules::egress::insert_rule_in(tx, &rule))).await
    }

    async fn update_rule(&self, id: Uuid, changes: &RuleChanges, now: Timestamp) -> Result<Option<Rule>> {
        let changes = changes.clone();
        self.write(move |tx| run_now(rules::egress::update_rule_in(tx, id, &changes, now))).await
    }

    async fn delete_rule(&self, id: Uuid) -> Result<bool> {
        self.write(move |tx| {
            let row = prepare(tx.conn(), sql::DELETE_RULE)
                .and_then(|mut stmt| stmt.query_row([id], rows::rule).optional())
                .or_db("delete a rule")?;
            let Some(row) = row else { return Ok(false) };
            tx.append(changes::rule_deleted(&Rule::try_from(row)?))?;
            Ok(true)
        })
        .await
    }

    async fn egress_policy(&self, session: VpnSession) -> Result<EgressPolicy> {
        let cutoff = session.cutoff().map(Timestamp::micros);
        let read = self.read_long("read the egress rules", move |conn| {
            // Three statements, one snapshot: a read transaction.
            let tx = conn.unchecked_transaction()?;
            let rules = rule_rows_in(&tx)?;
            let sources = prepare(&tx, sql::RULE_SOURCES)?
                .query_map([cutoff], rows::rule_source)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            tx.commit()?;
            Ok((rules, sources))
        });
        let (rules, sources) = read.await?;
        let EgressRules { rules, memberships, .. } = egress_rules(rules)?;
        // The default action is the configuration's; the domain sets it.
        Ok(EgressPolicy { rules, sources: decode_all(sources)?, memberships, ..Default::default() })
    }

    async fn egress_rules(&self) -> Result<EgressRules> {
        let read = self.read_long("read the egress rules", move |conn| {
            let tx = conn.unchecked_transaction()?;
            let rules = rule_rows_in(&tx)?;
            tx.commit()?;
            Ok(rules)
        });
        egress_rules(read.await?)
    }

    async fn active_peers(&self, session: VpnSession) -> Result<Vec<ActivePeer>> {
        let cutoff = session.cutoff().map(Timestamp::micros);
        let rows = self.read_long("list the active peers", move |conn| {
            prepare(conn, sql::ACTIVE_PEERS)?
                .query_map([cutoff], rows::active_peer)?
                .collect::<rusqlite::Result<Vec<_>>>()
        });
        decode_all(rows.await?)
    }

    async fn watch_data_plane(&self, changes: DataPlaneChanges) -> Result<()> {
        self.watch_topics(&[(watch::Topic::Peers, changes.peers), (watch::Topic::Rules, changes.rules)], false).await
    }

    async fn watch_configuration_changes(&self, changed: Arc<Notify>) -> Result<()> {
        self.watch_topics(&[(watch::Topic::Configuration, changed)], true).await
    }

    async fn record_stats_from(&self, source: Uuid, reports: Vec<StatsReport>) -> Result<()> {
        let reports = crate::sql::stats::ordered(reports);
        self.write(move |tx| stats::record(tx, source, &reports)).await
    }

    async fn import(&self, batch: &ImportBatch, mode: ImportMode) -> Result<ImportOutcome> {
        self.import_batch(batch, mode).await
    }
}

/// The rows of every rule and of the memberships of the groups they name.
type RuleRows = (Vec<crate::rows::RuleRow>, Vec<crate::rows::RuleMembershipRow>);

/// [`RuleRows`] read in `tx` (one snapshot: [`Store::egress_policy`] and
/// [`Store::egress_rules`] read them so).
fn rule_rows_in(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<RuleRows> {
    let rules = prepare(tx, sql::LIST_RULES)?.query_map([], rows::rule)?.collect::<rusqlite::Result<Vec<_>>>()?;
    let memberships = prepare(tx, sql::RULE_MEMBERSHIPS)?
        .query_map([], rows::rule_membership)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok((rules, memberships))
}

/// Those rows decoded; the default action is the caller's.
fn egress_rules((rules, memberships): RuleRows) -> Result<EgressRules> {
    Ok(EgressRules {
        rules: decode_all(rules)?,
        memberships: memberships.into_iter().map(Membership::from).collect(),
        ..Default::default()
    })
}
