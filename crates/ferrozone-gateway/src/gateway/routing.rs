//! The routing side of the gateway: IP forwarding on, and the `inet ferrozone` nftables table
//! (forwarding filter with the egress rules, NAT) built from the settings and the database
//! and kept by a [`Keeper`].

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::nft::{IfName, Keeper, Nft, Table, Verdict};
use crate::routing::{egress_interface, Sysctl};
use anyhow::Context;
use ipnet::IpNet;
use tokio::sync::{watch, Notify};

use super::egress::{egress, egress_with, Skipped, UserSources};
use super::Options;
use crate::PolicySource;

/// The table's state, for `/healthz`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RoutingStatus {
    /// The rules in the table the last successful pass found or applied.
    pub rules: usize,
    /// When a pass last wrote the table.
    pub last_apply: Option<SystemTime>,
    /// Whether the latest pass failed (the database could not be read or `nft` refused).
    pub last_pass_failed: bool,
    /// What the table does with tunnel traffic no rule matches.
    pub default_action: Verdict,
}

/// The table as the settings and the database say, and the keeper holding it.
pub struct Routing {
    keeper: Keeper,
    policy: Arc<dyn PolicySource>,
    /// The desired table; each pass reads its egress rules afresh.
    table: Table,
    status: watch::Sender<RoutingStatus>,
    /// The stored rules the last read left out.
    skipped: Vec<Skipped>,
    /// The sources of the last read of the whole policy, for the passes that read the rules
    /// alone; `None` until one succeeds.
    sources: Option<UserSources>,
    /// Where the default route is read from when the egress interface follows it (masquerade
    /// on, `FERROZONE_EGRESS_INTERFACE` unset); `None` when it does not.
    default_route: Option<PathBuf>,
}

/// Turns forwarding on for the tunnel's families and applies the table once, rules
/// included, so a gateway that cannot route stops `serve` with the reason instead of
/// silently dropping traffic (or letting through what a rule drops).
pub async fn start(options: &Options, addresses: &[IpNet], policy: Arc<dyn PolicySource>) -> anyhow::Result<Routing> {
    let (v4, v6) = (addresses.iter().any(|a| a.addr().is_ipv4()), addresses.iter().any(|a| a.addr().is_ipv6()));
    Sysctl::default().enable_forwarding(v4, v6)?;
    let wireguard = IfName::parse(&options.interface).context("the WireGuard interface's name")?;
    let table = Table {
        tunnel_networks: addresses.iter().map(IpNet::trunc).collect(),
        masquerade_on: masquerade_on(options)?,
        egress: egress(&Default::default(), wireguard).0,
        filter_host: options.host_filter,
    };
    let masquerade = table.masquerade_on.as_ref().map_or("none".to_owned(), ToString::to_string);
    let mut routing = Routing::open(Nft::program(&options.nft), policy, table).await?;
    if options.masquerade && options.egress_interface.is_none() {
        routing.follow_default_route(PathBuf::from(PROC_NET_ROUTE));
    }
    let rules = routing.status.borrow().rules;
    let host_filter = options.host_filter;
    tracing::info!(masquerade_on = %masquerade, rules, host_filter, "routing: forwarding on, nftables table inet ferrozone applied");
    Ok(routing)
}

impl Routing {
    /// Applies `table` with the rules read from `policy` (its own rules are replaced).
    pub async fn open(nft: Nft, policy: Arc<dyn PolicySource>, table: Table) -> anyhow::Result<Self> {
        let keeper = Keeper::new(nft, table.clone());
        let (status, _) = watch::channel(RoutingStatus::default());
        let mut routing =
            Routing { keeper, policy, table, status, skipped: Vec::new(), sources: None, default_route: None };
        routing.pass(Pass::Repair).await.context("applying the nftables table inet ferrozone")?;
        Ok(routing)
    }

    /// Masquerades on the interface of the default route read from `routes` (a file in the
    /// format of `/proc/net/route`), read again at each repair pass: a gateway whose
    /// default route moves (another uplink, a DHCP change) keeps its NAT without restart.
    pub fn follow_default_route(&mut self, routes: PathBuf) {
        self.default_route = Some(routes);
    }

    /// The table's state as passes leave it.
    pub fn status(&self) -> watch::Receiver<RoutingStatus> {
        self.status.subscribe()
    }

    /// One pass: reads the rules (`pass` says what), and applies the table when they
    /// changed, or when repairing and the table is not as last applied (changed behind
    /// Ferrozone's back). A failed read keeps the table as it was (still repaired): the rules
    /// it holds are the last ones known. After a failed pass the next one always repairs.
    async fn pass(&mut self, pass: Pass) -> anyhow::Result<()> {
        let pass = if self.status.borrow().last_pass_failed { Pass::Repair } else { pass };
        let result = self.apply_current(pass).await;
        self.status.send_modify(|status| status.last_pass_failed = result.is_err());
        result
    }

    /// The rules as the table holds them. [`Pass::Rules`] reads the rules and memberships
    /// alone and takes the sources of the last whole read, unless the source cannot read
    /// them apart or they name a user that read did not cover: then, as the other passes,
    /// it reads the whole policy (docs/design/groups.md, "Membership changes").
    async fn read(&mut self, pass: Pass) -> anyhow::Result<(crate::nft::Egress, Vec<Skipped>)> {
        let wireguard = self.table.egress.wireguard.clone();
        if let (Pass::Rules, Some(sources)) = (pass, &self.sources) {
            if let Some(rules) = self.policy.egress_rules().await.context("reading the egress rules")? {
                if let Some(egress) = egress_with(&rules, sources, wireguard.clone()) {
                    return Ok(egress);
                }
                tracing::debug!("the rules name a user whose devices were not read: reading the whole policy");
            }
        }
        let policy = self.policy.egress_policy().await.context("reading the egress rules")?;
        let sources = UserSources::of(&policy);
        let egress = egress(&policy, wireguard);
        self.sources = Some(sources);
        Ok(egress)
    }

