//! [`WebhookStore`] on PostgreSQL. An edit appends its audit event in its transaction,
//! pending, and wakes the sealer after the commit; what reads the audit head seals first.

use async_trait::async_trait;
use ferrozone_domain::audit::context;
use ferrozone_domain::crypto::Sealed;
use ferrozone_domain::error::Result;
use ferrozone_domain::store::WebhookStore;
use ferrozone_domain::webhook::{
    self, Attempt, Outcome, Progress, Webhook, WebhookInsert, WebhookLease, WebhookUpdate, KEPT_ATTEMPTS,
};
use ferrozone_domain::{DomainError, Timestamp};
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};
use uuid::Uuid;

use super::super::audit;
use super::super::errors::OrDb;
use super::{to_completion, PgStore};
use crate::sql::webhooks as sql;

const LOCK: &str = "SELECT 1 FROM webhooks WHERE id = $1 FOR UPDATE";

#[async_trait]
impl WebhookStore for PgStore {
    async fn insert_webhook(&self, insert: &WebhookInsert) -> Result<Webhook> {
        let (db, context, insert) = (self.clone(), context::current(), insert.clone());
        // Sealed first: the endpoint's cursor starts at a head that has every event
        // committed before it.
        self.seal().await?;
        to_completion(async move {
            let mut tx = db.pool.begin().await.or_db("begin a write transaction")?;
            sqlx::query(sql::INSERT)
                .bind(insert.id)
                .bind(&insert.url)
                .bind(sql::events_text(&insert.events))
                .bind(&insert.secret.0)
                .bind(insert.enabled)
                .bind(insert.now.micros())
                .execute(&mut *tx)
                .await
                .or_db("insert a webhook")?;
            audit::append(&mut tx, &webhook::created_event(&context, &db.audit_key, &insert)).await?;
            let created = by_id(&mut tx, insert.id).await?.ok_or(DomainError::NotFound)?;
            tx.commit().await.or_db("commit a webhook")?;
            db.sealer.notify_one();
            Ok(created)
        })
        .await
    }

    async fn list_webhooks(&self) -> Result<Vec<Webhook>> {
        let rows = sqlx::query(sql::LIST).try_map(columns).fetch_all(&self.pool).await.or_db("list webhooks")?;
        Ok(rows.into_iter().map(sql::webhook).collect())
    }

    async fn webhook_by_id(&self, id: Uuid) -> Result<Option<Webhook>> {
        let mut conn = self.pool.acquire().await.or_db("read a webhook")?;
        by_id(&mut conn, id).await
    }

    async fn update_webhook(&self, id: Uuid, update: &WebhookUpdate, now: Timestamp) -> Result<Webhook> {
        let (db, context, update) = (self.clone(), context::current(), update.clone());
        to_completion(async move {
            let mut tx = db.pool.begin().await.or_db("begin a write transaction")?;
            sqlx::query(LOCK).bind(id).fetch_optional(&mut *tx).await.or_db("lock a webhook")?;
            let before = by_id(&mut tx, id).await?.ok_or(DomainError::NotFound)?;
            sqlx::query(sql::UPDATE)
                .bind(id)
                .bind(update.url.as_ref().unwrap_or(&before.url))
                .bind(sql::events_text(update.events.as_ref().unwrap_or(&before.events)))
                .bind(update.enabled.unwrap_or(before.enabled))
                .bind(update.secret.as_ref().map(|s| s.0.clone()))
                .bind(now.micros())
                .execute(&mut *tx)
                .await
                .or_db("update a webhook")?;
            let after = by_id(&mut tx, id).await?.ok_or(DomainError::NotFound)?;
            let event = webhook::updated_event(&context, &db.audit_key, &before, &after, update.secret.is_some());
            let appended = !event.changes.is_empty();
            if appended {
                audit::append(&mut tx, &event).await?;
            }
            tx.commit().await.or_db("commit a webhook")?;
            if appended {
                db.sealer.notify_one();
            }
            Ok(after)
        })
        .await
    }

    async fn delete_webhook(&self, id: Uuid) -> Result<bool> {
        let (db, context) = (self.clone(), context::current());
        to_completion(async move {
            let mut tx = db.pool.begin().await.or_db("begin a write transaction")?;
            sqlx::query(LOCK).bind(id).fetch_optional(&mut *tx).await.or_db("lock a webhook")?;
            let Some(before) = by_id(&mut tx, id).await? else { return Ok(false) };
            sqlx::query(sql::DELETE).bind(id).execute(&mut *tx).await.or_db("delete a webhook")?;
            audit::append(&mut tx, &webhook::deleted_event(&context, &db.audit_key, &before)).await?;
            tx.commit().await.or_db("commit a webhook")?;
            db.sealer.notify_one();
            Ok(true)
        })
        .await
    }

    async fn webhook_attempts(&self, id: Uuid, limit: u32) -> Result<Vec<Attempt>> {
        sqlx::query(sql::ATTEMPTS)
            .bind(id)
            .bind(i64::from(limit))
            .try_map(attempt)
            .fetch_all(&self.pool)
            .await
            .or_db("read webhook attempts")
    }

