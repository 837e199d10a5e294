//! [`LinkStore`] on PostgreSQL. A write that records an event appends it in its
//! transaction, pending, and wakes the sealer after the commit.

use async_trait::async_trait;
use ferrozone_domain::audit::changes;
use ferrozone_domain::crypto::Sealed;
use ferrozone_domain::email::{EmailLease, EmailOutcome};
use ferrozone_domain::error::Result;
use ferrozone_domain::model::{User, UserUpdate};
use ferrozone_domain::sign_in_link::{self, LinkInsert, LinkKind, ListedLink, SignInLink};
use ferrozone_domain::store::LinkStore;
use ferrozone_domain::{rules, Store, Timestamp};
use sqlx::postgres::PgRow;
use sqlx::Row;
use uuid::Uuid;

use super::super::errors::OrDb;
use super::PgStore;
use crate::columns::Columns;
use crate::rows::UserRow;
use crate::sql::links as sql;
use crate::sql::{self as statements};

#[async_trait]
impl LinkStore for PgStore {
    async fn insert_sign_in_link(&self, insert: &LinkInsert) -> Result<()> {
        let insert = insert.clone();
        self.write(move |tx| {
            Box::pin(async move {
                if let Some(user) = &insert.new_user {
                    UserRow::from(user)
                        .bind_insert(sqlx::query(statements::INSERT_USER))
                        .execute(tx.conn())
                        .await
                        .or_db("insert a user")?;
                    tx.append(changes::user_created(user)).await?;
                }
                if let Some(email) = &insert.email {
                    sqlx::query(sql::INSERT_EMAIL)
                        .bind(email.id)
                        .bind(&email.recipient)
                        .bind(&email.message.0)
                        .bind(email.now.micros())
                        .execute(tx.conn())
                        .await
                        .or_db("queue an email")?;
                }
                let link = &insert.link;
                sqlx::query(sql::INSERT_LINK)
                    .bind(link.id)
                    .bind(link.user_id)
                    .bind(link.kind.as_str())
                    .bind(&insert.secret_hash)
                    .bind(link.created_by)
                    .bind(link.email_id)
                    .bind(link.inserted_at.micros())
                    .bind(link.expires_at.micros())
                    .execute(tx.conn())
                    .await
                    .or_db("insert a sign-in link")?;
                tx.append(sign_in_link::created_entry(link)).await
            })
        })
        .await
    }

    async fn list_sign_in_links(&self, kind: LinkKind, limit: u32) -> Result<Vec<ListedLink>> {
        sqlx::query(sql::LIST)
            .bind(kind.as_str())
            .bind(i64::from(limit))
            .try_map(|row: PgRow| {
                Ok(sql::listed(
                    columns(&row)?,
                    (row.try_get(9)?, row.try_get(10)?),
                    row.try_get(11)?,
                    row.try_get(12)?,
                    row.try_get(13)?,
                    row.try_get(14)?,
                ))
            })
            .fetch_all(&self.pool)
            .await
            .or_db("list sign-in links")
    }

    async fn sign_in_link_by_hash(&self, hash: &[u8]) -> Result<Option<(SignInLink, User)>> {
        let link = sqlx::query(sql::BY_HASH)
            .bind(hash)
            .try_map(|row: PgRow| columns(&row))
            .fetch_optional(&self.pool)
            .await
            .or_db("read a sign-in link")?;
        let Some(link) = link.map(sql::LinkColumns::link) else { return Ok(None) };
        Ok(self.user_by_id(link.user_id).await?.map(|user| (link, user)))
    }

    async fn use_sign_in_link(
        &self,
        hash: &[u8],
        now: Timestamp,
        password: Option<String>,
    ) -> Result<Option<(SignInLink, User)>> {
        let hash = hash.to_vec();
        self.write(move |tx| {
            Box::pin(async move {
                let used = sqlx::query(sql::USE)
                    .bind(&hash)
                    .bind(now.micros())
                    .try_map(|row: PgRow| columns(&row))
                    .fetch_optional(tx.conn())
                    .await
                    .or_db("use a sign-in link")?;
                let Some(link) = used.map(sql::LinkColumns::link) else { return Ok(None) };
                tx.append(sign_in_link::used_entry(&link, now)).await?;
                let update = UserUpdate { password_hash: password, ..UserUpdate::default() };
                let user = rules::users::update_in(tx, link.user_id, &update, now).await?;
                Ok(Some((link, user)))
            })
        })
        .await
    }

