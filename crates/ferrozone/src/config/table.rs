//! Every setting, declared once (docs/design/configuration.md, "One table of settings"):
//! its key, its variable, its Firezone aliases, its heading in the settings report, whether
//! its value is secret, and whether it sets a key of the runtime configuration. The alias
//! folding ([`super::env`]), the keys the environment fixes ([`super::fixed`]) and the
//! settings report ([`super::report`]) read this table; a test holds it to the flags of
//! [`super::Config`], one entry per flag.

/// One setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    /// The id of its flag's argument, which is also its config file key: the flag is
    /// `--<key with dashes>`.
    pub key: &'static str,
    /// The `FERROZONE_*` environment variable.
    pub variable: &'static str,
    /// Firezone 0.x names of the variable, the first set one winning.
    pub aliases: &'static [&'static str],
    /// The heading the settings report shows it under; `None`: not shown.
    pub heading: Option<&'static str>,
    /// Its value is never shown (clap hides it in `--help` too).
    pub secret: bool,
    /// It sets the runtime configuration key of the same name (`/v0/configuration`), which
    /// a PATCH then may not change.
    pub runtime: bool,
}

const fn setting(key: &'static str, variable: &'static str) -> Setting {
    Setting { key, variable, aliases: &[], heading: None, secret: false, runtime: false }
}

impl Setting {
    const fn aliases(self, aliases: &'static [&'static str]) -> Self {
        Self { aliases, ..self }
    }

    const fn heading(self, heading: &'static str) -> Self {
        Self { heading: Some(heading), ..self }
    }

    const fn secret(self) -> Self {
        Self { secret: true, ..self }
    }

    const fn runtime(self) -> Self {
        Self { runtime: true, ..self }
    }
}

const SERVER: &str = "Server";
const HTTPS: &str = "HTTPS";
const TUNNEL: &str = "Tunnel networks";
const DEVICE_DEFAULTS: &str = "Defaults for new devices";
const LIMITS: &str = "Limits and lifetimes";
const SIGN_IN: &str = "Sign-in";
const DATA_PLANE: &str = "Data plane";
const ACME: &str = "Automatic certificates (ACME)";
const MONITORING: &str = "Monitoring";
const EMAIL: &str = "Email (SMTP)";

