//! The WireGuard data plane of `ferrozone serve`: the backend chosen by configuration, the
//! reconciler and the statistics loop, fed by the domain.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use ferrozone_domain::Domain;
use ferrozone_http::{DataPlaneHealth, DataPlaneProbe, NoDataPlane, RoutingHealth};
use ferrozone_wg::domain::DomainPeers;
use ferrozone_wg::kernel::Kernel;
use ferrozone_wg::memory::MemoryInterface;
use ferrozone_wg::reconciler::{ReconcileStatus, Reconciler};
use ferrozone_wg::stats::StatsCollector;
use ferrozone_wg::userspace::Userspace;
use ferrozone_wg::{InterfaceConfig, Key, PeerSource, WireGuard};
use ipnet::IpNet;
use tokio::sync::Notify;

use crate::config::{Config, EgressDefaultAction, WireguardBackend};

mod egress;
mod routing;
use crate::supervisor::Supervisor;
use routing::RoutingStatus;

/// `ferrozone_rules_applied`: the egress rules in the nftables table as last applied.
pub const RULES_APPLIED: &str = "ferrozone_rules_applied";

/// Gives the data plane's metrics (the WireGuard side's and the table's) their help texts.
pub fn describe_metrics() {
    ferrozone_wg::metrics::describe();
    metrics::describe_gauge!(
        RULES_APPLIED,
        metrics::Unit::Count,
        "Egress rules in the nftables table inet ferrozone, as last found or applied."
    );
}

/// How often the reconciler runs without a trigger, to repair drift.
const REPAIR_INTERVAL: Duration = Duration::from_secs(30);

/// The first and the longest wait before watching the database for changes again.
const WATCH_RETRY: Duration = Duration::from_secs(1);
const WATCH_RETRY_MAX: Duration = Duration::from_secs(30);

/// Starts the backend `config` asks for and, under `tasks`, the loops that keep it in line
/// with the database. The backend lives as long as those loops (a wireguard-go child with it).
pub async fn start(
    config: &Config,
    domain: Arc<Domain>,
    tasks: &mut Supervisor,
) -> anyhow::Result<Arc<dyn DataPlaneProbe>> {
    // One signal from the domain (this process's commits and the database watch), one
    // wake-up per consumer: a `Notify` permit wakes only one waiter.
    let (peers_changed, table_changed) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let interface = open_backend(config, &domain, peers_changed.clone()).await?;
    if interface.kind() == "none" {
        return Ok(Arc::new(NoDataPlane));
    }
    let routing = routing::start(config, domain.clone()).await?;
    let routing_status = routing.status();
    let stopping = tasks.stopping();
    let (remove, table) = (config.nft_remove_on_shutdown, table_changed.clone());
    tasks.spawn_draining("nftables", routing::keep(routing, table, REPAIR_INTERVAL, stopping, remove));
    let fan_out = fan_out(domain.peer_changes(), vec![peers_changed.clone(), table_changed]);
    tasks.spawn("change fan-out", forever(fan_out));
    let source: Arc<dyn PeerSource> = Arc::new(DomainPeers::new(domain.clone()));
    tasks.spawn("peer change watcher", watch_peer_changes(domain.clone(), domain.peer_changes()));
    let reconciler = Reconciler::new(source.clone(), interface.clone());
    let default_action = config.egress_default_action;
    let probe =
        Probe { backend: interface.kind(), status: reconciler.status(), routing: routing_status, default_action };
    tasks.spawn("reconciler", forever(reconciler.run(peers_changed, REPAIR_INTERVAL)));
    let collector = StatsCollector::new(source, interface);
    tasks.spawn("statistics", forever(collector.run(Duration::from_secs(config.stats_interval))));
    Ok(Arc::new(probe))
}

/// Passes every wake-up of `source` on to each of `consumers`, forever.
async fn fan_out(source: Arc<Notify>, consumers: Vec<Arc<Notify>>) {
    loop {
        source.notified().await;
        for consumer in &consumers {
            consumer.notify_one();
        }
    }
}

/// A loop that never ends by design: if it does, the supervisor hears of it.
async fn forever(task: impl std::future::Future<Output = ()>) -> anyhow::Result<()> {
    task.await;
    Ok(())
}

/// Wakes the data plane on every committed change, also those of other processes sharing
/// the database. A lost watch (the database restarted) is retried: meanwhile the
/// reconciler's timed passes keep the interface in line.
async fn watch_peer_changes(domain: Arc<Domain>, changes: Arc<Notify>) -> anyhow::Result<()> {
    let watch = || domain.watch_peer_changes();
    retry_watch(watch, &changes, (WATCH_RETRY, WATCH_RETRY_MAX)).await
}

/// Runs `watch` again after each failure, waiting `first`, then twice as long each time up
/// to `max` (from `first` again after a watch that held longer than `max`), and wakes the
/// reconciler each time: changes made meanwhile were not heard. Ends only when `watch`
/// returns (the database was closed).
async fn retry_watch<W, F, E>(mut watch: W, changes: &Notify, (first, max): (Duration, Duration)) -> anyhow::Result<()>
where
    W: FnMut() -> F,
    F: std::future::Future<Output = Result<(), E>>,
    E: std::fmt::Display,
{
    let mut wait = first;
    loop {
        let started = tokio::time::Instant::now();
        if let Err(e) = watch().await {
            if started.elapsed() > max {
                wait = first;
            }
            tracing::warn!(error = %e, retry_ms = wait.as_millis(), "watching the database for peer changes failed");
        } else {
            anyhow::bail!("the database was closed");
        }
        changes.notify_one();
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(max);
    }
}