    /// Warns of each rule left out, once while it stays left out (passes are frequent).
    fn warn_of(&mut self, skipped: Vec<Skipped>) {
        for rule in skipped.iter().filter(|rule| !self.skipped.contains(rule)) {
            tracing::warn!(rule.id = %rule.id, problem = rule.problem, "a stored rule the table cannot hold is left out");
        }
        self.skipped = skipped;
    }

    async fn apply_current(&mut self, pass: Pass) -> anyhow::Result<()> {
        let repair = pass == Pass::Repair;
        let (read, failed) = match self.read(pass).await {
            Ok(read) => (Some(read), Ok(())),
            Err(e) => (None, Err(e)),
        };
        let mut changed = repair && self.egress_interface_moved();
        if let Some((egress, skipped)) = read {
            self.warn_of(skipped);
            if egress != self.table.egress {
                tracing::debug!(rules = egress.rules.len(), "the egress rules changed: applying the table");
                self.table.egress = egress;
                self.keeper.set_table(self.table.clone());
                changed = true;
            }
        }
        // A change that left the rules as they were (most commits on SQLite, statistics
        // among them) costs one read of the database, not a read of the table.
        if !(changed || repair) {
            return failed;
        }
        let applied = self.keeper.reconcile_once().await?;
        let (rules, default_action) = (self.table.egress.rules.len(), self.table.egress.default);
        metrics::gauge!(crate::metrics::RULES_APPLIED).set(rules as f64);
        self.status.send_modify(|status| {
            status.rules = rules;
            status.default_action = default_action;
            if applied {
                status.last_apply = Some(SystemTime::now());
            }
        });
        failed
    }
}

impl Routing {
    /// Reads the default route again (when following it) and takes its interface if it
    /// moved. No default route, or a name `nft` could not take, keeps the last interface:
    /// a route that is briefly gone should not turn NAT off.
    fn egress_interface_moved(&mut self) -> bool {
        let Some(routes) = &self.default_route else { return false };
        let now = match egress_interface(None, routes).and_then(|name| Ok(IfName::parse(&name)?)) {
            Ok(name) => name,
            Err(e) => {
                tracing::debug!(reason = format!("{e:#}"), "no default route now: masquerading as before");
                return false;
            }
        };
        if self.table.masquerade_on.as_ref() == Some(&now) {
            return false;
        }
        tracing::info!(masquerade_on = %now, "the default route moved: masquerading on its interface");
        self.table.masquerade_on = Some(now);
        self.keeper.set_table(self.table.clone());
        true
    }
}

/// What woke a pass, and so what it reads and checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// A change of the rules or memberships alone: the rules are read without the sources.
    Rules,
    /// Any other change: the whole policy is read.
    Changes,
    /// The timer, or a start: the whole policy is read and the table checked for drift.
    Repair,
}

/// Where Linux shows the IPv4 routing table.
const PROC_NET_ROUTE: &str = "/proc/net/route";

/// The interface to masquerade on: none when masquerading is off, and none (with a warning)
/// when no interface is configured and there is no default route: the host routes nowhere.
fn masquerade_on(options: &Options) -> anyhow::Result<Option<IfName>> {
    if !options.masquerade {
        return Ok(None);
    }
    match egress_interface(options.egress_interface.as_deref(), Path::new(PROC_NET_ROUTE)) {
        Ok(name) => Ok(Some(IfName::parse(&name).with_context(|| format!("the default route's interface `{name}`"))?)),
        Err(e) => {
            tracing::warn!(reason = format!("{e:#}"), "nothing is masqueraded");
            Ok(None)
        }
    }
}

/// Keeps the table until `stopping`: a pass at each wake-up of `wakes` (a committed change
/// of the users' devices, `wakes.changes`, or of the rules and memberships alone,
/// `wakes.rules`, here or in another process) and every `interval` (repairing the table if
/// it was changed behind Ferrozone's back). Then removes the table if `remove` (the
/// setting).
pub async fn keep(
    mut routing: Routing,
    wakes: TableWakes,
    interval: Duration,
    stopping: impl Future<Output = ()>,
    remove: bool,
) -> anyhow::Result<()> {
    tokio::select! {
        () = passes(&mut routing, &wakes, interval) => {}
        () = stopping => {}
    }
    if remove {
        routing.keeper.remove().await.context("removing the nftables table inet ferrozone")?;
        tracing::info!("nftables table inet ferrozone removed");
    }
    Ok(())
}

/// The wake-ups of the table keeper.
#[derive(Debug, Clone, Default)]
pub struct TableWakes {
    /// Changes of what the rules' sources are built from (and of anything else).
    pub changes: Arc<Notify>,
    /// Changes of the rules or the memberships alone.
    pub rules: Arc<Notify>,
}

/// Passes forever: on each change, and a repairing one every `interval` however often
/// changes come. A failed pass is logged and retried at the next.
async fn passes(routing: &mut Routing, wakes: &TableWakes, interval: Duration) {
    let mut repairs = tokio::time::interval(interval);
    repairs.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    repairs.tick().await;
    loop {
        // A wake-up not taken stays stored for the next turn.
        let pass = tokio::select! {
            biased;
            _ = repairs.tick() => Pass::Repair,
            () = wakes.changes.notified() => Pass::Changes,
            () = wakes.rules.notified() => Pass::Rules,
        };
        if let Err(e) = routing.pass(pass).await {
            tracing::warn!(error = format!("{e:#}"), "keeping the nftables table inet ferrozone failed");
        }
    }
}

#[cfg(test)]
mod tests;
