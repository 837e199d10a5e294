//! Server settings the rules depend on (docs/api.md section 6). Parsed and checked by
//! the binary's configuration; the domain only reads them.

use crate::configuration::provider_lists::ProviderLists;
use crate::configuration::{Fixed, Values};
use crate::ipam::Pools;

/// What a device gets for each `use_default_*` setting that is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientDefaults {
    pub allowed_ips: Vec<String>,
    pub dns: Vec<String>,
    pub endpoint: String,
    /// `None`: no `MTU` line.
    pub mtu: Option<i32>,
    /// `None`: no `PersistentKeepalive` line.
    pub persistent_keepalive: Option<i32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub pools: Pools,
    pub max_devices_per_user: u32,
    /// Lifetime of a new API token when none is asked for, in days.
    pub token_days: u32,
    /// Longest lifetime an API token may be given, in days.
    pub token_max_days: u32,
    /// Lifetime of a browser session from its sign-in, in hours.
    pub session_hours: u32,
    /// Provider sign-ins one client address may start per [`crate::service::providers::FLOW_SECS`].
    pub sign_in_flows_per_address: u32,
    /// Bounds on password hashing and sign-in attempts.
    pub passwords: PasswordLimits,
    /// The configuration keys' values from the environment, or their built-in defaults
    /// where it sets nothing; stored values replace these unless `fixed` names the key.
    pub configuration: Values,
    /// The configuration keys the environment sets.
    pub fixed: Fixed,
    /// The provider lists the environment sets (empty where it sets none): in effect
    /// while nothing is stored, and always where `fixed` names the list.
    pub providers: ProviderLists,
    /// Deliver webhooks to loopback, link-local and private addresses too
    /// (`FERROZONE_WEBHOOK_ALLOW_PRIVATE`; see [`crate::webhook::address`]).
    pub webhook_allow_private: bool,
    /// An SMTP server is configured (`FERROZONE_SMTP_HOST`): invitations and magic links
    /// may be emailed.
    pub email_enabled: bool,
}

/// How much password work the server takes on (docs/operations.md, "Throttling").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PasswordLimits {
    /// Password hashes or verifications running at once (each holds 19 MiB).
    pub hash_concurrency: usize,
    /// Password operations that may wait for a turn; past it they are refused (503).
    pub hash_queue: usize,
    /// Of those waiting places, how many only the check of an account that has a password
    /// may take: a sign-in for an unknown account (or one without a password), checked
    /// against the dummy hash, is refused (503) once only these are left.
    pub hash_reserve: usize,
    /// Password sign-ins evaluated per account, across all addresses, in a burst.
    pub account_burst: u32,
    /// Seconds for the per-account budget to regain one attempt once spent.
    pub account_refill_secs: u32,
    /// Password sign-ins (and changes) evaluated per client network, across all accounts,
    /// in a burst; 0 turns this budget off.
    pub network_burst: u32,
    /// Seconds for a client network's budget to regain one attempt once spent.
    pub network_refill_secs: u32,
}

impl Default for PasswordLimits {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        Self {
            hash_concurrency: cores,
            hash_queue: 32,
            hash_reserve: 16,
            account_burst: 20,
            account_refill_secs: 30,
            network_burst: 30,
            network_refill_secs: 2,
        }
    }
}

impl Settings {
    /// The defaults of docs/api.md section 6 (the settings table of docs/operations.md), for
    /// tests and as a base for configuration.
    pub fn standard() -> Self {
        use crate::ipam::Pool;
        let pool = |net: &str, gw: &str| {
            Pool::new(
                net.parse().unwrap_or_else(|_| unreachable!("constant network")),
                gw.parse().unwrap_or_else(|_| unreachable!("constant gateway")),
            )
            .ok()
        };
        Self {
            pools: Pools { v4: pool("10.3.2.0/24", "10.3.2.1"), v6: pool("fd00::3:2:0/120", "fd00::3:2:1") },
            max_devices_per_user: 10,
            token_days: 30,
            token_max_days: 365,
            session_hours: 24,
            sign_in_flows_per_address: 30,
            passwords: PasswordLimits::default(),
            configuration: Values {
                local_auth_enabled: true,
                allow_unprivileged_device_management: true,
                allow_unprivileged_device_configuration: true,
                disable_vpn_on_oidc_error: true,
                vpn_session_duration: 0,
                default_client_persistent_keepalive: Some(25),
                default_client_mtu: Some(1280),
                default_client_endpoint: "localhost:51820".into(),
                default_client_dns: vec!["1.1.1.1".into(), "1.0.0.1".into()],
                default_client_allowed_ips: vec!["0.0.0.0/0".into(), "::/0".into()],
                require_totp: crate::configuration::RequireTotp::Off,
                egress_default_action: crate::egress::RuleAction::Accept,
            },
            fixed: Fixed::default(),
            providers: ProviderLists::default(),
            webhook_allow_private: false,
            email_enabled: false,
        }
    }
}
