//! An interface in memory: the `none` backend (an API-only replica, nothing enforced) and
//! the stand-in for a real interface in tests of the reconciler.

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;
use tokio::sync::watch;

use crate::diff::Changes;
use crate::key::Key;
use crate::peer::{ObservedPeer, PeerStats};
use crate::WireGuard;

/// Peers kept in a map; `apply` behaves like a WireGuard interface (an allowed IP belongs
/// to one peer at a time).
pub struct MemoryInterface {
    peers: Mutex<BTreeMap<Key, ObservedPeer>>,
    applied: Mutex<Vec<Changes>>,
    kind: &'static str,
    generation: std::sync::atomic::AtomicU64,
    /// Counts every change to the peers, so that a test can wait for one.
    changes: watch::Sender<u64>,
    max_peers: Option<usize>,
}

impl Default for MemoryInterface {
    fn default() -> Self {
        let (peers, applied, generation, changes) = Default::default();
        Self { peers, applied, kind: "memory", generation, changes, max_peers: None }
    }
}

impl MemoryInterface {
    /// The `none` backend.
    pub fn none() -> Self {
        Self { kind: "none", ..Self::default() }
    }

    /// An interface that holds at most `max` peers, as wireguard-go's does.
    pub fn with_max_peers(max: usize) -> Self {
        Self { max_peers: Some(max), ..Self::default() }
    }

    /// Every batch applied so far.
    pub fn batches(&self) -> Vec<Changes> {
        self.applied.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// Sets a peer's statistics, as traffic would.
    pub fn set_stats(&self, key: &Key, stats: PeerStats) {
        if let Some(peer) = self.lock().get_mut(key) {
            peer.stats = stats;
        }
        self.changed();
    }

    /// Adds a peer behind the reconciler's back (drift).
    pub fn insert(&self, peer: ObservedPeer) {
        self.lock().insert(peer.peer.public_key, peer);
        self.changed();
    }

    /// Loses every peer, as a restarted interface does; the generation moves.
    pub fn reset(&self) {
        self.lock().clear();
        self.generation.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        self.changed();
    }

    /// Returns once `done` holds for the peers on the interface, checking after each change
    /// (no polling). Never returns if it never holds: callers bound it with a timeout.
    pub async fn wait_until(&self, mut done: impl FnMut(&[ObservedPeer]) -> bool) {
        let mut changes = self.changes.subscribe();
        loop {
            // Marks the current count as seen before reading the peers, so a change made
            // after this read wakes `changed` below.
            changes.borrow_and_update();
            if done(&self.peers_now()) {
                return;
            }
            // Cannot fail: the sender lives in `self`, which outlives this call.
            let _ = changes.changed().await;
        }
    }

    /// The peers on the interface now (what [`WireGuard::peers`] answers, without awaiting).
    pub fn peers_now(&self) -> Vec<ObservedPeer> {
        self.lock().values().cloned().collect()
    }

    fn changed(&self) {
        self.changes.send_modify(|count| *count = count.wrapping_add(1));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<Key, ObservedPeer>> {
        self.peers.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[async_trait]
impl WireGuard for MemoryInterface {
    fn max_peers(&self) -> Option<usize> {
        self.max_peers
    }

    fn kind(&self) -> &'static str {
        self.kind
    }

    async fn peers(&self) -> anyhow::Result<Vec<ObservedPeer>> {
        Ok(self.peers_now())
    }

    async fn apply(&self, changes: &Changes) -> anyhow::Result<()> {
        let mut peers = self.lock();
        for key in &changes.remove {
            peers.remove(key);
        }
        for peer in &changes.upsert {
            for other in peers.values_mut() {
                other.peer.allowed_ips.retain(|ip| !peer.allowed_ips.contains(ip));
            }
            let stats = peers.remove(&peer.public_key).map(|o| o.stats).unwrap_or_default();
            peers.insert(peer.public_key, ObservedPeer { peer: peer.clone(), stats });
        }
        drop(peers);
        self.applied.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(changes.clone());
        self.changed();
        Ok(())
    }

    fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::Acquire)
    }
}
