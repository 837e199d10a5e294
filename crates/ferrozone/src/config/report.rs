//! The start-up settings as the console's settings page and `GET /v0/server` show them:
//! each value with where it came from (a default, the config file, the environment or a
//! flag), secrets left out.

use clap::parser::ValueSource;
use clap::ArgMatches;
use ferrozone_http::{ReportedSetting, SettingSource};

use super::env::{folded, Folded};

/// The settings shown, by heading: the id of each flag's argument. Secrets (the database
/// URL, the secret key, the providers' JSON with their client secrets) are not among them;
/// the providers are shown from their parsed lists, without secrets.
const SHOWN: &[(&str, &[&str])] = &[
    ("Server", &["external_url", "listen", "data_dir", "admin_email"]),
    ("HTTPS", &["tls_cert_file", "tls_key_file", "tls_reload_interval", "http_redirect_listen", "hsts_max_age"]),
    (
        "Tunnel networks",
        &[
            "wireguard_port",
            "wireguard_ipv4_enabled",
            "wireguard_ipv4_network",
            "wireguard_ipv4_address",
            "wireguard_ipv6_enabled",
            "wireguard_ipv6_network",
            "wireguard_ipv6_address",
        ],
    ),
    (
        "Defaults for new devices",
        &[
            "default_client_allowed_ips",
            "default_client_dns",
            "default_client_mtu",
            "default_client_persistent_keepalive",
            "default_client_endpoint",
        ],
    ),
    (
        "Limits and lifetimes",
        &["max_devices_per_user", "session_hours", "api_token_days", "api_token_max_days", "vpn_session_duration"],
    ),
    (
        "Sign-in",
        &[
            "local_auth_enabled",
            "allow_unprivileged_device_management",
            "allow_unprivileged_device_configuration",
            "disable_vpn_on_oidc_error",
            "saml_entity_id",
        ],
    ),
    (
        "Data plane",
        &[
            "wireguard_backend",
            "wireguard_interface",
            "egress_interface",
            "masquerade",
            "egress_default_action",
            "host_filter",
            "stats_interval",
        ],
    ),
    ("Automatic certificates (ACME)", &["acme", "acme_directory_url", "acme_contact_email", "acme_ca_file"]),
    ("Monitoring", &["metrics_listen"]),
];

/// Every shown setting of `matches` (a parse of the whole command line).
pub fn report(matches: &ArgMatches) -> Vec<ReportedSetting> {
    let command = <crate::cli::Cli as clap::CommandFactory>::command();
    let mut settings = Vec::new();
    for (group, ids) in SHOWN {
        for id in *ids {
            let Some(arg) = command.get_arguments().find(|a| a.get_id() == id) else { continue };
            let name = arg.get_env().map(|e| e.to_string_lossy().into_owned()).unwrap_or_else(|| format!("--{id}"));
            let (source, via) = source(matches, id, &name);
            settings.push(ReportedSetting { group: (*group).to_owned(), name, value: value(matches, id), source, via });
        }
    }
    settings
}

/// The value as given (a default's too), or `not set` for an optional one left out.
fn value(matches: &ArgMatches, id: &str) -> String {
    match matches.get_raw(id) {
        Some(values) => values.map(|v| v.to_string_lossy()).collect::<Vec<_>>().join(","),
        None => "not set".to_owned(),
    }
}

/// Where the value of `id` (read from variable `name`) came from, and through which flag,
/// alias or file when that is worth saying.
fn source(matches: &ArgMatches, id: &str, name: &str) -> (SettingSource, Option<String>) {
    match matches.value_source(id) {
        Some(ValueSource::CommandLine) => (SettingSource::Flag, Some(format!("--{}", id.replace('_', "-")))),
        Some(ValueSource::EnvVariable) => match folded(name) {
            Some(Folded::File) => (SettingSource::File, None),
            Some(Folded::Alias(alias)) => (SettingSource::Environment, Some(alias.to_owned())),
            None => (SettingSource::Environment, None),
        },
        _ => (SettingSource::Default, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find<'a>(report: &'a [ReportedSetting], name: &str) -> &'a ReportedSetting {
        report.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("{name} not reported"))
    }

    #[test]
    fn each_value_says_where_it_came_from() {
        let config = crate::cli::Cli::parse_args([
            "ferrozone",
            "--default-client-mtu=1400",
            "serve",
            "--external-url",
            "https://vpn.example.com",
        ])
        .unwrap()
        .config;
        let report = &config.report;
        let mtu = find(report, "FERROZONE_DEFAULT_CLIENT_MTU");
        assert_eq!((mtu.value.as_str(), mtu.source), ("1400", SettingSource::Flag));
        assert_eq!(mtu.via.as_deref(), Some("--default-client-mtu"));
        let url = find(report, "FERROZONE_EXTERNAL_URL");
        assert_eq!((url.value.as_str(), url.source), ("https://vpn.example.com", SettingSource::Flag));
        let port = find(report, "FERROZONE_WIREGUARD_PORT");
        assert_eq!((port.value.as_str(), port.source), ("51820", SettingSource::Default));
        assert_eq!(find(report, "FERROZONE_DEFAULT_CLIENT_ENDPOINT").value, "not set");
    }

    #[test]
    fn every_shown_setting_exists_and_no_secret_is_shown() {
        let report = crate::cli::Cli::parse_args(["ferrozone", "serve"]).unwrap().config.report;
        let shown: usize = SHOWN.iter().map(|(_, ids)| ids.len()).sum();
        assert_eq!(report.len(), shown, "an id of SHOWN names no flag");
        let secrets = [
            "FERROZONE_DATABASE_URL",
            "FERROZONE_SECRET_KEY",
            "FERROZONE_OPENID_CONNECT_PROVIDERS",
            "FERROZONE_METRICS_TOKEN",
        ];
        for secret in secrets {
            assert!(report.iter().all(|s| s.name != secret), "{secret}");
        }
    }
}
