//! The settings every subcommand shares (docs/api.md section 6).

use std::net::IpAddr;
use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
use ferrozone_domain::configuration::provider_lists::ProviderLists;
use ferrozone_domain::configuration::Values;
use ferrozone_domain::egress::RuleAction;
use ferrozone_domain::ipam::{Pool, Pools};
use ferrozone_domain::providers::Providers;
use ferrozone_domain::settings::{ClientDefaults, PasswordLimits};
use ferrozone_domain::validate::net::{allowed_ip, is_dns_server, is_endpoint};
use ferrozone_domain::Settings;
use ferrozone_gateway::nft::IfName;
use ipnet::IpNet;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WireguardBackend {
    Auto,
    Kernel,
    Userspace,
    None,
}

/// A Linux interface name that is also safe in an nftables rule (`IfName`): 1–15 letters,
/// digits, `-`, `_` or `.`.
fn interface_name(name: &str) -> Result<String, String> {
    IfName::parse(name).map(|name| name.as_str().to_owned()).map_err(|e| e.to_string())
}

/// What happens to tunnel traffic that no egress rule matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EgressDefaultAction {
    /// Allowed (Firezone's behaviour).
    Accept,
    /// Dropped: only what an accept rule allows gets through.
    Drop,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// Settings shared by every subcommand.
