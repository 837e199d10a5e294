//! Applying configuration changes other processes commit: the store's change watch (a
//! PostgreSQL notification, SQLite's data version) wakes a reload, and a slow timed
//! reload covers a notification that was lost.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use super::super::Domain;

/// The longest a process goes without reading the stored configuration again, whatever
/// it heard: the safety net for a lost notification.
pub const SAFETY_RELOAD: Duration = Duration::from_secs(30);

/// The first wait before watching again after the watch failed; it doubles up to
/// [`SAFETY_RELOAD`].
const WATCH_RETRY: Duration = Duration::from_secs(1);

impl Domain {
    /// Runs until the store is closed, reloading the stored values whenever the store
    /// reports a configuration change (within a second of the commit: see
    /// [`crate::Store::watch_configuration_changes`]), when the watch starts, and at least
    /// every [`SAFETY_RELOAD`]. A failed read is logged and the last values kept.
    pub async fn watch_configuration(&self) {
        let changed = Arc::new(Notify::new());
        tokio::select! {
            () = self.hear_configuration_changes(changed.clone()) => {}
            () = self.reload_when_changed(&changed) => {}
        }
    }

    /// The store's watch, started again after each failure (waiting longer each time);
    /// every restart counts as a change, since changes made meanwhile were not heard.
    async fn hear_configuration_changes(&self, changed: Arc<Notify>) {
        let mut wait = WATCH_RETRY;
        loop {
            let started = tokio::time::Instant::now();
            let Err(e) = self.store().watch_configuration_changes(changed.clone()).await else {
                return;
            };
            if started.elapsed() > SAFETY_RELOAD {
                wait = WATCH_RETRY;
            }
            tracing::warn!(error = %e, retry_ms = wait.as_millis(), "watching the configuration for changes failed");
            changed.notify_one();
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(SAFETY_RELOAD);
        }
    }

    async fn reload_when_changed(&self, changed: &Notify) {
        loop {
            // Woken by a change, or the safety re-read: either way, read again.
            let _ = tokio::time::timeout(SAFETY_RELOAD, changed.notified()).await;
            if let Err(e) = self.reload_configuration().await {
                tracing::warn!(error = %e, "reading the stored configuration failed; keeping the last values");
            }
        }
    }
}