    async fn revoke_sign_in_link(&self, id: Uuid, now: Timestamp) -> Result<bool> {
        self.write(move |tx| {
            Box::pin(async move {
                let revoked = sqlx::query(sql::REVOKE)
                    .bind(id)
                    .bind(now.micros())
                    .try_map(|row: PgRow| columns(&row))
                    .fetch_optional(tx.conn())
                    .await
                    .or_db("revoke an invitation")?;
                let Some(link) = revoked.map(sql::LinkColumns::link) else { return Ok(false) };
                tx.append(sign_in_link::revoked_entry(&link, now)).await?;
                Ok(true)
            })
        })
        .await
    }

    async fn live_sign_in_links(&self, user_id: Uuid, kind: LinkKind, now: Timestamp) -> Result<u64> {
        let count: i64 = sqlx::query_scalar(sql::LIVE)
            .bind(user_id)
            .bind(kind.as_str())
            .bind(now.micros())
            .fetch_one(&self.pool)
            .await
            .or_db("count live sign-in links")?;
        Ok(u64::try_from(count).unwrap_or(0))
    }

    async fn claim_emails(&self, owner: Uuid, now: Timestamp, until: Timestamp, limit: u32) -> Result<Vec<EmailLease>> {
        sqlx::query(sql::CLAIM)
            .bind(owner)
            .bind(until.micros())
            .bind(now.micros())
            .bind(i64::from(limit))
            .try_map(|row: PgRow| {
                Ok(EmailLease {
                    id: row.try_get(0)?,
                    recipient: row.try_get(1)?,
                    message: Sealed(row.try_get(2)?),
                    attempts: row.try_get(3)?,
                    inserted_at: Timestamp::from_micros(row.try_get(4)?),
                })
            })
            .fetch_all(&self.pool)
            .await
            .or_db("claim emails")
    }

    async fn record_email_attempt(&self, id: Uuid, owner: Uuid, outcome: &EmailOutcome) -> Result<bool> {
        let now = Timestamp::now().micros();
        let empty: Vec<u8> = Vec::new();
        let query = match outcome {
            EmailOutcome::Sent => sqlx::query(sql::SENT).bind(id).bind(owner).bind(now).bind(empty),
            EmailOutcome::Failed { error, next_attempt_at } => {
                sqlx::query(sql::FAILED).bind(id).bind(owner).bind(error.clone()).bind(next_attempt_at.micros())
            }
            EmailOutcome::GaveUp { error } => {
                sqlx::query(sql::GAVE_UP).bind(id).bind(owner).bind(error.clone()).bind(now).bind(empty)
            }
        };
        let done = query.execute(&self.pool).await.or_db("record an email attempt")?;
        Ok(done.rows_affected() == 1)
    }

    async fn prune_sign_in_links(&self, before: Timestamp, max: u32) -> Result<u64> {
        let mut pruned = 0;
        for (statement, context) in [(sql::PRUNE_EMAILS, "prune emails"), (sql::PRUNE_LINKS, "prune sign-in links")] {
            let done = sqlx::query(statement)
                .bind(before.micros())
                .bind(i64::from(max))
                .execute(&self.pool)
                .await
                .or_db(context)?;
            pruned += done.rows_affected();
        }
        Ok(pruned)
    }
}

fn columns(row: &PgRow) -> sqlx::Result<sql::LinkColumns> {
    Ok(sql::LinkColumns {
        id: row.try_get(0)?,
        user_id: row.try_get(1)?,
        kind: row.try_get(2)?,
        created_by: row.try_get(3)?,
        email_id: row.try_get(4)?,
        inserted_at: row.try_get(5)?,
        expires_at: row.try_get(6)?,
        used_at: row.try_get(7)?,
        revoked_at: row.try_get(8)?,
    })
}