/// The settings: first those the report shows, in its order (the entries of a heading
/// together), then the others.
pub const SETTINGS: &[Setting] = &[
    setting("external_url", "FERROZONE_EXTERNAL_URL").aliases(&["EXTERNAL_URL"]).heading(SERVER),
    setting("listen", "FERROZONE_LISTEN").heading(SERVER),
    setting("data_dir", "FERROZONE_DATA_DIR").heading(SERVER),
    setting("admin_email", "FERROZONE_ADMIN_EMAIL").aliases(&["DEFAULT_ADMIN_EMAIL", "ADMIN_EMAIL"]).heading(SERVER),
    setting("tls_cert_file", "FERROZONE_TLS_CERT_FILE").heading(HTTPS),
    setting("tls_key_file", "FERROZONE_TLS_KEY_FILE").heading(HTTPS),
    setting("tls_reload_interval", "FERROZONE_TLS_RELOAD_INTERVAL").heading(HTTPS),
    setting("http_redirect_listen", "FERROZONE_HTTP_REDIRECT_LISTEN").heading(HTTPS),
    setting("hsts_max_age", "FERROZONE_HSTS_MAX_AGE").heading(HTTPS),
    setting("wireguard_port", "FERROZONE_WIREGUARD_PORT").aliases(&["WIREGUARD_PORT"]).heading(TUNNEL),
    setting("wireguard_ipv4_enabled", "FERROZONE_WIREGUARD_IPV4_ENABLED")
        .aliases(&["WIREGUARD_IPV4_ENABLED"])
        .heading(TUNNEL),
    setting("wireguard_ipv4_network", "FERROZONE_WIREGUARD_IPV4_NETWORK")
        .aliases(&["WIREGUARD_IPV4_NETWORK"])
        .heading(TUNNEL),
    setting("wireguard_ipv4_address", "FERROZONE_WIREGUARD_IPV4_ADDRESS")
        .aliases(&["WIREGUARD_IPV4_ADDRESS"])
        .heading(TUNNEL),
    setting("wireguard_ipv6_enabled", "FERROZONE_WIREGUARD_IPV6_ENABLED")
        .aliases(&["WIREGUARD_IPV6_ENABLED"])
        .heading(TUNNEL),
    setting("wireguard_ipv6_network", "FERROZONE_WIREGUARD_IPV6_NETWORK")
        .aliases(&["WIREGUARD_IPV6_NETWORK"])
        .heading(TUNNEL),
    setting("wireguard_ipv6_address", "FERROZONE_WIREGUARD_IPV6_ADDRESS")
        .aliases(&["WIREGUARD_IPV6_ADDRESS"])
        .heading(TUNNEL),
    setting("default_client_allowed_ips", "FERROZONE_DEFAULT_CLIENT_ALLOWED_IPS")
        .aliases(&["DEFAULT_CLIENT_ALLOWED_IPS"])
        .heading(DEVICE_DEFAULTS)
        .runtime(),
    setting("default_client_dns", "FERROZONE_DEFAULT_CLIENT_DNS")
        .aliases(&["DEFAULT_CLIENT_DNS", "WIREGUARD_DNS"])
        .heading(DEVICE_DEFAULTS)
        .runtime(),
    setting("default_client_mtu", "FERROZONE_DEFAULT_CLIENT_MTU")
        .aliases(&["DEFAULT_CLIENT_MTU", "WIREGUARD_MTU"])
        .heading(DEVICE_DEFAULTS)
        .runtime(),
    setting("default_client_persistent_keepalive", "FERROZONE_DEFAULT_CLIENT_PERSISTENT_KEEPALIVE")
        .aliases(&["DEFAULT_CLIENT_PERSISTENT_KEEPALIVE"])
        .heading(DEVICE_DEFAULTS)
        .runtime(),
    setting("default_client_endpoint", "FERROZONE_DEFAULT_CLIENT_ENDPOINT")
        .aliases(&["DEFAULT_CLIENT_ENDPOINT"])
        .heading(DEVICE_DEFAULTS)
        .runtime(),
    setting("max_devices_per_user", "FERROZONE_MAX_DEVICES_PER_USER")
        .aliases(&["MAX_DEVICES_PER_USER"])
        .heading(LIMITS),
    setting("session_hours", "FERROZONE_SESSION_HOURS").heading(LIMITS),
    setting("api_token_days", "FERROZONE_API_TOKEN_DAYS").heading(LIMITS),
    setting("api_token_max_days", "FERROZONE_API_TOKEN_MAX_DAYS").heading(LIMITS),
    setting("vpn_session_duration", "FERROZONE_VPN_SESSION_DURATION")
        .aliases(&["VPN_SESSION_DURATION"])
        .heading(LIMITS)
        .runtime(),
    setting("local_auth_enabled", "FERROZONE_LOCAL_AUTH_ENABLED")
        .aliases(&["LOCAL_AUTH_ENABLED"])
        .heading(SIGN_IN)
        .runtime(),
    setting("allow_unprivileged_device_management", "FERROZONE_ALLOW_UNPRIVILEGED_DEVICE_MANAGEMENT")
        .aliases(&["ALLOW_UNPRIVILEGED_DEVICE_MANAGEMENT"])
        .heading(SIGN_IN)
        .runtime(),
    setting("allow_unprivileged_device_configuration", "FERROZONE_ALLOW_UNPRIVILEGED_DEVICE_CONFIGURATION")
        .aliases(&["ALLOW_UNPRIVILEGED_DEVICE_CONFIGURATION"])
        .heading(SIGN_IN)
        .runtime(),
    setting("disable_vpn_on_oidc_error", "FERROZONE_DISABLE_VPN_ON_OIDC_ERROR")
        .aliases(&["DISABLE_VPN_ON_OIDC_ERROR"])
        .heading(SIGN_IN)
        .runtime(),
    setting("saml_entity_id", "FERROZONE_SAML_ENTITY_ID").aliases(&["SAML_ENTITY_ID"]).heading(SIGN_IN),
    setting("wireguard_backend", "FERROZONE_WIREGUARD_BACKEND").heading(DATA_PLANE),
    setting("wireguard_interface", "FERROZONE_WIREGUARD_INTERFACE").heading(DATA_PLANE),
    setting("egress_interface", "FERROZONE_EGRESS_INTERFACE")
        .aliases(&["GATEWAY_EGRESS_INTERFACE", "EGRESS_INTERFACE"])
        .heading(DATA_PLANE),
    setting("masquerade", "FERROZONE_MASQUERADE").heading(DATA_PLANE),
    setting("egress_default_action", "FERROZONE_EGRESS_DEFAULT_ACTION").heading(DATA_PLANE).runtime(),
    setting("host_filter", "FERROZONE_HOST_FILTER").heading(DATA_PLANE),
    setting("stats_interval", "FERROZONE_STATS_INTERVAL").heading(DATA_PLANE),
    setting("repair_interval", "FERROZONE_REPAIR_INTERVAL").heading(DATA_PLANE),
    setting("acme", "FERROZONE_ACME").heading(ACME),
    setting("acme_directory_url", "FERROZONE_ACME_DIRECTORY_URL").heading(ACME),
    setting("acme_contact_email", "FERROZONE_ACME_CONTACT_EMAIL").heading(ACME),
    setting("acme_ca_file", "FERROZONE_ACME_CA_FILE").heading(ACME),
    setting("smtp_host", "FERROZONE_SMTP_HOST").heading(EMAIL),
    setting("smtp_port", "FERROZONE_SMTP_PORT").heading(EMAIL),
    setting("smtp_tls", "FERROZONE_SMTP_TLS").heading(EMAIL),
    setting("smtp_username", "FERROZONE_SMTP_USERNAME").heading(EMAIL),
    setting("smtp_from", "FERROZONE_SMTP_FROM").aliases(&["OUTBOUND_EMAIL_FROM"]).heading(EMAIL),
    setting("smtp_password", "FERROZONE_SMTP_PASSWORD").secret(),
    setting("metrics_listen", "FERROZONE_METRICS_LISTEN").heading(MONITORING),
    // Not in the report: the secrets, and what an operator rarely changes. The provider
    // lists are shown apart, from their parsed form, without secrets.
    setting("config", "FERROZONE_CONFIG"),
    setting("shutdown_timeout", "FERROZONE_SHUTDOWN_TIMEOUT"),
    setting("database_url", "FERROZONE_DATABASE_URL").secret(),
    setting("database_max_connections", "FERROZONE_DATABASE_MAX_CONNECTIONS")
        .aliases(&["DATABASE_POOL_SIZE", "DATABASE_POOL"]),
    setting("sqlite_synchronous", "FERROZONE_SQLITE_SYNCHRONOUS"),
    setting("secret_key", "FERROZONE_SECRET_KEY").secret(),
    setting("secret_key_file", "FERROZONE_SECRET_KEY_FILE"),
    setting("admin_password", "FERROZONE_ADMIN_PASSWORD").aliases(&["DEFAULT_ADMIN_PASSWORD"]).secret(),
    setting("admin_password_file", "FERROZONE_ADMIN_PASSWORD_FILE"),
    setting("sign_in_flows_per_address", "FERROZONE_SIGN_IN_FLOWS_PER_ADDRESS"),
    setting("password_hash_concurrency", "FERROZONE_PASSWORD_HASH_CONCURRENCY"),
    setting("password_hash_queue", "FERROZONE_PASSWORD_HASH_QUEUE"),
    setting("password_hash_reserve", "FERROZONE_PASSWORD_HASH_RESERVE"),
    setting("sign_in_account_burst", "FERROZONE_SIGN_IN_ACCOUNT_BURST"),
    setting("sign_in_account_refill_secs", "FERROZONE_SIGN_IN_ACCOUNT_REFILL_SECS"),
    setting("sign_in_network_burst", "FERROZONE_SIGN_IN_NETWORK_BURST"),
    setting("sign_in_network_refill_secs", "FERROZONE_SIGN_IN_NETWORK_REFILL_SECS"),
    setting("openid_connect_providers", "FERROZONE_OPENID_CONNECT_PROVIDERS")
        .aliases(&["OPENID_CONNECT_PROVIDERS"])
        .secret()
        .runtime(),
    setting("saml_identity_providers", "FERROZONE_SAML_IDENTITY_PROVIDERS")
        .aliases(&["SAML_IDENTITY_PROVIDERS"])
        .runtime(),
    setting("saml_keyfile", "FERROZONE_SAML_KEYFILE").aliases(&["SAML_KEYFILE_PATH"]),
    setting("saml_certfile", "FERROZONE_SAML_CERTFILE").aliases(&["SAML_CERTFILE_PATH"]),
    setting("saml_verify_concurrency", "FERROZONE_SAML_VERIFY_CONCURRENCY"),
    setting("saml_consumer_body_limit", "FERROZONE_SAML_CONSUMER_BODY_LIMIT"),
    setting("oidc_refresh_interval", "FERROZONE_OIDC_REFRESH_INTERVAL"),
    setting("wireguard_go", "FERROZONE_WIREGUARD_GO"),
    setting("nft", "FERROZONE_NFT").aliases(&["GATEWAY_NFT_PATH", "NFT_PATH"]),
    setting("nft_remove_on_shutdown", "FERROZONE_NFT_REMOVE_ON_SHUTDOWN"),
    setting("wireguard_remove_on_shutdown", "FERROZONE_WIREGUARD_REMOVE_ON_SHUTDOWN"),
    setting("webhook_allow_private", "FERROZONE_WEBHOOK_ALLOW_PRIVATE"),
    setting("log_format", "FERROZONE_LOG_FORMAT"),
    setting("http_header_timeout", "FERROZONE_HTTP_HEADER_TIMEOUT"),
    setting("http_idle_timeout", "FERROZONE_HTTP_IDLE_TIMEOUT"),
    setting("http_request_timeout", "FERROZONE_HTTP_REQUEST_TIMEOUT"),
    setting("http_body_timeout", "FERROZONE_HTTP_BODY_TIMEOUT"),
    setting("http_max_connections", "FERROZONE_HTTP_MAX_CONNECTIONS"),
    setting("http_max_connections_per_address", "FERROZONE_HTTP_MAX_CONNECTIONS_PER_ADDRESS"),
    setting("metrics_token", "FERROZONE_METRICS_TOKEN").secret(),
    setting("metrics_token_file", "FERROZONE_METRICS_TOKEN_FILE"),
    setting("audit_retention", "FERROZONE_AUDIT_RETENTION"),
    setting("gateway_control_plane", "FERROZONE_GATEWAY_CONTROL_PLANE"),
    setting("gateway_state_dir", "FERROZONE_GATEWAY_STATE_DIR"),
    setting("gateway_enrolment_token", "FERROZONE_GATEWAY_ENROLMENT_TOKEN").secret(),
    setting("gateway_enrolment_token_file", "FERROZONE_GATEWAY_ENROLMENT_TOKEN_FILE"),
    setting("gateway_ca_file", "FERROZONE_GATEWAY_CA_FILE"),
];

/// The setting whose key is `key`.
pub fn find(key: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.key == key)
}

/// `(alias, variable)` of every Firezone alias, each variable's aliases in the order they
/// are tried.
pub fn aliases() -> impl Iterator<Item = (&'static str, &'static str)> {
    SETTINGS.iter().flat_map(|s| s.aliases.iter().map(move |alias| (*alias, s.variable)))
}

#[cfg(test)]
mod tests;
