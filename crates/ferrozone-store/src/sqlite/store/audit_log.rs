//! [`AuditLog`] on SQLite: appends in the writer's batch, reads on a pooled connection.

use async_trait::async_trait;
use ferrozone_domain::audit::{AuditHead, AuditQuery, EventRecord, NewAuditEvent};
use ferrozone_domain::error::Result;
use ferrozone_domain::store::AuditLog;
use ferrozone_domain::Timestamp;

use super::super::audit;
use super::SqliteStore;

#[async_trait]
impl AuditLog for SqliteStore {
    async fn append_audit_events(&self, events: &[NewAuditEvent]) -> Result<()> {
        let events = events.to_vec();
        self.write(move |tx| {
            events.into_iter().for_each(|event| tx.append_event(event));
            Ok(())
        })
        .await
    }

    async fn prune_audit_events(&self, before: Timestamp, max: u32) -> Result<u64> {
        self.write(move |tx| {
            let (removed, pruned) = audit::prune(tx.conn(), tx.key(), before.micros(), max)?;
            pruned.into_iter().for_each(|event| tx.append_event(event));
            Ok(removed)
        })
        .await
    }

    async fn audit_head(&self) -> Result<AuditHead> {
        self.read("read the audit head", audit::head)
    }

    async fn audit_records(&self, query: &AuditQuery) -> Result<Vec<EventRecord>> {
        let query = query.clone();
        self.read_long("read audit events", move |conn| audit::select(conn, &query)).await
    }
}
