//! Reading the audit log: the API's `/v0/audit_events`, the console's audit page and
//! `ferrozone audit list` all page through it here, an admin's to read.

use super::{Domain, Principal};
use crate::audit::{AuditEvent, AuditQuery};
use crate::error::Result;

/// One page of events, newest first (or oldest first with `after_seq`).
#[derive(Debug, Clone, PartialEq)]
pub struct AuditPage {
    pub events: Vec<AuditEvent>,
    /// The seq the next page continues from (its `before_seq`, or `after_seq` when reading
    /// oldest first); `None` on the last page.
    pub next: Option<i64>,
}

impl Domain {
    /// The events `query` selects: one bounded read of at most `query.limit` rows. A row
    /// that no longer decodes (edited in the database) is left out of the page, which still
    /// continues after it; `ferrozone audit verify` names such rows.
    pub async fn audit_events(&self, actor: &Principal, query: &AuditQuery) -> Result<AuditPage> {
        actor.require_admin()?;
        let records = self.store().audit_records(query).await?;
        let full = query.limit > 0 && records.len() >= query.limit as usize;
        let next = records.last().filter(|_| full).map(|record| record.seq);
        let events = records.iter().filter_map(|record| record.decode()).collect();
        Ok(AuditPage { events, next })
    }
}

/// The most events one retention transaction removes: a batch holds the head row (and so
/// every write that records an event) only briefly.
pub const PRUNE_BATCH: u32 = 1000;

impl Domain {
    /// Retention: removes every event recorded before `before`, oldest first, one batch
    /// of at most [`PRUNE_BATCH`] per transaction. Returns how many were removed.
    pub async fn prune_audit_log(&self, before: crate::time::Timestamp) -> Result<u64> {
        let mut removed = 0;
        loop {
            let batch = self.store().prune_audit_events(before, PRUNE_BATCH).await?;
            removed += batch;
            if batch < u64::from(PRUNE_BATCH) {
                return Ok(removed);
            }
        }
    }
}
