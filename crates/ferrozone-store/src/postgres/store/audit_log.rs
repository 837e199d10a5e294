//! [`AuditLog`] on PostgreSQL: events are appended pending and sealed after the commit
//! ([`audit`]); every read seals first.

use async_trait::async_trait;
use ferrozone_domain::audit::{AuditHead, AuditQuery, EventRecord, NewAuditEvent};
use ferrozone_domain::error::Result;
use ferrozone_domain::store::AuditLog;
use ferrozone_domain::Timestamp;

use super::super::audit;
use super::super::errors::OrDb;
use super::{to_completion, PgStore};

#[async_trait]
impl AuditLog for PgStore {
    async fn append_audit_events(&self, events: &[NewAuditEvent]) -> Result<()> {
        let (db, events) = (self.clone(), events.to_vec());
        to_completion(async move {
            let mut tx = db.pool.begin().await.or_db("begin a write transaction")?;
            for event in &events {
                audit::append(&mut tx, event).await?;
            }
            tx.commit().await.or_db("commit audit events")?;
            db.sealer.notify_one();
            Ok(())
        })
        .await
    }

    async fn prune_audit_events(&self, before: Timestamp, max: u32) -> Result<u64> {
        let db = self.clone();
        // Sealed first, so that the events to remove have their seq; to completion, as a
        // seal: the head stays locked until the commit.
        self.seal().await?;
        to_completion(async move {
            let mut tx = db.pool.begin().await.or_db("begin a write transaction")?;
            let removed = audit::prune(&mut tx, &db.audit_key, before.micros(), max).await?;
            tx.commit().await.or_db("commit pruned audit events")?;
            Ok(removed)
        })
        .await
    }

    async fn audit_head(&self) -> Result<AuditHead> {
        self.seal().await?;
        let mut conn = self.pool.acquire().await.or_db("read the audit head")?;
        audit::head(&mut conn).await
    }

    async fn audit_records(&self, query: &AuditQuery) -> Result<Vec<EventRecord>> {
        self.seal().await?;
        let mut conn = self.pool.acquire().await.or_db("read audit events")?;
        audit::select(&mut conn, query).await
    }

    async fn seal_audit_events(&self) -> Result<u64> {
        self.seal().await
    }

    async fn pending_audit_events(&self) -> Result<u64> {
        audit::pending(&self.pool).await
    }

    async fn keep_audit_events_sealed(&self) {
        audit::keep_sealed(&self.pool, &self.audit_key, &self.sealer).await
    }
}
