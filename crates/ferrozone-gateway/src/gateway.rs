//! The gateway as one piece: the WireGuard backend the options choose, the reconciler and
//! the statistics loop fed with the domain's peers ([`crate::domain`]), and the nftables
//! table (forwarding, NAT, the egress rules: [`routing`], [`egress`]) kept in line with the
//! domain. The binary gives it its [`Options`] and a place to run its tasks ([`Tasks`]), and
//! reads its [`Health`] (docs/design/data-plane.md, "The gateway as one piece").

mod egress;
mod routing;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use ferrozone_domain::Domain;
use ipnet::IpNet;
use tokio::sync::{watch, Notify};

use crate::domain::DomainPeers;
use crate::kernel::Kernel;
use crate::memory::MemoryInterface;
use crate::reconciler::{ReconcileStatus, Reconciler};
use crate::stats::StatsCollector;
use crate::userspace::Userspace;
use crate::{InterfaceConfig, Key, PeerSource, PolicySource, WireGuard};
pub use egress::{egress, egress_with, Skipped, UserSources};
pub use routing::RoutingStatus;

/// Which WireGuard implementation carries the tunnel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// None: nothing is enforced (an API-only process).
    None,
    /// The Linux module, over netlink.
    Kernel,
    /// A supervised `wireguard-go`, over its UAPI socket.
    Userspace,
    /// The kernel's, else userspace, else none.
    Auto,
}

/// Everything the gateway takes from the configuration.
#[derive(Debug, Clone)]
pub struct Options {
    pub backend: Backend,
    /// The interface's name (`wg-ferrozone`).
    pub interface: String,
    /// WireGuard's UDP port.
    pub listen_port: u16,
    /// The `wireguard-go` program of the userspace backend.
    pub wireguard_go: String,
    /// How often the statistics are read back.
    pub stats_interval: Duration,
    /// The `nft` program.
    pub nft: String,
    /// Remove the table when the process stops.
    pub nft_remove_on_shutdown: bool,
    /// Remove the interface when the process stops (else it stays, peers and all, for the
    /// next start to adopt).
    pub interface_remove_on_shutdown: bool,
    /// Masquerade tunnel traffic leaving the host.
    pub masquerade: bool,
    /// The interface tunnel traffic leaves by; `None`: the default route's.
    pub egress_interface: Option<String>,
    /// Filter what the tunnel may reach on the gateway itself.
    pub host_filter: bool,
    /// How often the reconciler and the table keeper repair drift without a trigger.
    pub repair_interval: Duration,
}

/// The first and the longest wait before watching the database for changes again.
const WATCH_RETRY: Duration = Duration::from_secs(1);
const WATCH_RETRY_MAX: Duration = Duration::from_secs(30);

/// A task of the gateway.
pub type Task = Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send>>;

