//! What the data plane's health is made of, as `/healthz` and the console report it, and
//! where a process reads it ([`DataPlaneProbe`]).

use std::time::SystemTime;

/// The WireGuard data plane as `/healthz` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataPlaneHealth {
    /// `kernel`, `userspace` or `none` (nothing is enforced).
    pub backend: &'static str,
    /// When the reconciler last brought the interface in line with the database.
    pub last_reconcile: Option<SystemTime>,
    /// Whether the reconciler's latest pass failed.
    pub last_reconcile_failed: bool,
    /// Peers the interface cannot take, over its backend's limit (wireguard-go: 65,536).
    pub peers_refused: usize,
    /// The nftables table (forwarding, NAT, egress rules).
    pub routing: RoutingHealth,
}

/// The `inet ferrozone` nftables table as `/healthz` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RoutingHealth {
    /// Nothing is applied (no WireGuard backend), and why.
    NotApplied { reason: &'static str },
    /// The table is kept.
    Applied {
        /// The egress rules it holds.
        rules: usize,
        /// What it does with tunnel traffic no rule matches: `accept` or `drop`.
        default_action: &'static str,
        /// When it was last written.
        last_apply: Option<SystemTime>,
        /// Whether the latest pass failed (the rules could not be read or `nft` refused):
        /// the table holds the last rules applied.
        last_pass_failed: bool,
    },
}

/// Why a process without a WireGuard backend applies no table.
const NO_BACKEND: &str = "the WireGuard backend is none: nothing is enforced";

/// Where `/healthz` reads the data plane's state.
pub trait DataPlaneProbe: Send + Sync + 'static {
    fn health(&self) -> DataPlaneHealth;
}

/// A process without a data plane (the API alone, and tests).
pub struct NoDataPlane;

impl DataPlaneProbe for NoDataPlane {
    fn health(&self) -> DataPlaneHealth {
        DataPlaneHealth {
            backend: "none",
            last_reconcile: None,
            last_reconcile_failed: false,
            peers_refused: 0,
            routing: RoutingHealth::NotApplied { reason: NO_BACKEND },
        }
    }
}
