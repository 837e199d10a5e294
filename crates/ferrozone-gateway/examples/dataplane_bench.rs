//! Data-plane benchmarks, run by `scripts/bench-dataplane` as root inside a network
//! namespace of its own (it creates a WireGuard interface with wireguard-go).
//!
//! 1. A raw batched UAPI `set` of N peers onto an empty interface, against a full
//!    reconcile of the same N peers from an SQLite database onto an empty interface
//!    (read, decrypt the preshared keys, read the interface, diff, one `set`), as a
//!    starting server does it; then the same with the preshared keys already decrypted by
//!    an earlier pass (`reconcile_warm_ms`), as a running server does it.
//! 2. The CPU cost of one statistics cycle over N peers (each part the median of 3): reading and parsing them from
//!    the interface, the collector's comparison with what it last recorded, and the
//!    database write of N changed records in one transaction (and, apart, of N first
//!    reports, each creating its device's row).
//!
//! The database reaches the data plane through the domain and the adapter `ferrozone
//! serve` runs ([`DomainPeers`]), so what is measured is what the server does.
//!
//! Prints `name value` lines; N is `BENCH_PEERS` (default 10000).

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use cpu_time::ProcessTime;
use ferrozone_domain::crypto::{generate_keypair, Cipher};
use ferrozone_domain::ipam::{Pool, Pools};
use ferrozone_domain::model::{AddressRequest, DeviceInsert, Role, User};
use ferrozone_domain::{Domain, Settings, Store, Timestamp};
use ferrozone_gateway::domain::DomainPeers;
use ferrozone_gateway::memory::MemoryInterface;
use ferrozone_gateway::reconciler::Reconciler;
use ferrozone_gateway::stats::StatsCollector;
use ferrozone_gateway::userspace::Userspace;
use ferrozone_gateway::{uapi, Changes, InterfaceConfig, Key, Peer, PeerSource, PeerStats, WireGuard};
use ferrozone_store::StoreOptions;
use tokio::task::JoinSet;

const ROUNDS: usize = 3;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let n: usize = std::env::var("BENCH_PEERS").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000);
    let name = std::env::var("BENCH_INTERFACE").unwrap_or_else(|_| "fzbench".into());
    let dir = tempfile::tempdir()?;
    let db =
        ferrozone_store::open(&format!("sqlite://{}/bench.db", dir.path().display()), &StoreOptions::default()).await?;
    db.migrate().await?;
    let store = db.into_store();
    let secret_key = Cipher::generate_key();
    let pools = pools()?;
    seed(&store, &Cipher::from_base64(&secret_key)?, &pools, n).await?;
    let settings = Settings { pools, max_devices_per_user: u32::MAX, ..Settings::standard() };
    let domain = Arc::new(Domain::open(store, Arc::new(settings), Cipher::from_base64(&secret_key)?).await?);
    let source = Arc::new(DomainPeers::new(domain.clone()));

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
    let mut full = Vec::new();
    for _ in 0..ROUNDS {
        // A fresh adapter: no preshared key decrypted yet, as at start.
        full.push(timed_reconcile(Arc::new(DomainPeers::new(domain.clone())), &interface, &clear).await?);
    }
    let mut warm = Vec::new();
    for _ in 0..ROUNDS {
        // `source` decrypted every key when `desired` was read above.
        warm.push(timed_reconcile(source.clone(), &interface, &clear).await?);
    }
    let (raw, full, warm) = (median(raw), median(full), median(warm));
    println!("peers {n}");
    println!("raw_set_ms {:.1}", ms(raw));
    println!("reconcile_ms {:.1}", ms(full));
    println!("reconcile_over_raw {:.2}", full.as_secs_f64() / raw.as_secs_f64());
    println!("reconcile_warm_ms {:.1}", ms(warm));

    // Each part of a statistics cycle: the median of ROUNDS.
    interface.apply(&all).await?;
    let mut reads = Vec::new();
    for _ in 0..ROUNDS {
        let cpu = ProcessTime::now();
        let observed = interface.peers().await?;
        reads.push(cpu.elapsed());
        assert_eq!(observed.len(), n);
    }
    // The database write of every peer's figures: once as every peer's first report (each
    // gets its row), then with every figure moved, the cycle a busy gateway runs (the target).
    let first_cpu = timed_write(source.as_ref(), &desired, 0).await?;
    let mut writes = Vec::new();
    for round in 1..=ROUNDS as u64 {
        writes.push(timed_write(source.as_ref(), &desired, round).await?);
    }
    // The collector's own work, between the read and the write: a cycle over an in-memory
    // interface whose figures did not move (a copy of the peers, and the comparison).
    let memory = Arc::new(MemoryInterface::default());
    memory.apply(&all).await?;
    for (peer, stats) in desired.iter().zip(figures(&desired, 0)?) {
        memory.set_stats(&peer.public_key, stats.1);
    }
    let mut collector = StatsCollector::new(source, memory);
    assert_eq!(collector.collect().await?, n);
    let mut diffs = Vec::new();
    for _ in 0..ROUNDS {
        let cpu = ProcessTime::now();
        assert_eq!(collector.collect().await?, 0);
        diffs.push(cpu.elapsed());
    }
    let (read_cpu, write_cpu, diff_cpu) = (median(reads), median(writes), median(diffs));
    println!("stats_read_parse_cpu_ms {:.1}", ms(read_cpu));
    println!("stats_diff_cpu_ms {:.1}", ms(diff_cpu));
    println!("stats_write_first_cpu_ms {:.1}", ms(first_cpu));
    println!("stats_write_all_cpu_ms {:.1}", ms(write_cpu));
    println!("stats_cycle_cpu_ms {:.1}", ms(read_cpu + diff_cpu + write_cpu));
    // wireguard-go outlives the process that started it unless the interface goes.
    interface.remove().await?;
    Ok(())
}

