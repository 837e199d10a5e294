//! [`WebhookStore`] on SQLite: edits and delivery steps in the writer's batches, reads on
//! pooled connections.

use async_trait::async_trait;
use ferrozone_domain::audit::context;
use ferrozone_domain::error::Result;
use ferrozone_domain::store::WebhookStore;
use ferrozone_domain::webhook::{
    self, Attempt, Outcome, Progress, Webhook, WebhookInsert, WebhookLease, WebhookUpdate, KEPT_ATTEMPTS,
};
use ferrozone_domain::Timestamp;
use rusqlite::{params, Connection, OptionalExtension};
use uuid::Uuid;

use super::super::errors::OrDb;
use super::super::prepare;
use super::SqliteStore;
use crate::sql::webhooks as sql;

#[async_trait]
impl WebhookStore for SqliteStore {
    async fn insert_webhook(&self, insert: &WebhookInsert) -> Result<Webhook> {
        let (context, insert, key) = (context::current(), insert.clone(), self.inner.audit_key.clone());
        self.write(move |tx| {
            let conn = tx.conn();
            prepare(conn, sql::INSERT)
                .and_then(|mut stmt| {
                    stmt.execute(params![
                        insert.id,
                        insert.url,
                        sql::events_text(&insert.events),
                        insert.secret.0,
                        insert.enabled,
                        insert.now.micros()
                    ])
                })
                .or_db("insert a webhook")?;
            let created =
                by_id(conn, insert.id).or_db("read a webhook")?.ok_or(ferrozone_domain::DomainError::NotFound)?;
            tx.append_event(webhook::created_event(&context, &key, &insert));
            Ok(created)
        })
        .await
    }

    async fn list_webhooks(&self) -> Result<Vec<Webhook>> {
        self.read("list webhooks", |conn| prepare(conn, sql::LIST)?.query_map([], columns)?.collect())
            .map(|rows: Vec<_>| rows.into_iter().map(sql::webhook).collect())
    }

    async fn webhook_by_id(&self, id: Uuid) -> Result<Option<Webhook>> {
        self.read("read a webhook", |conn| by_id(conn, id))
    }

    async fn update_webhook(&self, id: Uuid, update: &WebhookUpdate, now: Timestamp) -> Result<Webhook> {
        let (context, update, key) = (context::current(), update.clone(), self.inner.audit_key.clone());
        self.write(move |tx| {
            let conn = tx.conn();
            let before = by_id(conn, id).or_db("read a webhook")?.ok_or(ferrozone_domain::DomainError::NotFound)?;
            let events = update.events.as_ref().unwrap_or(&before.events);
            prepare(conn, sql::UPDATE)
                .and_then(|mut stmt| {
                    stmt.execute(params![
                        id,
                        update.url.as_ref().unwrap_or(&before.url),
                        sql::events_text(events),
                        update.enabled.unwrap_or(before.enabled),
                        update.secret.as_ref().map(|s| s.0.clone()),
                        now.micros()
                    ])
                })
                .or_db("update a webhook")?;
            let after = by_id(conn, id).or_db("read a webhook")?.ok_or(ferrozone_domain::DomainError::NotFound)?;
            let event = webhook::updated_event(&context, &key, &before, &after, update.secret.is_some());
            if !event.changes.is_empty() {
                tx.append_event(event);
            }
            Ok(after)
        })
        .await
    }

    async fn delete_webhook(&self, id: Uuid) -> Result<bool> {
        let (context, key) = (context::current(), self.inner.audit_key.clone());
        self.write(move |tx| {
            let conn = tx.conn();
            let Some(before) = by_id(conn, id).or_db("read a webhook")? else { return Ok(false) };
            prepare(conn, sql::DELETE).and_then(|mut stmt| stmt.execute(params![id])).or_db("delete a webhook")?;
            tx.append_event(webhook::deleted_event(&context, &key, &before));
            Ok(true)
        })
        .await
    }

    async fn webhook_attempts(&self, id: Uuid, limit: u32) -> Result<Vec<Attempt>> {
        self.read("read webhook attempts", |conn| {
            prepare(conn, sql::ATTEMPTS)?.query_map(params![id, i64::from(limit)], attempt)?.collect()
        })
    }

