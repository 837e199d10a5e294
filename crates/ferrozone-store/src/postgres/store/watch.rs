//! Hearing of changes other processes commit: LISTEN on a channel that the migrations'
//! triggers NOTIFY at commit.

use std::sync::Arc;
use std::time::Duration;

use ferrozone_domain::error::Result;
use sqlx::postgres::PgListener;
use tokio::sync::Notify;

use super::super::errors::OrDb;
use super::PgStore;

/// The channel of migration 0003's and 0008's triggers (the data plane: peers and rules).
pub(super) const PEERS_CHANNEL: &str = "ferrozone_peers";
/// The channel of migration 0009's triggers (the `configuration.` settings rows).
pub(super) const CONFIGURATION_CHANNEL: &str = "ferrozone_configuration";

impl PgStore {
    /// Notifies `changed` on every notification of `channel` until the pool is closed;
    /// with `from_start`, also once as soon as it listens (what was committed before was
    /// not heard). `what` names the watch in errors.
    pub(super) async fn listen(
        &self,
        channel: &str,
        changed: Arc<Notify>,
        from_start: bool,
        what: &'static str,
    ) -> Result<()> {
        let mut listener = PgListener::connect_with(&self.pool).await.or_db(what)?;
        listener.listen(channel).await.or_db(what)?;
        if from_start {
            changed.notify_one();
        }
        loop {
            match listener.try_recv().await {
                Ok(Some(_)) => changed.notify_one(),
                // The connection was lost and is re-established by the next call; changes
                // made meanwhile were not heard, so act as if there were one.
                Ok(None) => changed.notify_one(),
                Err(e) if self.pool.is_closed() => return Err(e).or_db(what),
                Err(e) => {
                    tracing::warn!(error = %e, channel, "listening for changes failed; retrying");
                    changed.notify_one();
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    }
}
