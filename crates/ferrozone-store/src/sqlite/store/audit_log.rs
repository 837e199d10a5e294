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
        let (events, key) = (events.to_vec(), self.inner.audit_key.clone());
        self.write(move |tx| events.iter().try_for_each(|event| audit::append(tx.conn(), &key, event))).await
    }

    async fn prune_audit_events(&self, before: Timestamp, max: u32) -> Result<u64> {
        let key = self.inner.audit_key.clone();
        self.write(move |tx| audit::prune(tx.conn(), &key, before.micros(), max)).await
    }

    async fn audit_head(&self) -> Result<AuditHead> {
        self.read("read the audit head", audit::head)
    }

    async fn audit_records(&self, query: &AuditQuery) -> Result<Vec<EventRecord>> {
        let query = query.clone();
        self.read_long("read audit events", move |conn| audit::select(conn, &query)).await
    }
}