#[derive(Debug, Clone, Args)]
pub struct Config {
    /// TOML file with settings (keys are the variable names without `FERROZONE_`, lower case).
    #[arg(long, global = true, env = "FERROZONE_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The configuration keys given by a command-line flag, with the flag: filled by
    /// [`crate::cli::Cli::parse_args`], since only the parse knows where a value came from.
    #[arg(skip)]
    pub flags: Vec<(String, String)>,
    /// The settings as the console shows them, each with its source (secrets left out):
    /// filled by [`crate::cli::Cli::parse_args`] too.
    #[arg(skip)]
    pub report: Vec<ferrozone_http::ReportedSetting>,
    /// Address the HTTP API listens on.
    #[arg(long, global = true, env = "FERROZONE_LISTEN", default_value = "127.0.0.1:13000")]
    pub listen: String,
    /// Seconds `serve` waits, on SIGTERM or SIGINT, for requests in flight to finish
    /// before it closes the connections left and exits.
    #[arg(long, global = true, env = "FERROZONE_SHUTDOWN_TIMEOUT", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub shutdown_timeout: u64,
    /// Directory for the SQLite database and the generated secret key.
    #[arg(long, global = true, env = "FERROZONE_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
    /// `sqlite://PATH` or `postgres://USER:PASSWORD@HOST/DB` [default: sqlite://<data dir>/ferrozone.db]
    #[arg(long, global = true, env = "FERROZONE_DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// Largest number of database connections (PostgreSQL) or readers (SQLite).
    #[arg(long, global = true, env = "FERROZONE_DATABASE_MAX_CONNECTIONS", default_value_t = 10,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub database_max_connections: u32,
    /// SQLite durability: `full` (survives power loss) or `normal` (survives a process crash).
    #[arg(long, global = true, env = "FERROZONE_SQLITE_SYNCHRONOUS", default_value = "full")]
    pub sqlite_synchronous: ferrozone_store::Synchronous,
    /// Base64 of the 32-byte key that encrypts secrets at rest [default: generated into the data dir].
    #[arg(long, global = true, env = "FERROZONE_SECRET_KEY", hide_env_values = true)]
    pub secret_key: Option<String>,
    /// File holding the secret key.
    #[arg(long, global = true, env = "FERROZONE_SECRET_KEY_FILE", value_name = "FILE")]
    pub secret_key_file: Option<PathBuf>,
    /// Email of the admin created on a database that has none (alias DEFAULT_ADMIN_EMAIL).
    #[arg(long, global = true, env = "FERROZONE_ADMIN_EMAIL", default_value = "admin@localhost")]
    pub admin_email: String,
    /// Password of the admin created on a database that has none, so that it can sign in on
    /// the web at once (alias DEFAULT_ADMIN_PASSWORD). Prefer the variable or the file to
    /// the flag, which other users may see in the process list.
    #[arg(
        long,
        global = true,
        env = "FERROZONE_ADMIN_PASSWORD",
        hide_env_values = true,
        value_name = "PASSWORD",
        conflicts_with = "admin_password_file"
    )]
    pub admin_password: Option<String>,
    /// File whose first line is that password (a systemd credential, say).
    #[arg(long, global = true, env = "FERROZONE_ADMIN_PASSWORD_FILE", value_name = "FILE")]
    pub admin_password_file: Option<PathBuf>,
    /// URL users reach Ferrozone at (alias EXTERNAL_URL).
    #[arg(long, global = true, env = "FERROZONE_EXTERNAL_URL", default_value = "http://localhost:13000")]
    pub external_url: String,
    /// WireGuard listen port (alias WIREGUARD_PORT).
    #[arg(long, global = true, env = "FERROZONE_WIREGUARD_PORT", default_value_t = 51820)]
    pub wireguard_port: u16,
    /// Give devices IPv4 tunnel addresses (alias WIREGUARD_IPV4_ENABLED).
    #[arg(long, global = true, env = "FERROZONE_WIREGUARD_IPV4_ENABLED", default_value_t = true,
          action = clap::ArgAction::Set)]
    pub wireguard_ipv4_enabled: bool,
    /// IPv4 tunnel network (alias WIREGUARD_IPV4_NETWORK).
    #[arg(long, global = true, env = "FERROZONE_WIREGUARD_IPV4_NETWORK", default_value = "10.3.2.0/24")]
    pub wireguard_ipv4_network: String,
    /// Server's IPv4 tunnel address (alias WIREGUARD_IPV4_ADDRESS).
    #[arg(long, global = true, env = "FERROZONE_WIREGUARD_IPV4_ADDRESS", default_value = "10.3.2.1")]
    pub wireguard_ipv4_address: String,
    /// Give devices IPv6 tunnel addresses (alias WIREGUARD_IPV6_ENABLED).
    #[arg(long, global = true, env = "FERROZONE_WIREGUARD_IPV6_ENABLED", default_value_t = true,
          action = clap::ArgAction::Set)]
    pub wireguard_ipv6_enabled: bool,
    /// IPv6 tunnel network (alias WIREGUARD_IPV6_NETWORK).
    #[arg(long, global = true, env = "FERROZONE_WIREGUARD_IPV6_NETWORK", default_value = "fd00::3:2:0/120")]
    pub wireguard_ipv6_network: String,
    /// Server's IPv6 tunnel address (alias WIREGUARD_IPV6_ADDRESS).
    #[arg(long, global = true, env = "FERROZONE_WIREGUARD_IPV6_ADDRESS", default_value = "fd00::3:2:1")]
    pub wireguard_ipv6_address: String,
    /// Comma-separated AllowedIPs for devices using the default (alias DEFAULT_CLIENT_ALLOWED_IPS).
    #[arg(long, global = true, env = "FERROZONE_DEFAULT_CLIENT_ALLOWED_IPS", default_value = "0.0.0.0/0,::/0")]
    pub default_client_allowed_ips: String,
    /// Comma-separated DNS servers for devices using the default (alias DEFAULT_CLIENT_DNS).
    #[arg(long, global = true, env = "FERROZONE_DEFAULT_CLIENT_DNS", default_value = "1.1.1.1,1.0.0.1")]
    pub default_client_dns: String,
    /// MTU for devices using the default, 576–1500 (alias DEFAULT_CLIENT_MTU).
    #[arg(long, global = true, env = "FERROZONE_DEFAULT_CLIENT_MTU", default_value_t = 1280,
          value_parser = clap::value_parser!(i32).range(576..=1500))]
    pub default_client_mtu: i32,
    /// Keepalive seconds for devices using the default, 0–120 (alias DEFAULT_CLIENT_PERSISTENT_KEEPALIVE).
    #[arg(long, global = true, env = "FERROZONE_DEFAULT_CLIENT_PERSISTENT_KEEPALIVE", default_value_t = 25,
          value_parser = clap::value_parser!(i32).range(0..=120))]
    pub default_client_persistent_keepalive: i32,
    /// Endpoint for devices using the default [default: <external URL host>:<WireGuard port>].
    #[arg(long, global = true, env = "FERROZONE_DEFAULT_CLIENT_ENDPOINT")]
    pub default_client_endpoint: Option<String>,
    /// Most devices one user may have, 0–100000 (alias MAX_DEVICES_PER_USER).
    #[arg(long, global = true, env = "FERROZONE_MAX_DEVICES_PER_USER", default_value_t = 10,
          value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub max_devices_per_user: u32,
    /// Lifetime of a new API token, in days.
    #[arg(long, global = true, env = "FERROZONE_API_TOKEN_DAYS", default_value_t = 30,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub api_token_days: u32,
    /// Longest lifetime an API token may be given, in days.
    #[arg(long, global = true, env = "FERROZONE_API_TOKEN_MAX_DAYS", default_value_t = 365,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub api_token_max_days: u32,
    /// Lifetime of a browser session from its sign-in, in hours (1–8760).
    #[arg(long, global = true, env = "FERROZONE_SESSION_HOURS", default_value_t = 24,
          value_parser = clap::value_parser!(u32).range(1..=8760))]
    pub session_hours: u32,
    /// Provider sign-ins (SAML, OpenID Connect) one client address may start per 10 minutes
    /// (an IPv6 address counts by its /64); each stores a flow until it ends or expires.
    #[arg(long, global = true, env = "FERROZONE_SIGN_IN_FLOWS_PER_ADDRESS", default_value_t = 30,
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub sign_in_flows_per_address: u32,
    /// Password hashes and verifications run at once (each holds 19 MiB of memory)
    /// [default: the number of CPU cores].
    #[arg(long, global = true, env = "FERROZONE_PASSWORD_HASH_CONCURRENCY",
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub password_hash_concurrency: Option<u32>,
    /// Password sign-ins and changes that may wait for a turn; past it they are refused (503).
    #[arg(long, global = true, env = "FERROZONE_PASSWORD_HASH_QUEUE", default_value_t = 32,
          value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub password_hash_queue: u32,
    /// Of the waiting places, how many only the check of an account that has a password
    /// may take (at most FERROZONE_PASSWORD_HASH_QUEUE): unknown emails cannot fill them.
    #[arg(long, global = true, env = "FERROZONE_PASSWORD_HASH_RESERVE", default_value_t = 16,
          value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub password_hash_reserve: u32,
    /// Password sign-in attempts per account, across all client addresses, before it slows
    /// down to one per FERROZONE_SIGN_IN_ACCOUNT_REFILL_SECS.
    #[arg(long, global = true, env = "FERROZONE_SIGN_IN_ACCOUNT_BURST", default_value_t = 20,
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub sign_in_account_burst: u32,
    /// Seconds for an account's sign-in budget to regain one attempt.
    #[arg(long, global = true, env = "FERROZONE_SIGN_IN_ACCOUNT_REFILL_SECS", default_value_t = 30,
          value_parser = clap::value_parser!(u32).range(1..=86_400))]
    pub sign_in_account_refill_secs: u32,
    /// Password sign-in attempts per client network (an IPv4 address, an IPv6 /64), across
    /// all accounts, before it slows down to one per FERROZONE_SIGN_IN_NETWORK_REFILL_SECS;
    /// 0 turns this budget off.
    #[arg(long, global = true, env = "FERROZONE_SIGN_IN_NETWORK_BURST", default_value_t = 30,
          value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub sign_in_network_burst: u32,
    /// Seconds for a client network's sign-in budget to regain one attempt.
    #[arg(long, global = true, env = "FERROZONE_SIGN_IN_NETWORK_REFILL_SECS", default_value_t = 2,
          value_parser = clap::value_parser!(u32).range(1..=86_400))]
    pub sign_in_network_refill_secs: u32,
    /// OpenID Connect providers: a JSON list of {id, label, client_id, client_secret,
    /// discovery_document_uri, scope, redirect_uri, auto_create_users, allow_admins,
    /// require_verified_email, consent_prompt} (docs/operations.md).
    #[arg(
        long,
        global = true,
        env = "FERROZONE_OPENID_CONNECT_PROVIDERS",
        hide_env_values = true,
        value_name = "JSON"
    )]
    pub openid_connect_providers: Option<String>,
    /// SAML identity providers: a JSON list of {id, label, metadata, sign_requests,
    /// signed_assertion_in_resp, signed_envelopes_in_resp, auto_create_users, allow_admins}
    /// (docs/operations.md).
    #[arg(long, global = true, env = "FERROZONE_SAML_IDENTITY_PROVIDERS", value_name = "JSON")]
    pub saml_identity_providers: Option<String>,
    /// The SAML service provider's entity id, the Audience IdPs assert (alias SAML_ENTITY_ID).
    #[arg(long, global = true, env = "FERROZONE_SAML_ENTITY_ID", default_value = ferrozone_http::DEFAULT_SAML_ENTITY_ID)]
    pub saml_entity_id: String,
    /// PEM private key that signs SAML AuthnRequests of providers with `sign_requests`
    /// (alias SAML_KEYFILE_PATH).
    #[arg(long, global = true, env = "FERROZONE_SAML_KEYFILE", value_name = "FILE")]
    pub saml_keyfile: Option<PathBuf>,
    /// PEM certificate of that key, published in the SP metadata (alias SAML_CERTFILE_PATH).
    #[arg(long, global = true, env = "FERROZONE_SAML_CERTFILE", value_name = "FILE")]
    pub saml_certfile: Option<PathBuf>,
    /// SAML responses verified at once, 1–256 (as many more may wait; beyond that, 503)
    /// [default: the number of CPU cores].
    #[arg(long, global = true, env = "FERROZONE_SAML_VERIFY_CONCURRENCY",
          value_parser = clap::value_parser!(u32).range(1..=256))]
    pub saml_verify_concurrency: Option<u32>,
    /// Largest request body the SAML assertion consumer reads, in bytes (16384–1048576).
    #[arg(long, global = true, env = "FERROZONE_SAML_CONSUMER_BODY_LIMIT",
          default_value_t = ferrozone_http::DEFAULT_SAML_CONSUMER_BODY_LIMIT as u32,
          value_parser = clap::value_parser!(u32).range(16_384..=1_048_576))]
    pub saml_consumer_body_limit: u32,
    /// Seconds between two passes of the OpenID Connect refresh job (60–604800).
    #[arg(long, global = true, env = "FERROZONE_OIDC_REFRESH_INTERVAL", default_value_t = 3600,
          value_parser = clap::value_parser!(u64).range(60..=604_800))]
    pub oidc_refresh_interval: u64,
    /// Disable a user whose OpenID Connect refresh token the provider refuses for good
    /// (`invalid_grant`), which removes its devices from the interface (alias
    /// DISABLE_VPN_ON_OIDC_ERROR).
    #[arg(long, global = true, env = "FERROZONE_DISABLE_VPN_ON_OIDC_ERROR", default_value_t = true,
          action = clap::ArgAction::Set)]
    pub disable_vpn_on_oidc_error: bool,
    /// Allow password sign-in (alias LOCAL_AUTH_ENABLED) [default: the stored value, else true].
    #[arg(long, global = true, env = "FERROZONE_LOCAL_AUTH_ENABLED", action = clap::ArgAction::Set)]
    pub local_auth_enabled: Option<bool>,
    /// Let unprivileged users add and delete their own devices (alias
    /// ALLOW_UNPRIVILEGED_DEVICE_MANAGEMENT) [default: the stored value, else true].
    #[arg(long, global = true, env = "FERROZONE_ALLOW_UNPRIVILEGED_DEVICE_MANAGEMENT", action = clap::ArgAction::Set)]
    pub allow_unprivileged_device_management: Option<bool>,
    /// Let unprivileged users set their devices' tunnel settings (alias
    /// ALLOW_UNPRIVILEGED_DEVICE_CONFIGURATION) [default: the stored value, else true].
    #[arg(long, global = true, env = "FERROZONE_ALLOW_UNPRIVILEGED_DEVICE_CONFIGURATION",
          action = clap::ArgAction::Set)]
    pub allow_unprivileged_device_configuration: Option<bool>,
    /// Seconds a VPN session lasts after sign-in, 0 (never expires) to 2147483647 (alias
    /// VPN_SESSION_DURATION) [default: the stored value, else 0].
    #[arg(long, global = true, env = "FERROZONE_VPN_SESSION_DURATION",
          value_parser = clap::value_parser!(i64).range(0..=2_147_483_647))]
    pub vpn_session_duration: Option<i64>,
    /// WireGuard backend: `auto` (kernel, else userspace, else none), `kernel`, `userspace`
    /// (a supervised wireguard-go) or `none` (API only).
    #[arg(long, global = true, env = "FERROZONE_WIREGUARD_BACKEND", value_enum, default_value = "auto")]
    pub wireguard_backend: WireguardBackend,
    /// Name of the WireGuard interface Ferrozone creates and owns.
    #[arg(long, global = true, env = "FERROZONE_WIREGUARD_INTERFACE", default_value = "wg-ferrozone",
          value_parser = interface_name)]
    pub wireguard_interface: String,
    /// The wireguard-go program of the userspace backend.
    #[arg(long, global = true, env = "FERROZONE_WIREGUARD_GO", default_value = "wireguard-go")]
    pub wireguard_go: String,
    /// Seconds between two reads of the peers' statistics.
    #[arg(long, global = true, env = "FERROZONE_STATS_INTERVAL", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub stats_interval: u64,
    /// Seconds between two repair passes of the data plane, which bring the WireGuard
    /// interface and the nftables table back in line when something else changed them.
    #[arg(long, global = true, env = "FERROZONE_REPAIR_INTERVAL", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub repair_interval: u64,
    /// Interface by which tunnel traffic leaves, masqueraded; default: the IPv4 default
    /// route's (aliases GATEWAY_EGRESS_INTERFACE, EGRESS_INTERFACE).
    #[arg(long, global = true, env = "FERROZONE_EGRESS_INTERFACE", value_parser = interface_name)]
    pub egress_interface: Option<String>,
    /// Masquerade tunnel traffic leaving by the egress interface; `false` for routed
    /// deployments, where the network routes the tunnel addresses back to the gateway.
    #[arg(long, global = true, env = "FERROZONE_MASQUERADE", default_value_t = true,
          action = clap::ArgAction::Set)]
    pub masquerade: bool,
    /// The nftables program (aliases GATEWAY_NFT_PATH, NFT_PATH).
    #[arg(long, global = true, env = "FERROZONE_NFT", default_value = "nft")]
    pub nft: String,
    /// Delete the nftables table `inet ferrozone` when `serve` stops cleanly (by default it
    /// stays, so traffic keeps its NAT across a restart).
    #[arg(long, global = true, env = "FERROZONE_NFT_REMOVE_ON_SHUTDOWN", default_value_t = false,
          action = clap::ArgAction::Set)]
    pub nft_remove_on_shutdown: bool,
    /// Delete the WireGuard interface (and stop its wireguard-go) when `serve` or `ferrozone
    /// gateway` stops cleanly (by default it stays with its peers, so a restart drops no
    /// tunnel and the next start adopts it).
    #[arg(long, global = true, env = "FERROZONE_WIREGUARD_REMOVE_ON_SHUTDOWN", default_value_t = false,
          action = clap::ArgAction::Set)]
    pub wireguard_remove_on_shutdown: bool,
    /// What happens to tunnel traffic that no egress rule (`/v0/rules`) matches: `accept`
    /// (Firezone's behaviour) or `drop` (only what an accept rule allows leaves the tunnel or
    /// reaches the gateway itself, see FERROZONE_HOST_FILTER).
    #[arg(long, global = true, env = "FERROZONE_EGRESS_DEFAULT_ACTION", value_enum, default_value = "accept")]
    pub egress_default_action: EgressDefaultAction,
    /// Filter tunnel traffic to the gateway itself (its tunnel and LAN addresses) with the
    /// egress rules and their default action, as traffic it forwards; replies to the gateway's
    /// own connections, ICMP errors and DNS to its tunnel address stay accepted. `false`
    /// leaves traffic to the gateway unfiltered.
    #[arg(long, global = true, env = "FERROZONE_HOST_FILTER", default_value_t = true,
          action = clap::ArgAction::Set)]
    pub host_filter: bool,
    /// Deliver webhooks to loopback, link-local and private addresses too (by default only
    /// public addresses are called, checked on each address a receiver's name resolves to).
    #[arg(long, global = true, env = "FERROZONE_WEBHOOK_ALLOW_PRIVATE", default_value_t = false,
          action = clap::ArgAction::Set)]
    pub webhook_allow_private: bool,
    /// Log format.
    #[arg(long, global = true, env = "FERROZONE_LOG_FORMAT", value_enum, default_value = "text")]
    pub log_format: LogFormat,
    /// The HTTP server's deadlines and connection caps.
    #[command(flatten)]
    pub http: super::http::HttpLimits,
    /// Automatic certificates over ACME.
    #[command(flatten)]
    pub acme: super::acme::AcmeSettings,
    /// HTTPS: certificate files, the redirect listener, Strict-Transport-Security.
    #[command(flatten)]
    pub tls: super::tls::Tls,
    /// Prometheus metrics: the scraper's token, the metrics listener.
    #[command(flatten)]
    pub monitoring: super::monitoring::Monitoring,
    /// The audit log's retention.
    #[command(flatten)]
    pub audit: super::audit::AuditSettings,
    /// Email: the SMTP server.
    #[command(flatten)]
    pub smtp: super::smtp::SmtpArgs,
    /// `ferrozone gateway`'s own: its control plane and state directory.
    #[command(flatten)]
    pub gateway: super::gateway::GatewaySettings,
}

