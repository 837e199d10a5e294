//! The audit log's retention job in `ferrozone serve`: at start and every hour, removes
//! the events older than the retention period (docs/operations.md, "Audit log").

use std::sync::Arc;
use std::time::Duration;

use ferrozone_domain::{Domain, Timestamp};

use crate::config::Retention;

/// How often retention runs, after its first run at start.
const PERIOD: Duration = Duration::from_secs(3600);

/// Every process sharing a database may run it: the store's pruning takes turns on the
/// chain's head, and a second run finds nothing left to remove.
pub async fn run(domain: Arc<Domain>, retention: Retention) -> anyhow::Result<()> {
    let mut ticks = tokio::time::interval(PERIOD);
    loop {
        ticks.tick().await;
        let cutoff = Timestamp::now().plus_secs(-retention.0);
        match domain.prune_audit_log(cutoff).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(removed = n, "removed audit events older than the retention period"),
            Err(e) => tracing::warn!(error = %e, "removing old audit events failed"),
        }
    }
}
