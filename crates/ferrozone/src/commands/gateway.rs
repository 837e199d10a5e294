//! `ferrozone gateway`: the data plane of a control plane elsewhere (docs/design/gateways.md,
//! docs/operations.md "Gateways on other hosts"). It takes the data-plane settings `serve`
//! takes (backend, interface, port, NAT, host filter, intervals) and its own
//! ([`crate::config::gateway`]).

use std::time::Duration;

use ferrozone_gateway::remote;

use crate::config::Config;
use crate::supervisor::Supervisor;

/// How long the gateway's tasks get to finish when it stops (ending its session).
const GRACE: Duration = Duration::from_secs(10);

/// Runs the gateway until SIGTERM or SIGINT, or until the control plane refuses its
/// credential.
pub async fn run(config: &Config) -> anyhow::Result<()> {
    let remote = config.gateway.remote()?;
    let signal = super::serve::shutdown_signal()?;
    let mut tasks = Supervisor::default();
    crate::dataplane::describe_metrics();
    tracing::info!(control_plane = %remote.control_plane, state_dir = %remote.state_dir.display(), "starting the gateway");
    if remote::start(&crate::dataplane::options(config), &remote, &mut tasks).await?.is_none() {
        tracing::warn!("no WireGuard backend: this gateway follows its state but enforces nothing");
    }
    let outcome = tasks.run(signal, GRACE).await;
    tracing::info!("stopped");
    outcome
}
