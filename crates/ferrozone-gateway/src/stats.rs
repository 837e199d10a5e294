//! Statistics: handshakes and byte counters read from the interface and written back to
//! the devices whose figures changed.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::key::Key;
use crate::metrics;
use crate::peer::PeerStats;
use crate::{PeerSource, WireGuard};

pub struct StatsCollector {
    source: Arc<dyn PeerSource>,
    interface: Arc<dyn WireGuard>,
    /// What was last recorded per peer, so unchanged peers cost no write.
    recorded: HashMap<Key, Recorded>,
    /// Cycles run so far: the number of the current one.
    cycles: u64,
}

/// A peer's figures as last recorded, and the last cycle that saw the peer.
struct Recorded {
    stats: PeerStats,
    seen: u64,
}

impl StatsCollector {
    pub fn new(source: Arc<dyn PeerSource>, interface: Arc<dyn WireGuard>) -> Self {
        Self { source, interface, recorded: HashMap::new(), cycles: 0 }
    }

    /// One cycle: records the peers whose statistics changed since the last cycle. Peers
    /// without a handshake on this interface are skipped: with several gateways, each
    /// reports the peers it talks to, and none erases another's figures. Measured, and the
    /// peers online counted, in the [`crate::metrics`].
    pub async fn collect(&mut self) -> anyhow::Result<usize> {
        let started = std::time::Instant::now();
        let result = self.cycle().await;
        metrics::stats_cycle(&result, started.elapsed());
        result
    }

    /// One look-up of the recorded figures per peer with a handshake: a changed peer's
    /// entry takes its new figures at once, and loses them again if the write fails (so
    /// that the next cycle writes it).
    async fn cycle(&mut self) -> anyhow::Result<usize> {
        let observed = self.interface.peers().await?;
        metrics::online_peers(&observed, SystemTime::now());
        self.cycles += 1;
        let (cycle, mut seen) = (self.cycles, 0);
        let mut changed: Vec<(Key, PeerStats)> = Vec::new();
        for peer in observed.into_iter().filter(|o| o.stats.latest_handshake.is_some()) {
            seen += 1;
            let stats = peer.stats;
            match self.recorded.entry(peer.peer.public_key) {
                Entry::Occupied(mut entry) => {
                    let recorded = entry.get_mut();
                    recorded.seen = cycle;
                    if recorded.stats != stats {
                        recorded.stats = stats.clone();
                        changed.push((peer.peer.public_key, stats));
                    }
                }
                Entry::Vacant(entry) => {
                    entry.insert(Recorded { stats: stats.clone(), seen: cycle });
                    changed.push((peer.peer.public_key, stats));
                }
            }
        }
        if self.recorded.len() > seen {
            self.recorded.retain(|_, recorded| recorded.seen == cycle);
        }
        if !changed.is_empty() {
            if let Err(e) = self.source.record_stats(&changed).await {
                for (key, _) in &changed {
                    self.recorded.remove(key);
                }
                return Err(e);
            }
        }
        Ok(changed.len())
    }