/// The reconciler's and the table keeper's outcomes, for `/healthz`.
struct Probe {
    backend: &'static str,
    status: tokio::sync::watch::Receiver<ReconcileStatus>,
    routing: tokio::sync::watch::Receiver<RoutingStatus>,
    default_action: EgressDefaultAction,
}

impl DataPlaneProbe for Probe {
    fn health(&self) -> DataPlaneHealth {
        let status = *self.status.borrow();
        let routing = *self.routing.borrow();
        let default_action = match self.default_action {
            EgressDefaultAction::Accept => "accept",
            EgressDefaultAction::Drop => "drop",
        };
        DataPlaneHealth {
            backend: self.backend,
            last_reconcile: status.last_success,
            last_reconcile_failed: status.last_failed,
            routing: RoutingHealth::Applied {
                rules: routing.rules,
                default_action,
                last_apply: routing.last_apply,
                last_pass_failed: routing.last_pass_failed,
            },
        }
    }
}

async fn open_backend(config: &Config, domain: &Domain, changes: Arc<Notify>) -> anyhow::Result<Arc<dyn WireGuard>> {
    let name = &config.wireguard_interface;
    let chosen = match config.wireguard_backend {
        WireguardBackend::None => None,
        WireguardBackend::Kernel => Some(kernel(config, domain).await?),
        WireguardBackend::Userspace => Some(userspace(config, domain, changes).await?),
        WireguardBackend::Auto => auto(config, domain, changes).await,
    };
    let backend = chosen.unwrap_or_else(|| Arc::new(MemoryInterface::none()) as Arc<dyn WireGuard>);
    tracing::info!(backend = backend.kind(), interface = %name, "WireGuard data plane");
    Ok(backend)
}

/// Kernel, else userspace, else none; says which and why.
async fn auto(config: &Config, domain: &Domain, changes: Arc<Notify>) -> Option<Arc<dyn WireGuard>> {
    let kernel_error = match kernel(config, domain).await {
        Ok(backend) => return Some(backend),
        Err(e) => format!("{e:#}"),
    };
    tracing::info!(reason = %kernel_error, "the kernel WireGuard backend is not available; trying userspace");
    match userspace(config, domain, changes).await {
        Ok(backend) => Some(backend),
        Err(e) => {
            tracing::warn!(
                kernel = %kernel_error,
                userspace = format!("{e:#}"),
                "no WireGuard backend could start: serving the API only, nothing is enforced"
            );
            None
        }
    }
}

async fn kernel(config: &Config, domain: &Domain) -> anyhow::Result<Arc<dyn WireGuard>> {
    Ok(Arc::new(Kernel::start(interface_config(config, domain)?).await?))
}

async fn userspace(config: &Config, domain: &Domain, changes: Arc<Notify>) -> anyhow::Result<Arc<dyn WireGuard>> {
    let interface = interface_config(config, domain)?;
    let backend = Userspace::start(&config.wireguard_go, interface, changes).await?;
    Ok(Arc::new(backend))
}

/// The interface's key, port and gateway addresses (docs/api.md section 6).
fn interface_config(config: &Config, domain: &Domain) -> anyhow::Result<InterfaceConfig> {
    let pools = &domain.settings().pools;
    let addresses = [&pools.v4, &pools.v6]
        .into_iter()
        .flatten()
        .map(|pool| IpNet::new(pool.gateway(), pool.network().prefix_len()))
        .collect::<Result<Vec<_>, _>>()
        .context("a gateway address")?;
    Ok(InterfaceConfig {
        name: config.wireguard_interface.clone(),
        private_key: Key::from_base64(domain.server_private_key()).context("the server's WireGuard key")?,
        listen_port: config.wireguard_port,
        addresses,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// A lost watch is retried (the reconciler woken each time) until the database closes.
    #[tokio::test]
    async fn a_lost_watch_is_retried_until_the_database_closes() {
        let calls = AtomicUsize::new(0);
        let changes = Notify::new();
        let watch = || {
            let call = calls.fetch_add(1, Ordering::SeqCst);
            async move {
                match call {
                    0..=2 => Err("connection refused"),
                    _ => Ok(()),
                }
            }
        };
        let waits = (Duration::from_millis(1), Duration::from_millis(4));
        let error = retry_watch(watch, &changes, waits).await.unwrap_err();
        assert_eq!(error.to_string(), "the database was closed");
        assert_eq!(calls.load(Ordering::SeqCst), 4, "three failures, each retried");
        // The last failure left a wake-up for the reconciler.
        tokio::time::timeout(Duration::from_secs(60), changes.notified()).await.expect("the reconciler was woken");
    }

    /// One wake-up of the domain's signal wakes every consumer: the reconciler and the
    /// table keeper each get their own permit.
    #[tokio::test]
    async fn one_change_wakes_every_consumer() {
        let source = Arc::new(Notify::new());
        let consumers = [Arc::new(Notify::new()), Arc::new(Notify::new())];
        let task = tokio::spawn(fan_out(source.clone(), consumers.to_vec()));
        source.notify_one();
        for consumer in &consumers {
            tokio::time::timeout(Duration::from_secs(60), consumer.notified()).await.expect("woken");
        }
        task.abort();
    }
}