/// Every peer with figures of round `round`: a handshake now, and counters that differ
/// from any other round's.
fn figures(peers: &[Peer], round: u64) -> anyhow::Result<Vec<(Key, PeerStats)>> {
    let figures = peers.iter().enumerate().map(|(i, peer)| {
        let i = i as u64;
        let stats = PeerStats {
            latest_handshake: Some(SystemTime::now()),
            endpoint: Some(format!("192.0.2.{}:{}", i % 250 + 1, 40_000 + i % 20_000).parse()?),
            rx_bytes: i * 1000 + round,
            tx_bytes: i * 3000 + round,
        };
        Ok((peer.public_key, stats))
    });
    figures.collect()
}

/// The CPU time of writing every peer's figures of round `round` through the adapter.
async fn timed_write(source: &DomainPeers, peers: &[Peer], round: u64) -> anyhow::Result<Duration> {
    let figures = figures(peers, round)?;
    let cpu = ProcessTime::now();
    source.record_stats(&figures).await?;
    Ok(cpu.elapsed())
}

/// One full pass from `source` onto the empty `interface`, timed; emptied again after.
async fn timed_reconcile(
    source: Arc<DomainPeers>,
    interface: &Arc<Userspace>,
    clear: &Changes,
) -> anyhow::Result<Duration> {
    let mut reconciler = Reconciler::new(source, interface.clone());
    let started = Instant::now();
    let changes = reconciler.reconcile().await?;
    let elapsed = started.elapsed();
    assert_eq!(changes.upsert.len(), clear.remove.len(), "every peer was added");
    interface.apply(clear).await?;
    Ok(elapsed)
}

/// Large networks, so that `n` devices get addresses.
fn pools() -> anyhow::Result<Pools> {
    Ok(Pools {
        v4: Some(Pool::new("10.0.0.0/8".parse()?, "10.0.0.1".parse()?).map_err(anyhow::Error::msg)?),
        v6: Some(Pool::new("fd00::/104".parse()?, "fd00::1".parse()?).map_err(anyhow::Error::msg)?),
    })
}

/// One user with `n` devices, addresses assigned from `pools`.
async fn seed(store: &Arc<dyn Store>, cipher: &Cipher, pools: &Pools, n: usize) -> anyhow::Result<()> {
    let now = Timestamp::now();
    let user = User::new("bench@example.com".into(), Role::Admin, None, now);
    store.insert_user(&user).await?;
    let mut inserts = JoinSet::new();
    for i in 0..n {
        let device = DeviceInsert {
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
