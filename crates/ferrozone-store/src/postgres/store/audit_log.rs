//! [`AuditLog`] on PostgreSQL.

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
        // To completion: a cancelled caller must not leave the head locked mid-transaction.
        to_completion(async move {
            let mut tx = db.pool.begin().await.or_db("begin a write transaction")?;
            for event in &events {
                audit::append(&mut tx, &db.audit_key, event).await?;
            }
            tx.commit().await.or_db("commit audit events")
        })
        .await
    }

    async fn prune_audit_events(&self, before: Timestamp, max: u32) -> Result<u64> {
        let db = self.clone();
        // To completion, as an append: the head stays locked until the commit.
        to_completion(async move {
            let mut tx = db.pool.begin().await.or_db("begin a write transaction")?;
            let removed = audit::prune(&mut tx, before.micros(), max).await?;
            tx.commit().await.or_db("commit pruned audit events")?;
            Ok(removed)
        })
        .await
    }

    async fn audit_head(&self) -> Result<AuditHead> {
        let mut conn = self.pool.acquire().await.or_db("read the audit head")?;
        audit::head(&mut conn).await
    }

    async fn audit_records(&self, query: &AuditQuery) -> Result<Vec<EventRecord>> {
        let mut conn = self.pool.acquire().await.or_db("read audit events")?;
        audit::select(&mut conn, query).await
    }
}