    pub async fn run(mut self, interval: Duration) {
        let mut ticks = tokio::time::interval(interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            if let Err(e) = self.collect().await {
                tracing::warn!(error = format!("{e:#}"), "reading WireGuard statistics failed");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::SystemTime;

    use async_trait::async_trait;

    use super::*;
    use crate::diff::Changes;
    use crate::memory::MemoryInterface;
    use crate::peer::Peer;

    #[derive(Default)]
    struct Recorder(Mutex<Vec<Vec<(Key, PeerStats)>>>);

    #[async_trait]
    impl PeerSource for Recorder {
        async fn desired_peers(&self) -> anyhow::Result<Vec<Peer>> {
            Ok(Vec::new())
        }
        async fn record_stats(&self, stats: &[(Key, PeerStats)]) -> anyhow::Result<()> {
            self.0.lock().unwrap().push(stats.to_vec());
            Ok(())
        }
    }

    #[tokio::test]
    async fn only_changed_peers_with_a_handshake_are_recorded() {
        let interface = Arc::new(MemoryInterface::default());
        let peers: Vec<Peer> = (1..=3).map(|n| Peer::new(Key([n; 32]), None, vec![])).collect();
        interface.apply(&Changes { upsert: peers, remove: vec![] }).await.unwrap();
        let recorder = Arc::new(Recorder::default());
        let mut collector = StatsCollector::new(recorder.clone(), interface.clone());

        assert_eq!(collector.collect().await.unwrap(), 0, "no handshakes yet");
        let talked = PeerStats {
            latest_handshake: Some(SystemTime::now()),
            endpoint: Some("192.0.2.1:4000".parse().unwrap()),
            rx_bytes: 1,
            tx_bytes: 2,
        };
        interface.set_stats(&Key([2; 32]), talked.clone());
        assert_eq!(collector.collect().await.unwrap(), 1);
        assert_eq!(collector.collect().await.unwrap(), 0, "unchanged figures are not written again");
        let more = PeerStats { rx_bytes: 500, ..talked.clone() };
        interface.set_stats(&Key([2; 32]), more.clone());
        assert_eq!(collector.collect().await.unwrap(), 1);
        assert_eq!(*recorder.0.lock().unwrap(), vec![vec![(Key([2; 32]), talked)], vec![(Key([2; 32]), more)]]);
    }

    /// Fails its first write, then records like [`Recorder`].
    #[derive(Default)]
    struct FailsOnce(Recorder, std::sync::atomic::AtomicBool);

    #[async_trait]
    impl PeerSource for FailsOnce {
        async fn desired_peers(&self) -> anyhow::Result<Vec<Peer>> {
            Ok(Vec::new())
        }
        async fn record_stats(&self, stats: &[(Key, PeerStats)]) -> anyhow::Result<()> {
            if !self.1.swap(true, std::sync::atomic::Ordering::SeqCst) {
                anyhow::bail!("the database is away");
            }
            self.0.record_stats(stats).await
        }
    }

    #[tokio::test]
    async fn figures_a_failed_write_lost_are_written_by_the_next_cycle() {
        let interface = Arc::new(MemoryInterface::default());
        let peers: Vec<Peer> = (1..=2).map(|n| Peer::new(Key([n; 32]), None, vec![])).collect();
        interface.apply(&Changes { upsert: peers, remove: vec![] }).await.unwrap();
        let talked = PeerStats { latest_handshake: Some(SystemTime::now()), rx_bytes: 9, ..PeerStats::default() };
        interface.set_stats(&Key([1; 32]), talked.clone());
        let source = Arc::new(FailsOnce::default());
        let mut collector = StatsCollector::new(source.clone(), interface.clone());

        assert!(collector.collect().await.is_err());
        assert_eq!(collector.collect().await.unwrap(), 1, "written again, though unchanged");
        assert_eq!(collector.collect().await.unwrap(), 0);
        assert_eq!(*source.0 .0.lock().unwrap(), vec![vec![(Key([1; 32]), talked.clone())]]);
    }

    #[tokio::test]
    async fn a_peer_that_leaves_and_comes_back_is_written_again() {
        let interface = Arc::new(MemoryInterface::default());
        let peer = Peer::new(Key([1; 32]), None, vec![]);
        interface.apply(&Changes { upsert: vec![peer.clone()], remove: vec![] }).await.unwrap();
        let talked = PeerStats { latest_handshake: Some(SystemTime::now()), ..PeerStats::default() };
        interface.set_stats(&Key([1; 32]), talked.clone());
        let mut collector = StatsCollector::new(Arc::new(Recorder::default()), interface.clone());
        assert_eq!(collector.collect().await.unwrap(), 1);

        interface.apply(&Changes { upsert: vec![], remove: vec![Key([1; 32])] }).await.unwrap();
        assert_eq!(collector.collect().await.unwrap(), 0);
        assert!(collector.recorded.is_empty(), "a peer gone from the interface is forgotten");
        interface.apply(&Changes { upsert: vec![peer], remove: vec![] }).await.unwrap();
        interface.set_stats(&Key([1; 32]), talked);
        assert_eq!(collector.collect().await.unwrap(), 1);
    }

    #[tokio::test]
    async fn a_cycle_is_counted_with_the_peers_online() {
        use crate::metrics::recorded::{metric, take};
        use crate::metrics::{PEERS, STATS_CYCLES, STATS_CYCLE_DURATION};

        let interface = Arc::new(MemoryInterface::default());
        let peers: Vec<Peer> = (1..=3).map(|n| Peer::new(Key([n; 32]), None, vec![])).collect();
        interface.apply(&Changes { upsert: peers, remove: vec![] }).await.unwrap();
        let now = SystemTime::now();
        let seen = |secs_ago| PeerStats {
            latest_handshake: Some(now - Duration::from_secs(secs_ago)),
            ..PeerStats::default()
        };
        interface.set_stats(&Key([1; 32]), seen(10));
        interface.set_stats(&Key([2; 32]), seen(600));
        let mut collector = StatsCollector::new(Arc::new(Recorder::default()), interface);

        let recorder = metrics_util::debugging::DebuggingRecorder::new();
        let _recording = ::metrics::set_default_local_recorder(&recorder);
        collector.collect().await.unwrap();
        let expected =
            [metric(PEERS, "online", 1.0), metric(STATS_CYCLE_DURATION, "", 1.0), metric(STATS_CYCLES, "ok", 1.0)];
        assert_eq!(take(&recorder), expected, "one handshake is recent, one ten minutes old, one never");
    }
}
