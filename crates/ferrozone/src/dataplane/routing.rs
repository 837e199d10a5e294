//! The routing side of `serve`: IP forwarding on, and the `inet ferrozone` nftables table
//! (forwarding filter, NAT) rendered from the settings and kept by a [`Keeper`].

use std::future::Future;
use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use ferrozone_domain::Domain;
use ferrozone_wg::nft::{Egress, IfName, Keeper, Nft, Table, Verdict};
use ferrozone_wg::routing::{egress_interface, Sysctl};

use crate::config::Config;

/// Turns forwarding on for the tunnel's families and applies the table once, so a gateway
/// that cannot route stops `serve` with the reason instead of silently dropping traffic.
/// Returns the keeper for the timed passes.
pub async fn start(config: &Config, domain: &Domain) -> anyhow::Result<Keeper> {
    let pools = &domain.settings().pools;
    Sysctl::default().enable_forwarding(pools.v4.is_some(), pools.v6.is_some())?;
    let table = Table {
        tunnel_networks: [&pools.v4, &pools.v6].into_iter().flatten().map(|pool| pool.network()).collect(),
        masquerade_on: masquerade_on(config)?,
        egress: Egress {
            wireguard: IfName::parse(&config.wireguard_interface).context("FERROZONE_WIREGUARD_INTERFACE")?,
            rules: Vec::new(),
            default: Verdict::Accept,
        },
    };
    let egress = table.masquerade_on.as_ref().map_or("none".to_owned(), ToString::to_string);
    let mut keeper = Keeper::new(Nft::program(&config.nft), table);
    keeper.reconcile_once().await.context("applying the nftables table inet ferrozone")?;
    tracing::info!(masquerade_on = %egress, "routing: forwarding on, nftables table inet ferrozone applied");
    Ok(keeper)
}

/// The interface to masquerade on: none when masquerading is off, and none (with a warning)
/// when no interface is configured and there is no default route: the host routes nowhere.
fn masquerade_on(config: &Config) -> anyhow::Result<Option<IfName>> {
    if !config.masquerade {
        return Ok(None);
    }
    match egress_interface(config.egress_interface.as_deref(), Path::new("/proc/net/route")) {
        Ok(name) => Ok(Some(IfName::parse(&name).with_context(|| format!("the default route's interface `{name}`"))?)),
        Err(e) => {
            tracing::warn!(reason = format!("{e:#}"), "nothing is masqueraded");
            Ok(None)
        }
    }
}

/// Keeps the table until `stopping`, then removes it if `remove` (the setting).
pub async fn keep(
    mut keeper: Keeper,
    interval: Duration,
    stopping: impl Future<Output = ()>,
    remove: bool,
) -> anyhow::Result<()> {
    tokio::select! {
        () = keeper.run(interval) => {}
        () = stopping => {}
    }
    if remove {
        keeper.remove().await.context("removing the nftables table inet ferrozone")?;
        tracing::info!("nftables table inet ferrozone removed");
    }
    Ok(())
}