impl Config {
    /// The database URL, defaulting to a SQLite file in the data directory.
    pub fn database_url(&self) -> String {
        match &self.database_url {
            Some(url) if !url.trim().is_empty() => url.trim().to_owned(),
            _ => format!("sqlite://{}", self.data_dir.join("ferrozone.db").display()),
        }
    }

    /// The rules' settings, checked; every error names the setting.
    pub fn settings(&self) -> anyhow::Result<Settings> {
        let pools = Pools {
            v4: self
                .wireguard_ipv4_enabled
                .then(|| pool("WIREGUARD_IPV4", &self.wireguard_ipv4_network, &self.wireguard_ipv4_address, true))
                .transpose()?,
            v6: self
                .wireguard_ipv6_enabled
                .then(|| pool("WIREGUARD_IPV6", &self.wireguard_ipv6_network, &self.wireguard_ipv6_address, false))
                .transpose()?,
        };
        let allowed_ips = list(&self.default_client_allowed_ips);
        if let Some(bad) = allowed_ips.iter().find(|s| allowed_ip(s).is_none()) {
            bail!("FERROZONE_DEFAULT_CLIENT_ALLOWED_IPS: `{bad}` is not an IP address or CIDR range");
        }
        let dns = list(&self.default_client_dns);
        if let Some(bad) = dns.iter().find(|s| !is_dns_server(s)) {
            bail!("FERROZONE_DEFAULT_CLIENT_DNS: `{bad}` is not an IP address or host name");
        }
        let endpoint = match &self.default_client_endpoint {
            Some(e) if !e.trim().is_empty() => e.trim().to_owned(),
            _ => format!("{}:{}", self.external_host()?, self.wireguard_port),
        };
        if !is_endpoint(&endpoint) {
            bail!("FERROZONE_DEFAULT_CLIENT_ENDPOINT: `{endpoint}` is not a host or IP with an optional port");
        }
        if self.api_token_days > self.api_token_max_days {
            bail!(
                "FERROZONE_API_TOKEN_DAYS ({}) exceeds FERROZONE_API_TOKEN_MAX_DAYS ({})",
                self.api_token_days,
                self.api_token_max_days
            );
        }
        let defaults = ClientDefaults {
            allowed_ips,
            dns,
            endpoint,
            mtu: Some(self.default_client_mtu),
            persistent_keepalive: Some(self.default_client_persistent_keepalive),
        };
        Ok(Settings {
            configuration: self.configuration(&defaults),
            fixed: super::fixed::fixed(|name| std::env::var(name).ok()).with_flags(self.flags.clone()),
            providers: ProviderLists::from_texts(
                self.openid_connect_providers.as_deref(),
                "FERROZONE_OPENID_CONNECT_PROVIDERS",
                self.saml_identity_providers.as_deref(),
                "FERROZONE_SAML_IDENTITY_PROVIDERS",
            )
            .map_err(anyhow::Error::msg)?,
            pools,
            max_devices_per_user: self.max_devices_per_user,
            token_days: self.api_token_days,
            token_max_days: self.api_token_max_days,
            session_hours: self.session_hours,
            sign_in_flows_per_address: self.sign_in_flows_per_address,
            passwords: self.password_limits(),
            webhook_allow_private: self.webhook_allow_private,
            email_enabled: self.smtp.smtp_host.as_deref().is_some_and(|host| !host.trim().is_empty()),
        })
    }

