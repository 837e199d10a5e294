//! The [`Store`] implementation, written once for every sqlx database that has a
//! [`Dialect`]: the SQL both backends share is in [`crate::sql`], what differs (row locks,
//! how a write transaction begins) comes from the dialect.

use std::future::Future;

use async_trait::async_trait;
use ferrozone_domain::error::Result;
use ferrozone_domain::ipam::Pools;
use ferrozone_domain::model::{ApiToken, Device, DeviceUpdate, NewDevice, User, UserUpdate};
use ferrozone_domain::store::{DeviceQuery, Store};
use ferrozone_domain::Timestamp;
use sqlx::{ColumnIndex, Database, Decode, Encode, Executor, FromRow, IntoArguments, Pool, Type};
use uuid::Uuid;

use crate::errors::OrDb;
use crate::rows::{bind_user_insert, decode_all, DeviceRow, TokenRow, TokenUserRow, UserRow};
use crate::tx::{Begin, WriteTx};
use crate::{flows, sql};

mod tx;

/// What differs between the SQL of two backends. Implemented for `Sqlite` and `Postgres`.
pub(crate) trait Dialect: Database {
    /// The statement that opens a write transaction; `None` for the driver's default.
    const BEGIN_WRITE: Option<&'static str>;
    /// [`sql::USER_BY_ID`], locking the row.
    const LOCK_USER: &'static str;
    /// [`sql::ADMIN_IDS`], locking the rows in id order.
    const LOCK_ADMINS: &'static str;
    /// [`sql::DEVICE_BY_ID`], locking the row.
    const LOCK_DEVICE: &'static str;
    /// [`sql::POOL_OFFSET`], locking the row.
    const LOCK_POOL: &'static str;
    /// [`sql::POP_RELEASED`], skipping rows another transaction is claiming.
    const POP_RELEASED: &'static str;

    /// Rows written by a statement.
    fn rows_affected(result: &Self::QueryResult) -> u64;
}

/// Runs a multi-statement write to its end even when the caller goes away. A request
/// cancelled by a client disconnect must not abandon a transaction halfway: on SQLite's
/// single writer connection that left the connection inside a transaction and failed every
/// later write. The spawned task commits or rolls back whatever happens to the request.
async fn to_completion<T: Send + 'static>(work: impl Future<Output = Result<T>> + Send + 'static) -> Result<T> {
    tokio::spawn(work)
        .await
        .map_err(|e| ferrozone_domain::DomainError::Internal(anyhow::anyhow!("write task failed: {e}")))?
}

/// The [`Store`] on an SQL database. Writes go through `write`, reads through `read`; on
/// PostgreSQL both are the same pool, on SQLite `write` has exactly one connection.
#[derive(Debug)]
pub struct SqlStore<DB: Database> {
    pub(crate) read: Pool<DB>,
    pub(crate) write: Pool<DB>,
}

// Not derived: a derive would ask for `DB: Clone`.
impl<DB: Database> Clone for SqlStore<DB> {
    fn clone(&self) -> Self {
        Self { read: self.read.clone(), write: self.write.clone() }
    }
}

impl<DB: Database> SqlStore<DB> {
    /// Closes the pools, waiting for connections in use to come back.
    pub async fn close(&self) {
        self.write.close().await;
        self.read.close().await;
    }
}

// Same bounds as `impl Store for SqlStore<DB>` below (the boxed transaction needs them).
#[async_trait]
impl<DB> Begin for SqlStore<DB>
where
    DB: Dialect,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'q> Uuid: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> String: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> Vec<u8>: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> i32: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> i16: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> bool: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> Option<String>: Encode<'q, DB>,
    for<'q> Option<i64>: Encode<'q, DB>,
    for<'q> Option<i32>: Encode<'q, DB>,
    for<'r> UserRow: FromRow<'r, DB::Row>,
    for<'r> TokenRow: FromRow<'r, DB::Row>,
    for<'r> TokenUserRow: FromRow<'r, DB::Row>,
    for<'r> DeviceRow: FromRow<'r, DB::Row>,
    usize: ColumnIndex<DB::Row>,
{
    async fn begin(&self) -> Result<Box<dyn WriteTx>> {
        let tx = match DB::BEGIN_WRITE {
            Some(statement) => self.write.begin_with(statement).await,
            None => self.write.begin().await,
        };
        let tx = tx.or_db("begin a write transaction")?;
        Ok(Box::new(tx::SqlTx::new(tx)))
    }
}

