//! Ferrozone's gateway: the data plane that enforces what the API says, the WireGuard
//! interface, the nftables table (forwarding, NAT, egress rules) and the statistics, run as
//! one piece by [`gateway`].
//!
//! The database says which peers should exist ([`PeerSource`]); an interface backend
//! ([`WireGuard`]) says which do. The [`reconciler`] compares the two with a pure
//! function ([`diff()`]) and applies only the difference, in one batch; the
//! [`stats`] loop reads handshakes and byte counters back.
//!
//! [`domain::DomainPeers`] is the domain as that source, for the server and the benchmark.
//!
//! Backends: [`userspace`] (a supervised `wireguard-go`, driven over its UAPI socket),
//! [`kernel`] (the Linux module over netlink) and [`memory`] (for tests and API-only
//! replicas, where nothing is enforced).

pub mod diff;
pub mod domain;
pub mod gateway;
pub mod kernel;
mod key;
pub mod link;
pub mod memory;
pub mod metrics;
pub mod nft;
mod peer;
pub mod reconciler;
pub mod remote;
pub mod routing;
pub mod stats;
pub mod uapi;
pub mod userspace;

use async_trait::async_trait;

pub use diff::{diff, Changes};
pub use key::Key;
pub use peer::{InterfaceConfig, ObservedPeer, Peer, PeerStats};

/// A WireGuard interface that peers can be read from and written to.
#[async_trait]
pub trait WireGuard: Send + Sync + 'static {
    /// `kernel`, `userspace` or `memory`: for logs.
    fn kind(&self) -> &'static str;
    /// The peers on the interface now, with their statistics.
    async fn peers(&self) -> anyhow::Result<Vec<ObservedPeer>>;
    /// Applies `changes` in one batch.
    async fn apply(&self, changes: &Changes) -> anyhow::Result<()>;
    /// Changes whenever the interface may have lost its peers behind the reconciler's
    /// back (the userspace process was restarted): what it last applied is then stale.
    fn generation(&self) -> u64 {
        0
    }
    /// The most peers the interface can hold, if it has a limit (wireguard-go: 65,536).
    fn max_peers(&self) -> Option<usize> {
        None
    }
    /// Removes the interface (a stop with `FERROZONE_WIREGUARD_REMOVE_ON_SHUTDOWN`); by
    /// default an interface outlives Ferrozone, so that a restart drops no tunnel.
    async fn remove(&self) -> anyhow::Result<()> {
        Ok(())
    }
}

/// Where the nftables table learns the egress rules and their sources.
#[async_trait]
pub trait PolicySource: Send + Sync + 'static {
    /// The rules, the addresses of the active devices of the users they name, and the
    /// default action.
    async fn egress_policy(&self) -> anyhow::Result<ferrozone_domain::egress::EgressPolicy>;
    /// The rules and the memberships alone, for a change of those alone; `None` when the
    /// source cannot read them apart (the caller reads the whole policy).
    async fn egress_rules(&self) -> anyhow::Result<Option<ferrozone_domain::egress::EgressRules>> {
        Ok(None)
    }
}

/// Where the reconciler learns which peers should exist, and where statistics go.
#[async_trait]
pub trait PeerSource: Send + Sync + 'static {
    /// Every peer that should be on the interface: devices of users who are not disabled.
    async fn desired_peers(&self) -> anyhow::Result<Vec<Peer>>;
    /// Stores the statistics of the peers whose statistics changed.
    async fn record_stats(&self, stats: &[(Key, PeerStats)]) -> anyhow::Result<()>;
}