    async fn claim_webhooks(
        &self,
        owner: Uuid,
        now: Timestamp,
        until: Timestamp,
        limit: u32,
    ) -> Result<Vec<WebhookLease>> {
        // Due endpoints are those behind the head: sealed first, the head has every
        // event committed so far.
        self.seal().await?;
        sqlx::query(sql::CLAIM)
            .bind(owner)
            .bind(until.micros())
            .bind(now.micros())
            .bind(i64::from(limit))
            .try_map(lease)
            .fetch_all(&self.pool)
            .await
            .or_db("claim webhooks")
    }

    async fn renew_webhook_lease(&self, id: Uuid, owner: Uuid, until: Timestamp) -> Result<bool> {
        let done = sqlx::query(sql::RENEW)
            .bind(id)
            .bind(owner)
            .bind(until.micros())
            .execute(&self.pool)
            .await
            .or_db("renew a webhook lease")?;
        Ok(done.rows_affected() == 1)
    }

    async fn record_webhook_progress(&self, id: Uuid, owner: Uuid, progress: &Progress) -> Result<bool> {
        let (db, progress) = (self.clone(), progress.clone());
        to_completion(async move {
            let mut tx = db.pool.begin().await.or_db("begin a write transaction")?;
            if !record(&mut tx, id, owner, &progress).await.or_db("record a webhook delivery")? {
                return Ok(false);
            }
            tx.commit().await.or_db("commit a webhook delivery")?;
            Ok(true)
        })
        .await
    }

    async fn release_webhook_lease(&self, id: Uuid, owner: Uuid) -> Result<()> {
        sqlx::query(sql::RELEASE).bind(id).bind(owner).execute(&self.pool).await.or_db("release a webhook lease")?;
        Ok(())
    }
}

async fn record(tx: &mut PgConnection, id: Uuid, owner: Uuid, progress: &Progress) -> sqlx::Result<bool> {
    let moved = sqlx::query(sql::PROGRESS)
        .bind(id)
        .bind(owner)
        .bind(progress.delivered_seq)
        .bind(progress.next_attempt_at.micros())
        .bind(progress.failing_since.map(Timestamp::micros))
        .bind(progress.attempts)
        .execute(&mut *tx)
        .await?;
    if moved.rows_affected() == 0 {
        return Ok(false);
    }
    if let Some(attempt) = &progress.attempt {
        let status = attempt.status.map(i32::from);
        sqlx::query(sql::LAST_ATTEMPT)
            .bind(id)
            .bind(attempt.at.micros())
            .bind(attempt.outcome.as_str())
            .bind(status)
            .execute(&mut *tx)
            .await?;
        sqlx::query(sql::INSERT_ATTEMPT)
            .bind(id)
            .bind(attempt.seq)
            .bind(attempt.at.micros())
            .bind(attempt.outcome.as_str())
            .bind(status)
            .bind(&attempt.error)
            .bind(attempt.duration_ms)
            .execute(&mut *tx)
            .await?;
        sqlx::query(sql::PRUNE_ATTEMPTS).bind(id).bind(KEPT_ATTEMPTS).execute(&mut *tx).await?;
    }
    Ok(true)
}

async fn by_id(conn: &mut PgConnection, id: Uuid) -> Result<Option<Webhook>> {
    let row = sqlx::query(sql::BY_ID).bind(id).try_map(columns).fetch_optional(conn).await.or_db("read a webhook")?;
    Ok(row.map(sql::webhook))
}

fn columns(row: PgRow) -> sqlx::Result<sql::WebhookColumns> {
    Ok(sql::WebhookColumns {
        id: row.try_get(0)?,
        url: row.try_get(1)?,
        events: row.try_get(2)?,
        enabled: row.try_get(3)?,
        delivered_seq: row.try_get(4)?,
        pending: row.try_get(5)?,
        failing_since: row.try_get(6)?,
        last_attempt_at: row.try_get(7)?,
        last_outcome: row.try_get(8)?,
        last_status: row.try_get(9)?,
        inserted_at: row.try_get(10)?,
        updated_at: row.try_get(11)?,
    })
}

fn lease(row: PgRow) -> sqlx::Result<WebhookLease> {
    Ok(WebhookLease {
        id: row.try_get(0)?,
        url: row.try_get(1)?,
        events: sql::events(&row.try_get::<String, _>(2)?),
        secret: Sealed(row.try_get(3)?),
        delivered_seq: row.try_get(4)?,
        failing_since: row.try_get::<Option<i64>, _>(5)?.map(Timestamp::from_micros),
        attempts: row.try_get(6)?,
    })
}

fn attempt(row: PgRow) -> sqlx::Result<Attempt> {
    Ok(Attempt {
        seq: row.try_get(0)?,
        at: Timestamp::from_micros(row.try_get(1)?),
        outcome: Outcome::parse(&row.try_get::<String, _>(2)?).unwrap_or(Outcome::Failed),
        status: row.try_get::<Option<i32>, _>(3)?.and_then(|s| u16::try_from(s).ok()),
        error: row.try_get(4)?,
        duration_ms: row.try_get(5)?,
    })
}
