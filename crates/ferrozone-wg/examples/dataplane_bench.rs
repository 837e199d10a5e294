//! Data-plane benchmarks, run by `scripts/bench-dataplane` as root inside a network
//! namespace of its own (it creates a WireGuard interface with wireguard-go).
//!
//! 1. A raw batched UAPI `set` of N peers onto an empty interface, against a full
//!    reconcile of the same N peers from an SQLite database onto an empty interface
//!    (read, decrypt the preshared keys, read the interface, diff, one `set`).
//! 2. The CPU cost of one statistics cycle over N peers: reading and parsing them from
//!    the interface, and writing N changed records in one transaction.
//!
//! Prints `name value` lines; N is `BENCH_PEERS` (default 10000).

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use async_trait::async_trait;
use cpu_time::ProcessTime;
use ferrozone_domain::crypto::{generate_keypair, Cipher};
use ferrozone_domain::ipam::{Pool, Pools};
use ferrozone_domain::model::{AddressRequest, NewDevice, Role, StatsReport, User};
use ferrozone_domain::{Store, Timestamp};
use ferrozone_store::StoreOptions;
use ferrozone_wg::memory::MemoryInterface;
use ferrozone_wg::reconciler::Reconciler;
use ferrozone_wg::stats::StatsCollector;
use ferrozone_wg::userspace::Userspace;
use ferrozone_wg::{uapi, Changes, InterfaceConfig, Key, Peer, PeerSource, PeerStats, WireGuard};
use tokio::task::JoinSet;

const ROUNDS: usize = 3;

/// The store as the reconciler's source, as `ferrozone serve` wires it.
struct StoreSource {
    store: Arc<dyn Store>,
    cipher: Cipher,
}

#[async_trait]
impl PeerSource for StoreSource {
    async fn desired_peers(&self) -> anyhow::Result<Vec<Peer>> {
        let rows = self.store.active_peers().await?;
        rows.into_iter()
            .map(|row| {
                let psk = Key::from_base64(&self.cipher.open_str(&row.preshared_key)?)?;
                Ok(Peer::for_device(Key::from_base64(&row.public_key)?, Some(psk), row.ipv4, row.ipv6))
            })
            .collect()
    }

    async fn record_stats(&self, stats: &[(Key, PeerStats)]) -> anyhow::Result<()> {
        let reports: Vec<StatsReport> = stats
            .iter()
            .map(|(key, s)| StatsReport {
                public_key: key.to_base64(),
                latest_handshake: Timestamp::now(),
                remote_ip: s.endpoint.map(|e| e.ip().to_string()),
                rx_bytes: s.rx_bytes as i64,
                tx_bytes: s.tx_bytes as i64,
            })
            .collect();
        Ok(self.store.record_stats(&reports).await?)
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let n: usize = std::env::var("BENCH_PEERS").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000);
    let name = std::env::var("BENCH_INTERFACE").unwrap_or_else(|_| "fzbench".into());
    let dir = tempfile::tempdir()?;
    let db =
        ferrozone_store::open(&format!("sqlite://{}/bench.db", dir.path().display()), &StoreOptions::default()).await?;
    db.migrate().await?;
    let store = db.into_store();
    let cipher = Cipher::from_base64(&Cipher::generate_key())?;
    seed(&store, &cipher, n).await?;
    let source = Arc::new(StoreSource { store, cipher });

    let server_key = Key::from_base64(&generate_keypair().private_key)?;
    let config = InterfaceConfig {
        name: name.clone(),
        private_key: server_key,
        listen_port: 51_899,
        addresses: vec!["10.0.0.1/8".parse()?],
    };
    let interface = Arc::new(Userspace::start("wireguard-go", config, Arc::new(tokio::sync::Notify::new())).await?);
    let socket = std::path::PathBuf::from(format!("/var/run/wireguard/{name}.sock"));
    let desired = source.desired_peers().await?;
    let all = Changes { upsert: desired.clone(), remove: Vec::new() };
    let clear = Changes { upsert: Vec::new(), remove: desired.iter().map(|p| p.public_key).collect() };

