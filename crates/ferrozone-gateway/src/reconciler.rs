//! The level-triggered reconciler: read what should be, read what is, apply the difference.
//!
//! It never acts on the change that woke it, only on the state it then reads, so a missed,
//! repeated or reordered trigger cannot leave the interface wrong: the next pass repairs it.
//!
//! "What is" comes from the interface on every timed pass. A pass woken by a committed
//! change may instead use what the previous pass left on the interface (it applied exactly
//! the desired set), which spares reading every peer back (tens of milliseconds at 10,000
//! peers) on the path from a 201 to the peer being live. That shortcut is taken only when
//! the previous pass succeeded and the interface has not been reset since
//! ([`WireGuard::generation`]); hand-made changes are repaired by the next timed pass.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::{watch, Notify};

use crate::diff::{diff, Changes};
use crate::metrics;
use crate::peer::Peer;
use crate::{PeerSource, WireGuard};

/// Batches up to this size log each peer they put on the interface (at debug level).
const LOGGED_PEERS: usize = 32;

/// How long to wait before trying again after a failed pass.
const RETRY: Duration = Duration::from_secs(1);

/// How the passes went, for health reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReconcileStatus {
    /// When a pass last succeeded; `None` before the first success.
    pub last_success: Option<SystemTime>,
    /// Whether the latest pass failed.
    pub last_failed: bool,
    /// The peers the interface cannot take, over its backend's limit
    /// ([`WireGuard::max_peers`]), at the latest pass that read them.
    pub refused: usize,
    /// The peers on the interface after the last successful pass.
    pub applied: usize,
}

pub struct Reconciler {
    source: Arc<dyn PeerSource>,
    interface: Arc<dyn WireGuard>,
    /// The peers the last successful pass left on the interface, with the interface's
    /// generation at the time.
    applied: Option<(u64, Vec<Peer>)>,
    status: watch::Sender<ReconcileStatus>,
}

impl Reconciler {
    pub fn new(source: Arc<dyn PeerSource>, interface: Arc<dyn WireGuard>) -> Self {
        Self { source, interface, applied: None, status: watch::Sender::new(ReconcileStatus::default()) }
    }

    /// Follows the outcome of every pass.
    pub fn status(&self) -> watch::Receiver<ReconcileStatus> {
        self.status.subscribe()
    }

    /// One full pass, reading the interface: returns what it changed.
    pub async fn reconcile(&mut self) -> anyhow::Result<Changes> {
        self.pass(true).await
    }

    /// One pass, its outcome recorded in [`Self::status`] and the [`crate::metrics`].
    async fn pass(&mut self, read_interface: bool) -> anyhow::Result<Changes> {
        let started = std::time::Instant::now();
        let result = self.try_pass(read_interface).await;
        metrics::reconcile_pass(&result, started.elapsed());
        self.status.send_modify(|status| {
            status.last_failed = result.is_err();
            if result.is_ok() {
                status.last_success = Some(SystemTime::now());
            }
        });
        result
    }

    /// `read_interface: false` uses what the last pass applied when that is still known to
    /// be what the interface holds.
    async fn try_pass(&mut self, read_interface: bool) -> anyhow::Result<Changes> {
        let started = std::time::Instant::now();
        let generation = self.interface.generation();
        let known = self.applied.take().filter(|(at, _)| !read_interface && *at == generation);
        let (desired, observed) = match known {
            Some((_, peers)) => (self.source.desired_peers().await?, peers),
            None => {
                let (desired, observed) = tokio::try_join!(self.source.desired_peers(), self.interface.peers())?;
                (desired, observed.into_iter().map(|o| o.peer).collect())
            }
        };
        metrics::desired_peers(desired.len());
        let desired = self.within_limit(desired);
        let changes = diff(&desired, &observed);
        if !changes.is_empty() {
            self.interface.apply(&changes).await?;
            // Public keys are not secret; a line per peer of small batches lets an operator
            // (and the propagation benchmark) see when a device became live.
            if changes.upsert.len() <= LOGGED_PEERS {
                for peer in &changes.upsert {
                    tracing::debug!(public_key = %peer.public_key.to_base64(), "peer on the interface");
                }
            }
            tracing::info!(
                upserted = changes.upsert.len(),
                removed = changes.remove.len(),
                peers = desired.len(),
                elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
                "WireGuard peers reconciled"
            );
        } else {
            tracing::debug!(
                peers = desired.len(),
                elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
                "WireGuard peers checked"
            );
        }
        metrics::applied_peers(desired.len());
        self.status.send_modify(|status| status.applied = desired.len());
        self.applied = Some((generation, desired));
        Ok(changes)
    }