/// Where the gateway's tasks run (the binary's supervisor), each with its name.
pub trait Tasks {
    /// A task meant to run as long as the process: if it ends, the process hears of it.
    fn spawn(&mut self, name: &'static str, task: Task);
    /// A task that ends by itself once [`Tasks::stopping`] resolves, waited for.
    fn spawn_draining(&mut self, name: &'static str, task: Task);
    /// Resolves when the process begins to stop.
    fn stopping(&self) -> Pin<Box<dyn Future<Output = ()> + Send>>;
}

/// A running gateway, for its health.
#[derive(Clone)]
pub struct Gateway {
    backend: &'static str,
    reconcile: watch::Receiver<ReconcileStatus>,
    routing: watch::Receiver<RoutingStatus>,
}

/// The gateway's state: the backend, the reconciler's and the table keeper's outcomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Health {
    /// `kernel` or `userspace`.
    pub backend: &'static str,
    pub reconcile: ReconcileStatus,
    pub routing: RoutingStatus,
}

impl Gateway {
    pub fn health(&self) -> Health {
        Health { backend: self.backend, reconcile: *self.reconcile.borrow(), routing: *self.routing.borrow() }
    }
}

/// What the gateway enforces, and where it reads it: the interface's key and addresses
/// (the gateway's address in each pool, with the pool's prefix), the peers, the rules.
pub struct Sources {
    pub private_key: Key,
    pub addresses: Vec<IpNet>,
    pub peers: Arc<dyn PeerSource>,
    pub policy: Arc<dyn PolicySource>,
}

/// The wake-ups of the gateway's loops after a change: one for the reconciler, one for
/// the table keeper, and one for the table keeper after a change of the rules or
/// memberships alone, which the reconciler need not hear of (a `Notify` permit wakes only
/// one waiter).
#[derive(Clone, Default)]
pub struct Wakes {
    pub peers: Arc<Notify>,
    pub table: Arc<Notify>,
    pub rules: Arc<Notify>,
}

impl Wakes {
    /// The reconciler's and the table keeper's, for a fan-out of every other change.
    pub fn all(&self) -> Vec<Arc<Notify>> {
        vec![self.peers.clone(), self.table.clone()]
    }
}

/// The gateway embedded in `serve`: the domain's key, pools, peers and rules.
pub fn embedded_sources(domain: &Arc<Domain>) -> anyhow::Result<Sources> {
    let pools = &domain.settings().pools;
    let addresses = [&pools.v4, &pools.v6]
        .into_iter()
        .flatten()
        .map(|pool| IpNet::new(pool.gateway(), pool.network().prefix_len()))
        .collect::<Result<Vec<_>, _>>()
        .context("a gateway address")?;
    Ok(Sources {
        private_key: Key::from_base64(domain.server_private_key()).context("the server's WireGuard key")?,
        addresses,
        peers: Arc::new(DomainPeers::new(domain.clone())),
        policy: domain.clone(),
    })
}

/// Wakes each of `consumers` after every committed change of the peers, and each of
/// `rule_consumers` after every change of the rules or memberships alone, of this process
/// ([`Domain::peer_changes`], [`Domain::rule_changes`]) and of others sharing the database
/// (its watch, retried when lost), under `tasks`.
pub fn watch_domain(
    domain: &Arc<Domain>,
    consumers: Vec<Arc<Notify>>,
    rule_consumers: Vec<Arc<Notify>>,
    tasks: &mut dyn Tasks,
) {
    tasks.spawn("change fan-out", Box::pin(forever(fan_out(domain.peer_changes(), consumers))));
    tasks.spawn("rule change fan-out", Box::pin(forever(fan_out(domain.rule_changes(), rule_consumers))));
    tasks.spawn("peer change watcher", Box::pin(watch_peer_changes(domain.clone(), domain.peer_changes())));
}

/// Starts the backend `options` ask for and, under `tasks`, the loops that keep it and the
/// table in line with `sources`, woken by `wakes`; `None` when there is no backend (nothing
/// to enforce). The backend lives as long as those loops (a wireguard-go child with it).
pub async fn start(
    options: &Options,
    sources: Sources,
    wakes: Wakes,
    tasks: &mut dyn Tasks,
) -> anyhow::Result<Option<Gateway>> {
    let interface = open_backend(options, &sources, wakes.peers.clone()).await?;
    if interface.kind() == "none" {
        return Ok(None);
    }
    let routing = routing::start(options, &sources.addresses, sources.policy.clone()).await?;
    let routing_status = routing.status();
    let (remove, repair) = (options.nft_remove_on_shutdown, options.repair_interval);
    let table_wakes = routing::TableWakes { changes: wakes.table, rules: wakes.rules };
    tasks.spawn_draining("nftables", Box::pin(routing::keep(routing, table_wakes, repair, tasks.stopping(), remove)));
    if options.interface_remove_on_shutdown {
        let (interface, stopping) = (interface.clone(), tasks.stopping());
        tasks.spawn_draining(
            "interface removal",
            Box::pin(async move {
                stopping.await;
                interface.remove().await.context("removing the WireGuard interface")?;
                tracing::info!("WireGuard interface removed");
                Ok(())
            }),
        );
    }
    let reconciler = Reconciler::new(sources.peers.clone(), interface.clone());
    let gateway = Gateway { backend: interface.kind(), reconcile: reconciler.status(), routing: routing_status };
    tasks.spawn("reconciler", Box::pin(forever(reconciler.run(wakes.peers, repair))));
    let collector = StatsCollector::new(sources.peers, interface);
    tasks.spawn("statistics", Box::pin(forever(collector.run(options.stats_interval))));
    Ok(Some(gateway))
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

async fn open_backend(
    options: &Options,
    sources: &Sources,
    changes: Arc<Notify>,
) -> anyhow::Result<Arc<dyn WireGuard>> {
    let name = &options.interface;
    let config = || InterfaceConfig {
        name: options.interface.clone(),
        private_key: sources.private_key,
        listen_port: options.listen_port,
        addresses: sources.addresses.clone(),
    };
    let chosen = match options.backend {
        Backend::None => None,
        Backend::Kernel => Some(kernel(config()).await?),
        Backend::Userspace => Some(userspace(options, config(), changes).await?),
        Backend::Auto => auto(options, config, changes).await,
    };
    let backend = chosen.unwrap_or_else(|| Arc::new(MemoryInterface::none()) as Arc<dyn WireGuard>);
    tracing::info!(backend = backend.kind(), interface = %name, "WireGuard data plane");
    Ok(backend)
}

/// Kernel, else userspace, else none; says which and why.
async fn auto(
    options: &Options,
    config: impl Fn() -> InterfaceConfig,
    changes: Arc<Notify>,
) -> Option<Arc<dyn WireGuard>> {
    let kernel_error = match kernel(config()).await {
        Ok(backend) => return Some(backend),
        Err(e) => format!("{e:#}"),
    };
    tracing::info!(reason = %kernel_error, "the kernel WireGuard backend is not available; trying userspace");
    match userspace(options, config(), changes).await {
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

async fn kernel(config: InterfaceConfig) -> anyhow::Result<Arc<dyn WireGuard>> {
    Ok(Arc::new(Kernel::start(config).await?))
}

async fn userspace(
    options: &Options,
    config: InterfaceConfig,
    changes: Arc<Notify>,
) -> anyhow::Result<Arc<dyn WireGuard>> {
    Ok(Arc::new(Userspace::start(&options.wireguard_go, config, changes).await?))
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