// The where clause says "the driver encodes and decodes the row types"; it is the same
// on `tx::SqlTx`. Both SQLite and PostgreSQL satisfy it.
#[async_trait]
impl<DB> Store for SqlStore<DB>
where
    DB: Dialect,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'q> Uuid: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> String: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> Vec<u8>: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> i32: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> i16: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> bool: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> Option<String>: Encode<'q, DB>,
    for<'q> Option<i64>: Encode<'q, DB>,
    for<'q> Option<i32>: Encode<'q, DB>,
    for<'r> UserRow: FromRow<'r, DB::Row>,
    for<'r> TokenRow: FromRow<'r, DB::Row>,
    for<'r> TokenUserRow: FromRow<'r, DB::Row>,
    for<'r> DeviceRow: FromRow<'r, DB::Row>,
    usize: ColumnIndex<DB::Row>,
{
    async fn ping(&self) -> Result<()> {
        sqlx::query(sql::PING).execute(&self.read).await.or_db("ping")?;
        Ok(())
    }

    async fn setting(&self, key: &str) -> Result<Option<Vec<u8>>> {
        sqlx::query_scalar(sql::SETTING).bind(key.to_owned()).fetch_optional(&self.read).await.or_db("load a setting")
    }

    async fn init_setting(&self, key: &str, value: &[u8]) -> Result<Vec<u8>> {
        // Both statements on one (write) connection: the read sees the insert or the
        // value a racing process stored first.
        let mut conn = self.write.acquire().await.or_db("store a setting")?;
        sqlx::query(sql::INIT_SETTING)
            .bind(key.to_owned())
            .bind(value.to_vec())
            .execute(&mut *conn)
            .await
            .or_db("store a setting")?;
        sqlx::query_scalar(sql::SETTING).bind(key.to_owned()).fetch_one(&mut *conn).await.or_db("load a setting")
    }

    async fn list_users(&self) -> Result<Vec<User>> {
        let rows: Vec<UserRow> = sqlx::query_as(sql::LIST_USERS).fetch_all(&self.read).await.or_db("list users")?;
        decode_all(rows)
    }

    async fn user_by_id(&self, id: Uuid) -> Result<Option<User>> {
        let row: Option<UserRow> =
            sqlx::query_as(sql::USER_BY_ID).bind(id).fetch_optional(&self.read).await.or_db("load a user")?;
        row.map(User::try_from).transpose()
    }

    async fn user_by_email(&self, email_key: &str) -> Result<Option<User>> {
        let row: Option<UserRow> = sqlx::query_as(sql::USER_BY_EMAIL)
            .bind(email_key.to_owned())
            .fetch_optional(&self.read)
            .await
            .or_db("load a user")?;
        row.map(User::try_from).transpose()
    }

    async fn count_admins(&self) -> Result<u64> {
        let n: i64 = sqlx::query_scalar(sql::COUNT_ADMINS).fetch_one(&self.read).await.or_db("count admins")?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    async fn insert_user(&self, user: &User) -> Result<()> {
        let row = UserRow::from(user);
        bind_user_insert!(sqlx::query(sql::INSERT_USER), row).execute(&self.write).await.or_db("insert a user")?;
        Ok(())
    }

    async fn update_user(&self, id: Uuid, update: &UserUpdate, now: Timestamp) -> Result<User> {
        let (db, update) = (self.clone(), update.clone());
        to_completion(async move { flows::update_user(&db, id, &update, now).await }).await
    }

    async fn delete_user(&self, id: Uuid) -> Result<()> {
        let db = self.clone();
        to_completion(async move { flows::delete_user(&db, id).await }).await
    }

    async fn insert_token(&self, token: &ApiToken) -> Result<()> {
        sqlx::query(sql::INSERT_TOKEN)
            .bind(token.id)
            .bind(token.user_id)
            .bind(token.name.clone())
            .bind(token.token_hash.clone())
            .bind(token.inserted_at.micros())
            .bind(token.expires_at.micros())
            .bind(token.last_used_at.map(Timestamp::micros))
            .execute(&self.write)
            .await
            .or_db("insert a token")?;
        Ok(())
    }

    async fn token_by_hash(&self, hash: &[u8]) -> Result<Option<(ApiToken, User)>> {
        let row: Option<TokenUserRow> = sqlx::query_as(sql::TOKEN_WITH_USER)
            .bind(hash.to_vec())
            .fetch_optional(&self.read)
            .await
            .or_db("load a token")?;
        row.map(<(ApiToken, User)>::try_from).transpose()
    }

    async fn list_tokens(&self, user_id: Uuid) -> Result<Vec<ApiToken>> {
        let rows: Vec<TokenRow> =
            sqlx::query_as(sql::LIST_TOKENS).bind(user_id).fetch_all(&self.read).await.or_db("list tokens")?;
        Ok(rows.into_iter().map(ApiToken::from).collect())
    }

    async fn touch_token(&self, id: Uuid, now: Timestamp) -> Result<()> {
        sqlx::query(sql::TOUCH_TOKEN).bind(id).bind(now.micros()).execute(&self.write).await.or_db("touch a token")?;
        Ok(())
    }

    async fn delete_token(&self, id: Uuid) -> Result<bool> {
        let done = sqlx::query(sql::DELETE_TOKEN).bind(id).execute(&self.write).await.or_db("delete a token")?;
        Ok(DB::rows_affected(&done) > 0)
    }

    async fn list_devices(&self, query: &DeviceQuery) -> Result<Vec<Device>> {
        let sql = sql::list_devices(query);
        let mut q = sqlx::query_as::<DB, DeviceRow>(&sql);
        if let Some(user_id) = query.user_id {
            q = q.bind(user_id);
        }
        if let Some((inserted_at, id)) = query.after {
            q = q.bind(inserted_at.micros()).bind(id);
        }
        if let Some(limit) = query.limit {
            q = q.bind(i64::from(limit));
        }
        decode_all(q.fetch_all(&self.read).await.or_db("list devices")?)
    }

    async fn device_by_id(&self, id: Uuid) -> Result<Option<Device>> {
        let row: Option<DeviceRow> =
            sqlx::query_as(sql::DEVICE_BY_ID).bind(id).fetch_optional(&self.read).await.or_db("load a device")?;
        row.map(Device::try_from).transpose()
    }

    async fn insert_device(&self, device: &NewDevice, pools: &Pools, max_devices: u32) -> Result<Device> {
        let (db, device, pools) = (self.clone(), device.clone(), pools.clone());
        to_completion(async move { flows::insert_device(&db, &device, &pools, max_devices).await }).await
    }

    async fn update_device(&self, id: Uuid, update: &DeviceUpdate, now: Timestamp) -> Result<Device> {
        let (db, update) = (self.clone(), update.clone());
        to_completion(async move { flows::update_device(&db, id, &update, now).await }).await
    }

    async fn delete_device(&self, id: Uuid) -> Result<bool> {
        // The release trigger puts its addresses back into ip_released.
        let done = sqlx::query(sql::DELETE_DEVICE).bind(id).execute(&self.write).await.or_db("delete a device")?;
        Ok(DB::rows_affected(&done) > 0)
    }
}