    /// `desired` cut to what the interface can hold, the peers in public-key order so that
    /// the same ones stay from pass to pass; the excess is refused loudly: counted in the
    /// status and the metrics, and logged when it changes.
    fn within_limit(&mut self, mut desired: Vec<Peer>) -> Vec<Peer> {
        let limit = self.interface.max_peers().unwrap_or(usize::MAX);
        let refused = desired.len().saturating_sub(limit);
        if refused > 0 {
            desired.sort_unstable_by_key(|peer| peer.public_key);
            desired.truncate(limit);
        }
        if refused != self.status.borrow().refused {
            if refused > 0 {
                tracing::error!(
                    refused,
                    limit,
                    backend = self.interface.kind(),
                    "more peers than the WireGuard backend holds: the excess is not on the interface; use the \
                     kernel backend (FERROZONE_WIREGUARD_BACKEND=kernel) or spread the devices over gateways"
                );
            } else {
                tracing::info!("every peer fits on the interface again");
            }
        }
        metrics::refused_peers(refused);
        self.status.send_modify(|status| status.refused = refused);
        desired
    }

    /// Reconciles now, then whenever `trigger` is notified (after a committed change), and
    /// at least every `repair` with a fresh read of the interface (drift: a peer changed
    /// by hand). Triggers that arrive during a pass coalesce into one more pass. Runs
    /// until dropped.
    pub async fn run(mut self, trigger: Arc<Notify>, repair: Duration) {
        let mut read_interface = true;
        loop {
            let wait = match self.pass(read_interface).await {
                Ok(_) => repair,
                Err(e) => {
                    tracing::warn!(error = format!("{e:#}"), "reconciling WireGuard peers failed; retrying");
                    RETRY.min(repair)
                }
            };
            read_interface = tokio::select! {
                () = trigger.notified() => false,
                () = tokio::time::sleep(wait) => true,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Mutex;

    use async_trait::async_trait;

    use super::*;
    use crate::key::Key;
    use crate::memory::MemoryInterface;
    use crate::peer::{ObservedPeer, Peer, PeerStats};

    /// The peers that should be; the database is unreachable while `.1` is set.
    #[derive(Default)]
    struct Desired(Mutex<Vec<Peer>>, AtomicBool);

    #[async_trait]
    impl PeerSource for Desired {
        async fn desired_peers(&self) -> anyhow::Result<Vec<Peer>> {
            anyhow::ensure!(!self.1.load(Ordering::Relaxed), "the database is unreachable");
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
        let (source, interface, mut reconciler) = setup();
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
        let (source, interface, mut reconciler) = setup();
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

    /// Waits for the interface to hold exactly `count` peers; fails, rather than hangs,
    /// when it never does (a lost trigger: the timed pass is an hour away).
    async fn until_count(interface: &MemoryInterface, count: usize) {
        let waited = tokio::time::timeout(PATIENCE, interface.wait_until(|peers| peers.len() == count)).await;
        waited.unwrap_or_else(|_| panic!("no pass left {count} peers on the interface within {PATIENCE:?}"));
    }

    /// Far longer than a pass takes, even on a loaded machine: only a pass that never
    /// comes runs into it.
    const PATIENCE: Duration = Duration::from_secs(30);

    #[tokio::test]
    async fn the_loop_follows_triggers() {
        let (source, interface, reconciler) = setup();
        let trigger = Arc::new(Notify::new());
        let task = tokio::spawn(reconciler.run(trigger.clone(), Duration::from_secs(3600)));
        for n in 1..=3 {
            source.0.lock().unwrap().push(peer(n));
            trigger.notify_one();
            until_count(&interface, usize::from(n)).await;
        }
        source.0.lock().unwrap().clear();
        trigger.notify_one();
        until_count(&interface, 0).await;
        task.abort();
    }

    #[tokio::test]
    async fn a_triggered_pass_trusts_what_it_applied_and_a_full_pass_reads_back() {
        let (source, interface, mut reconciler) = setup();
        *source.0.lock().unwrap() = vec![peer(1)];
        reconciler.pass(true).await.unwrap();
        // Drift the triggered pass cannot see: it works from what it applied.
        interface.insert(ObservedPeer { peer: peer(9), stats: PeerStats::default() });
        source.0.lock().unwrap().push(peer(2));
        let changes = reconciler.pass(false).await.unwrap();
        assert_eq!(changes, Changes { upsert: vec![peer(2)], remove: vec![] });
        // A full pass reads the interface and removes the stranger.
        let changes = reconciler.pass(true).await.unwrap();
        assert_eq!(changes, Changes { upsert: vec![], remove: vec![Key([9; 32])] });
    }

    #[tokio::test]
    async fn the_status_follows_each_pass() {
        let (source, _interface, mut reconciler) = setup();
        let status = reconciler.status();
        assert_eq!(*status.borrow(), ReconcileStatus::default());
        *source.0.lock().unwrap() = vec![peer(1)];
        reconciler.reconcile().await.unwrap();
        let first = *status.borrow();
        assert!(first.last_success.is_some() && !first.last_failed, "{first:?}");

        source.1.store(true, Ordering::Relaxed);
        reconciler.reconcile().await.unwrap_err();
        let failed = *status.borrow();
        assert_eq!(
            failed,
            ReconcileStatus { last_success: first.last_success, last_failed: true, refused: 0, applied: 1 }
        );

        source.1.store(false, Ordering::Relaxed);
        reconciler.reconcile().await.unwrap();
        let repaired = *status.borrow();
        assert!(!repaired.last_failed && repaired.last_success >= first.last_success, "{repaired:?}");
    }

    #[tokio::test]
    async fn passes_are_counted_by_outcome_with_the_peers_desired_and_applied() {
        use crate::metrics::recorded::{metric, take};
        use crate::metrics::{PEERS, RECONCILE_DURATION, RECONCILE_PASSES};

        let (source, _interface, mut reconciler) = setup();
        let recorder = metrics_util::debugging::DebuggingRecorder::new();
        let _recording = ::metrics::set_default_local_recorder(&recorder);
        *source.0.lock().unwrap() = vec![peer(1), peer(2)];
        reconciler.reconcile().await.unwrap();
        let after_ok = take(&recorder);
        assert_eq!(
            after_ok,
            [
                metric(PEERS, "applied", 2.0),
                metric(PEERS, "desired", 2.0),
                metric(PEERS, "refused", 0.0),
                metric(RECONCILE_DURATION, "", 1.0),
                metric(RECONCILE_PASSES, "ok", 1.0),
            ]
        );

        source.1.store(true, Ordering::Relaxed);
        reconciler.reconcile().await.unwrap_err();
        let after_error = take(&recorder);
        // Taking reset the gauges: a failed pass sets neither.
        assert_eq!(
            after_error,
            [
                metric(PEERS, "applied", 0.0),
                metric(PEERS, "desired", 0.0),
                metric(PEERS, "refused", 0.0),
                metric(RECONCILE_DURATION, "", 1.0),
                metric(RECONCILE_PASSES, "error", 1.0),
                metric(RECONCILE_PASSES, "ok", 0.0),
            ]
        );
    }

    /// Past the backend's limit, the same peers (the lowest keys) stay on the interface and
    /// the excess is refused, counted in the status until it fits again.
    #[tokio::test]
    async fn peers_over_the_backends_limit_are_refused_loudly() {
        let source = Arc::new(Desired::default());
        let interface = Arc::new(MemoryInterface::with_max_peers(2));
        let mut reconciler = Reconciler::new(source.clone(), interface.clone());
        let status = reconciler.status();
        *source.0.lock().unwrap() = vec![peer(3), peer(1), peer(2)];
        reconciler.reconcile().await.unwrap();
        assert_eq!(keys(&interface).await, vec![Key([1; 32]), Key([2; 32])]);
        assert_eq!(status.borrow().refused, 1);
        source.0.lock().unwrap().retain(|p| p.public_key != Key([1; 32]));
        reconciler.reconcile().await.unwrap();
        assert_eq!(keys(&interface).await, vec![Key([2; 32]), Key([3; 32])]);
        assert_eq!(status.borrow().refused, 0, "every peer fits again");
    }

    #[tokio::test]
    async fn a_reset_interface_is_read_again_even_on_a_triggered_pass() {
        let (source, interface, mut reconciler) = setup();
        *source.0.lock().unwrap() = vec![peer(1), peer(2)];
        reconciler.pass(true).await.unwrap();
        interface.reset();
        let changes = reconciler.pass(false).await.unwrap();
        assert_eq!(changes.upsert, vec![peer(1), peer(2)], "the restarted interface gets every peer back");
    }
}