    /// The configuration keys' environment values, or their defaults.
    fn configuration(&self, defaults: &ClientDefaults) -> Values {
        let standard = Settings::standard().configuration;
        Values {
            local_auth_enabled: self.local_auth_enabled.unwrap_or(standard.local_auth_enabled),
            allow_unprivileged_device_management: self
                .allow_unprivileged_device_management
                .unwrap_or(standard.allow_unprivileged_device_management),
            allow_unprivileged_device_configuration: self
                .allow_unprivileged_device_configuration
                .unwrap_or(standard.allow_unprivileged_device_configuration),
            vpn_session_duration: self.vpn_session_duration.unwrap_or(standard.vpn_session_duration),
            disable_vpn_on_oidc_error: self.disable_vpn_on_oidc_error,
            default_client_persistent_keepalive: defaults.persistent_keepalive,
            default_client_mtu: defaults.mtu,
            default_client_endpoint: defaults.endpoint.clone(),
            default_client_dns: defaults.dns.clone(),
            default_client_allowed_ips: defaults.allowed_ips.clone(),
            require_totp: standard.require_totp,
            egress_default_action: match self.egress_default_action {
                EgressDefaultAction::Accept => RuleAction::Accept,
                EgressDefaultAction::Drop => RuleAction::Drop,
            },
        }
    }

