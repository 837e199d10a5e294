//! Hearing of changes other processes commit: LISTEN on a channel that the migrations'
//! triggers NOTIFY at commit.

use std::sync::Arc;
use std::time::Duration;

use ferrozone_domain::error::Result;
use sqlx::postgres::PgListener;
use tokio::sync::Notify;

use super::super::errors::OrDb;
use super::PgStore;

/// The channel of the data plane's triggers: migration 0003's (the peers, no payload) and
/// 0030's (the rules and memberships, payload [`RULES_PAYLOAD`]).
pub(super) const PEERS_CHANNEL: &str = "ferrozone_peers";
/// The payload of a rule or membership change on [`PEERS_CHANNEL`].
pub(super) const RULES_PAYLOAD: &str = "rules";
/// The channel of migration 0009's triggers (the `configuration.` settings rows).
pub(super) const CONFIGURATION_CHANNEL: &str = "ferrozone_configuration";

impl PgStore {
    /// Until the pool is closed, notifies on every notification of `channel` the `Notify`
    /// of `wakes` paired with its payload, or the first one when no other's payload matches;
    /// with `from_start`, all of them once as soon as it listens (what was committed before
    /// was not heard). `what` names the watch in errors.
    pub(super) async fn listen(
        &self,
        channel: &str,
        wakes: &[(&str, Arc<Notify>)],
        from_start: bool,
        what: &'static str,
    ) -> Result<()> {
        let all = || wakes.iter().for_each(|(_, changed)| changed.notify_one());
        let mut listener = PgListener::connect_with(&self.pool).await.or_db(what)?;
        listener.listen(channel).await.or_db(what)?;
        if from_start {
            all();
        }
        loop {
            match listener.try_recv().await {
                Ok(Some(notification)) => {
                    let payload = notification.payload();
                    let woken = wakes.iter().find(|(wanted, _)| *wanted == payload).or(wakes.first());
                    woken.into_iter().for_each(|(_, changed)| changed.notify_one());
                }
                // The connection was lost and is re-established by the next call; changes
                // made meanwhile were not heard, so act as if there were some.
                Ok(None) => all(),
                Err(e) if self.pool.is_closed() => return Err(e).or_db(what),
                Err(e) => {
                    tracing::warn!(error = %e, channel, "listening for changes failed; retrying");
                    all();
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    }
}