    async fn claim_webhooks(
        &self,
        owner: Uuid,
        now: Timestamp,
        until: Timestamp,
        limit: u32,
    ) -> Result<Vec<WebhookLease>> {
        self.write(move |tx| {
            prepare(tx.conn(), sql::CLAIM)
                .and_then(|mut stmt| {
                    stmt.query_map(params![owner, until.micros(), now.micros(), i64::from(limit)], lease)?.collect()
                })
                .or_db("claim webhooks")
        })
        .await
    }

    async fn renew_webhook_lease(&self, id: Uuid, owner: Uuid, until: Timestamp) -> Result<bool> {
        self.write(move |tx| {
            prepare(tx.conn(), sql::RENEW)
                .and_then(|mut stmt| stmt.execute(params![id, owner, until.micros()]))
                .or_db("renew a webhook lease")
                .map(|n| n == 1)
        })
        .await
    }

    async fn record_webhook_progress(&self, id: Uuid, owner: Uuid, progress: &Progress) -> Result<bool> {
        let progress = progress.clone();
        self.write(move |tx| record(tx.conn(), id, owner, &progress).or_db("record a webhook delivery")).await
    }

    async fn release_webhook_lease(&self, id: Uuid, owner: Uuid) -> Result<()> {
        self.write(move |tx| {
            prepare(tx.conn(), sql::RELEASE)
                .and_then(|mut stmt| stmt.execute(params![id, owner]))
                .or_db("release a webhook lease")
                .map(drop)
        })
        .await
    }
}

fn record(conn: &Connection, id: Uuid, owner: Uuid, progress: &Progress) -> rusqlite::Result<bool> {
    let moved = prepare(conn, sql::PROGRESS)?.execute(params![
        id,
        owner,
        progress.delivered_seq,
        progress.next_attempt_at.micros(),
        progress.failing_since.map(Timestamp::micros),
        progress.attempts
    ])?;
    if moved == 0 {
        return Ok(false);
    }
    if let Some(attempt) = &progress.attempt {
        let status = attempt.status.map(i32::from);
        prepare(conn, sql::LAST_ATTEMPT)?.execute(params![
            id,
            attempt.at.micros(),
            attempt.outcome.as_str(),
            status
        ])?;
        prepare(conn, sql::INSERT_ATTEMPT)?.execute(params![
            id,
            attempt.seq,
            attempt.at.micros(),
            attempt.outcome.as_str(),
            status,
            attempt.error,
            attempt.duration_ms
        ])?;
        prepare(conn, sql::PRUNE_ATTEMPTS)?.execute(params![id, KEPT_ATTEMPTS])?;
    }
    Ok(true)
}

fn by_id(conn: &Connection, id: Uuid) -> rusqlite::Result<Option<Webhook>> {
    prepare(conn, sql::BY_ID)?.query_row(params![id], columns).optional().map(|row| row.map(sql::webhook))
}

fn columns(row: &rusqlite::Row<'_>) -> rusqlite::Result<sql::WebhookColumns> {
    Ok(sql::WebhookColumns {
        id: row.get(0)?,
        url: row.get(1)?,
        events: row.get(2)?,
        enabled: row.get(3)?,
        delivered_seq: row.get(4)?,
        pending: row.get(5)?,
        failing_since: row.get(6)?,
        last_attempt_at: row.get(7)?,
        last_outcome: row.get(8)?,
        last_status: row.get(9)?,
        inserted_at: row.get(10)?,
        updated_at: row.get(11)?,
    })
}

fn lease(row: &rusqlite::Row<'_>) -> rusqlite::Result<WebhookLease> {
    Ok(WebhookLease {
        id: row.get(0)?,
        url: row.get(1)?,
        events: sql::events(&row.get::<_, String>(2)?),
        secret: ferrozone_domain::crypto::Sealed(row.get(3)?),
        delivered_seq: row.get(4)?,
        failing_since: row.get::<_, Option<i64>>(5)?.map(Timestamp::from_micros),
        attempts: row.get(6)?,
    })
}

fn attempt(row: &rusqlite::Row<'_>) -> rusqlite::Result<Attempt> {
    Ok(Attempt {
        seq: row.get(0)?,
        at: Timestamp::from_micros(row.get(1)?),
        outcome: Outcome::parse(&row.get::<_, String>(2)?).unwrap_or(Outcome::Failed),
        status: row.get::<_, Option<i32>>(3)?.and_then(|s| u16::try_from(s).ok()),
        error: row.get(4)?,
        duration_ms: row.get(5)?,
    })
}
