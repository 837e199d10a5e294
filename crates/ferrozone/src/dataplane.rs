//! The gateway embedded in `ferrozone serve` ([`ferrozone_gateway::gateway`]): its options
//! from the configuration, its tasks under the supervisor, its health on `/healthz`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use ferrozone_domain::model::DataPlaneChanges;
use ferrozone_domain::Domain;
use ferrozone_gateway::gateway::{self, Backend, Gateway, Options, Task, Tasks, Wakes};
use ferrozone_gateway::nft::Verdict;
use ferrozone_http::{DataPlaneHealth, DataPlaneProbe, NoDataPlane, RoutingHealth};

use crate::config::{Config, WireguardBackend};
use crate::supervisor::Supervisor;

/// Gives the gateway's metrics their help texts.
pub fn describe_metrics() {
    ferrozone_gateway::metrics::describe();
}

/// Starts, under `tasks`, the watch of committed changes, the state that gateways on other
/// hosts poll, and the embedded gateway `config` describes; what `/healthz` reads of it.
pub async fn start(
    config: &Config,
    domain: Arc<Domain>,
    tasks: &mut Supervisor,
) -> anyhow::Result<Arc<dyn DataPlaneProbe>> {
    let wakes = Wakes::default();
    let remote = DataPlaneChanges::default();
    let mut woken = wakes.all();
    woken.push(remote.peers.clone());
    gateway::watch_domain(&domain, woken, vec![wakes.rules.clone(), remote.rules.clone()], tasks);
    let publisher = domain.clone();
    tasks.spawn(
        "gateway state",
        Box::pin(async move {
            publisher.publish_gateway_states(remote).await;
            anyhow::bail!("the gateway state publisher stopped")
        }),
    );
    let sources = gateway::embedded_sources(&domain)?;
    Ok(match gateway::start(&options(config), sources, wakes, tasks).await? {
        Some(gateway) => Arc::new(Probe(gateway)),
        None => Arc::new(NoDataPlane),
    })
}

/// The gateway's options: the configuration's data-plane settings.
pub fn options(config: &Config) -> Options {
    Options {
        backend: match config.wireguard_backend {
            WireguardBackend::None => Backend::None,
            WireguardBackend::Kernel => Backend::Kernel,
            WireguardBackend::Userspace => Backend::Userspace,
            WireguardBackend::Auto => Backend::Auto,
        },
        interface: config.wireguard_interface.clone(),
        listen_port: config.wireguard_port,
        wireguard_go: config.wireguard_go.clone(),
        stats_interval: Duration::from_secs(config.stats_interval),
        nft: config.nft.clone(),
        nft_remove_on_shutdown: config.nft_remove_on_shutdown,
        interface_remove_on_shutdown: config.wireguard_remove_on_shutdown,
        masquerade: config.masquerade,
        egress_interface: config.egress_interface.clone(),
        host_filter: config.host_filter,
        repair_interval: Duration::from_secs(config.repair_interval),
    }
}

impl Tasks for Supervisor {
    fn spawn(&mut self, name: &'static str, task: Task) {
        Supervisor::spawn(self, name, task);
    }

    fn spawn_draining(&mut self, name: &'static str, task: Task) {
        Supervisor::spawn_draining(self, name, task);
    }

    fn stopping(&self) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(Supervisor::stopping(self))
    }
}

/// The gateway's health as `/healthz` reports it.
struct Probe(Gateway);

impl DataPlaneProbe for Probe {
    fn health(&self) -> DataPlaneHealth {
        let health = self.0.health();
        let default_action = match health.routing.default_action {
            Verdict::Accept => "accept",
            Verdict::Drop => "drop",
        };
        DataPlaneHealth {
            backend: health.backend,
            last_reconcile: health.reconcile.last_success,
            last_reconcile_failed: health.reconcile.last_failed,
            peers_refused: health.reconcile.refused,
            routing: RoutingHealth::Applied {
                rules: health.routing.rules,
                default_action,
                last_apply: health.routing.last_apply,
                last_pass_failed: health.routing.last_pass_failed,
            },
        }
    }
}