    fn password_limits(&self) -> PasswordLimits {
        let defaults = PasswordLimits::default();
        PasswordLimits {
            hash_concurrency: self.password_hash_concurrency.map_or(defaults.hash_concurrency, |n| n as usize),
            hash_queue: self.password_hash_queue as usize,
            hash_reserve: self.password_hash_reserve.min(self.password_hash_queue) as usize,
            account_burst: self.sign_in_account_burst,
            account_refill_secs: self.sign_in_account_refill_secs,
            network_burst: self.sign_in_network_burst,
            network_refill_secs: self.sign_in_network_refill_secs,
        }
    }

    /// The identity providers, checked; every error names the variable, the provider and
    /// the field.
    pub fn providers(&self) -> anyhow::Result<Providers> {
        Providers::parse(
            self.openid_connect_providers.as_deref(),
            "FERROZONE_OPENID_CONNECT_PROVIDERS",
            self.saml_identity_providers.as_deref(),
            "FERROZONE_SAML_IDENTITY_PROVIDERS",
        )
        .map_err(anyhow::Error::msg)
    }

    /// The SAML service provider for `providers`: the key pair read, each IdP's metadata
    /// checked. Every error names the setting (and the provider and field).
    pub fn saml(&self, providers: &Providers) -> anyhow::Result<ferrozone_http::SamlSp> {
        let read = |path: &PathBuf, name: &str| {
            std::fs::read_to_string(path).with_context(|| format!("{name}: reading {}", path.display()))
        };
        let key_pair = match (&self.saml_keyfile, &self.saml_certfile) {
            (Some(key), Some(certificate)) => {
                Some((read(key, "FERROZONE_SAML_KEYFILE")?, read(certificate, "FERROZONE_SAML_CERTFILE")?))
            }
            (None, None) => None,
            _ => bail!("FERROZONE_SAML_KEYFILE and FERROZONE_SAML_CERTFILE must be set together"),
        };
        let key_pair = key_pair.as_ref().map(|(key, certificate)| (key.as_str(), certificate.as_str()));
        let sp =
            ferrozone_http::SamlSp::new(&self.saml_entity_id, key_pair, &providers.saml).map_err(anyhow::Error::msg)?;
        let default = ferrozone_http::SamlLimits::default();
        Ok(sp.with_limits(ferrozone_http::SamlLimits {
            concurrency: self.saml_verify_concurrency.map_or(default.concurrency, |n| n as usize),
            body_limit: self.saml_consumer_body_limit as usize,
        }))
    }