    let text = uapi::set_peers(&all);
    let mut raw = Vec::new();
    for _ in 0..ROUNDS {
        let started = Instant::now();
        uapi::request(&socket, &text).await?;
        raw.push(started.elapsed());
        interface.apply(&clear).await?;
    }
    let mut reconciler = Reconciler::new(source.clone(), interface.clone());
    let mut full = Vec::new();
    for _ in 0..ROUNDS {
        let started = Instant::now();
        let changes = reconciler.reconcile().await?;
        full.push(started.elapsed());
        assert_eq!(changes.upsert.len(), n, "every peer was added");
        interface.apply(&clear).await?;
    }
    let (raw, full) = (median(raw), median(full));
    println!("peers {n}");
    println!("raw_set_ms {:.1}", ms(raw));
    println!("reconcile_ms {:.1}", ms(full));
    println!("reconcile_over_raw {:.2}", full.as_secs_f64() / raw.as_secs_f64());

    interface.apply(&all).await?;
    let cpu = ProcessTime::now();
    let observed = interface.peers().await?;
    let read_cpu = cpu.elapsed();
    assert_eq!(observed.len(), n);
    let memory = Arc::new(MemoryInterface::default());
    memory.apply(&all).await?;
    for (i, peer) in desired.iter().enumerate() {
        let stats = PeerStats {
            latest_handshake: Some(SystemTime::now()),
            endpoint: Some(format!("192.0.2.{}:{}", i % 250 + 1, 40_000 + i % 20_000).parse()?),
            rx_bytes: i as u64 * 1000,
            tx_bytes: i as u64 * 3000,
        };
        memory.set_stats(&peer.public_key, stats);
    }
    let mut collector = StatsCollector::new(source, memory);
    let cpu = ProcessTime::now();
    let written = collector.collect().await?;
    let write_cpu = cpu.elapsed();
    assert_eq!(written, n);
    println!("stats_read_parse_cpu_ms {:.1}", ms(read_cpu));
    println!("stats_write_all_cpu_ms {:.1}", ms(write_cpu));
    println!("stats_cycle_cpu_ms {:.1}", ms(read_cpu + write_cpu));
    Ok(())
}

/// One user with `n` devices, addresses assigned from large networks.
async fn seed(store: &Arc<dyn Store>, cipher: &Cipher, n: usize) -> anyhow::Result<()> {
    let now = Timestamp::now();
    let user = User::new("bench@example.com".into(), Role::Admin, None, now);
    store.insert_user(&user).await?;
    let pools = Pools {
        v4: Some(Pool::new("10.0.0.0/8".parse()?, "10.0.0.1".parse()?).map_err(anyhow::Error::msg)?),
        v6: Some(Pool::new("fd00::/104".parse()?, "fd00::1".parse()?).map_err(anyhow::Error::msg)?),
    };
    let mut inserts = JoinSet::new();
    for i in 0..n {
        let device = NewDevice {
            id: uuid::Uuid::now_v7(),
            user_id: user.id,
            name: format!("bench-{i}"),
            description: None,
            public_key: generate_keypair().public_key,
            preshared_key: cipher.seal(Key([i as u8; 32]).to_base64().as_bytes()),
            ipv4: AddressRequest::Assign,
            ipv6: AddressRequest::Assign,
            use_default: Default::default(),
            custom: Default::default(),
            now: Timestamp::now(),
        };
        let (store, pools) = (store.clone(), pools.clone());
        inserts.spawn(async move { store.insert_device(&device, &pools, u32::MAX).await.map(|_| ()) });
        if inserts.len() >= 256 {
            inserts.join_next().await.transpose()?.transpose()?;
        }
    }
    while let Some(done) = inserts.join_next().await {
        done??;
    }
    Ok(())
}

fn median(mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
