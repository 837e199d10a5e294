//! The level-triggered reconciler: read what should be, read what is, apply the difference.
//!
//! It never acts on the change that woke it, only on the state it then reads, so a missed,
//! repeated or reordered trigger cannot leave the interface wrong: the next pass repairs it.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use crate::diff::{diff, Changes};
use crate::{PeerSource, WireGuard};

/// How long to wait before trying again after a failed pass.
const RETRY: Duration = Duration::from_secs(1);

pub struct Reconciler {
    source: Arc<dyn PeerSource>,
    interface: Arc<dyn WireGuard>,
}

impl Reconciler {
    pub fn new(source: Arc<dyn PeerSource>, interface: Arc<dyn WireGuard>) -> Self {
        Self { source, interface }
    }

    /// One pass: returns what it changed.
    pub async fn reconcile(&self) -> anyhow::Result<Changes> {
        let (desired, observed) = tokio::try_join!(self.source.desired_peers(), self.interface.peers())?;
        let changes = diff(&desired, &observed);
        if !changes.is_empty() {
            self.interface.apply(&changes).await?;
            tracing::info!(
                upserted = changes.upsert.len(),
                removed = changes.remove.len(),
                peers = desired.len(),
                "WireGuard peers reconciled"
            );
        }
        Ok(changes)
    }

    /// Reconciles now, then whenever `trigger` is notified (after a committed change), and
    /// at least every `repair` (drift: a peer changed by hand, a restarted interface).
    /// Triggers that arrive during a pass coalesce into one more pass. Runs until dropped.
    pub async fn run(self, trigger: Arc<Notify>, repair: Duration) {
        loop {
            let wait = match self.reconcile().await {
                Ok(_) => repair,
                Err(e) => {
                    tracing::warn!(error = format!("{e:#}"), "reconciling WireGuard peers failed; retrying");
                    RETRY.min(repair)
                }
            };
            tokio::select! {
                () = trigger.notified() => {}
                () = tokio::time::sleep(wait) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use async_trait::async_trait;

    use super::*;
    use crate::key::Key;
    use crate::memory::MemoryInterface;
    use crate::peer::{ObservedPeer, Peer, PeerStats};

    #[derive(Default)]
    struct Desired(Mutex<Vec<Peer>>);

    #[async_trait]
    impl PeerSource for Desired {
        async fn desired_peers(&self) -> anyhow::Result<Vec<Peer>> {
            Ok(self.0.lock().unwrap().clone())
        }
        async fn record_stats(&self, _: &[(Key, PeerStats)]) -> anyhow::Result<()> {
            Ok(())
        }
    }

    fn peer(n: u8) -> Peer {
        Peer::new(Key([n; 32]), Some(Key([100 + n; 32])), vec![format!("10.0.0.{n}/32").parse().unwrap()])
    }

    fn setup() -> (Arc<Desired>, Arc<MemoryInterface>, Reconciler) {
        let (source, interface) = (Arc::new(Desired::default()), Arc::new(MemoryInterface::default()));
        let reconciler = Reconciler::new(source.clone(), interface.clone());
        (source, interface, reconciler)
    }

    async fn keys(interface: &MemoryInterface) -> Vec<Key> {
        interface.peers().await.unwrap().into_iter().map(|o| o.peer.public_key).collect()
    }

    #[tokio::test]
    async fn a_pass_applies_only_the_difference_in_one_batch() {
        let (source, interface, reconciler) = setup();
        *source.0.lock().unwrap() = vec![peer(1), peer(2), peer(3)];
        reconciler.reconcile().await.unwrap();
        assert_eq!(keys(&interface).await, vec![Key([1; 32]), Key([2; 32]), Key([3; 32])]);

        *source.0.lock().unwrap() = vec![peer(1), peer(3), peer(4)];
        let changes = reconciler.reconcile().await.unwrap();
        assert_eq!(changes, Changes { upsert: vec![peer(4)], remove: vec![Key([2; 32])] });
        assert_eq!(interface.batches().len(), 2, "one batch per pass that changes something");

        assert!(reconciler.reconcile().await.unwrap().is_empty());
        assert_eq!(interface.batches().len(), 2, "a pass with nothing to do applies nothing");
    }

    #[tokio::test]
    async fn drift_is_repaired_and_statistics_survive() {
        let (source, interface, reconciler) = setup();
        *source.0.lock().unwrap() = vec![peer(1)];
        reconciler.reconcile().await.unwrap();
        let stats = PeerStats { rx_bytes: 10, tx_bytes: 20, ..PeerStats::default() };
        interface.set_stats(&Key([1; 32]), stats.clone());
        // Someone adds a peer by hand and changes another's addresses.
        interface.insert(ObservedPeer { peer: peer(9), stats: PeerStats::default() });
        let mut moved = peer(1);
        moved.allowed_ips = vec!["10.9.9.9/32".parse().unwrap()];
        interface.apply(&Changes { upsert: vec![moved], remove: vec![] }).await.unwrap();

        reconciler.reconcile().await.unwrap();
        let now = interface.peers().await.unwrap();
        assert_eq!(now, vec![ObservedPeer { peer: peer(1), stats }]);
    }

    #[tokio::test]
    async fn the_loop_follows_triggers() {
        let (source, interface, reconciler) = setup();
        let trigger = Arc::new(Notify::new());
        let task = tokio::spawn(reconciler.run(trigger.clone(), Duration::from_secs(3600)));
        for n in 1..=3 {
            source.0.lock().unwrap().push(peer(n));
            trigger.notify_one();
            // Wait for the pass the trigger caused (no timing assumption: poll the state).
            while keys(&interface).await.len() < usize::from(n) {
                tokio::task::yield_now().await;
            }
        }
        source.0.lock().unwrap().clear();
        trigger.notify_one();
        while !keys(&interface).await.is_empty() {
            tokio::task::yield_now().await;
        }
        task.abort();
    }
}