    /// Whether cookies get the `Secure` attribute: when users reach Ferrozone over HTTPS,
    /// through a proxy (an https external URL) or straight (Ferrozone serves TLS).
    pub fn secure_cookies(&self) -> bool {
        url::Url::parse(&self.external_url).is_ok_and(|url| url.scheme() == "https") || self.tls.enabled()
    }

    fn external_host(&self) -> anyhow::Result<String> {
        let url = url::Url::parse(&self.external_url)
            .with_context(|| format!("FERROZONE_EXTERNAL_URL: `{}` is not a URL", self.external_url))?;
        match url.host_str() {
            Some(host) => Ok(host.to_owned()),
            None => bail!("FERROZONE_EXTERNAL_URL: `{}` has no host", self.external_url),
        }
    }
}

fn list(text: &str) -> Vec<String> {
    text.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect()
}

fn pool(prefix: &str, network: &str, gateway: &str, v4: bool) -> anyhow::Result<Pool> {
    let net: IpNet = network
        .trim()
        .parse()
        .with_context(|| format!("FERROZONE_{prefix}_NETWORK: `{network}` is not a CIDR network"))?;
    let gw: IpAddr = gateway
        .trim()
        .parse()
        .with_context(|| format!("FERROZONE_{prefix}_ADDRESS: `{gateway}` is not an IP address"))?;
    if net.addr().is_ipv4() != v4 {
        bail!("FERROZONE_{prefix}_NETWORK: `{network}` is not an {} network", if v4 { "IPv4" } else { "IPv6" });
    }
    Pool::new(net, gw).map_err(|e| anyhow::anyhow!("FERROZONE_{prefix}_ADDRESS: {e}"))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::cli::Cli;

    #[test]
    fn egress_settings_default_and_parse() {
        let cli = Cli::try_parse_from(["ferrozone", "serve"]).unwrap();
        assert_eq!((cli.config.egress_interface, cli.config.masquerade, cli.config.nft.as_str()), (None, true, "nft"));
        let args =
            ["ferrozone", "--egress-interface", "ens3", "--masquerade", "false", "serve", "--nft", "/usr/sbin/nft"];
        let cli = Cli::try_parse_from(args).unwrap();
        assert_eq!(cli.config.egress_interface.as_deref(), Some("ens3"));
        assert!(!cli.config.masquerade);
        assert_eq!(cli.config.nft, "/usr/sbin/nft");
        assert!(!cli.config.nft_remove_on_shutdown);
        let cli = Cli::try_parse_from(["ferrozone", "serve", "--nft-remove-on-shutdown", "true"]).unwrap();
        assert!(cli.config.nft_remove_on_shutdown);
    }

    #[test]
    fn the_egress_default_action_is_accept_unless_set_to_drop() {
        use super::EgressDefaultAction;
        let cli = Cli::try_parse_from(["ferrozone", "serve"]).unwrap();
        assert_eq!(cli.config.egress_default_action, EgressDefaultAction::Accept);
        let cli = Cli::try_parse_from(["ferrozone", "serve", "--egress-default-action", "drop"]).unwrap();
        assert_eq!(cli.config.egress_default_action, EgressDefaultAction::Drop);
        let error = Cli::try_parse_from(["ferrozone", "serve", "--egress-default-action", "deny"]).unwrap_err();
        assert!(error.to_string().contains("possible values: accept, drop"), "{error}");
    }

    #[test]
    fn the_gateway_itself_is_filtered_unless_host_filtering_is_off() {
        let cli = Cli::try_parse_from(["ferrozone", "serve"]).unwrap();
        assert!(cli.config.host_filter);
        let cli = Cli::try_parse_from(["ferrozone", "serve", "--host-filter", "false"]).unwrap();
        assert!(!cli.config.host_filter);
    }

    #[test]
    fn an_egress_interface_nft_would_misread_is_refused() {
        for bad in ["eth*", "eth0\"", "..", "sixteen-chars-xx"] {
            let error = Cli::try_parse_from(["ferrozone", "--egress-interface", bad, "serve"]).unwrap_err().to_string();
            assert!(error.contains("is not an interface name"), "{bad}: {error}");
        }
    }
}
