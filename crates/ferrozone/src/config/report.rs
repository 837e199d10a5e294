//! The start-up settings as the console's settings page and `GET /v0/server` show them:
//! each value with where it came from (a default, the config file, the environment or a
//! flag), secrets left out. What is shown, and under which heading, is [`super::table`]'s.

use clap::parser::ValueSource;
use clap::ArgMatches;
use ferrozone_http::{ReportedSetting, SettingSource};

use super::env::{folded, Folded};
use super::table::SETTINGS;

/// `(heading, key)` of the settings shown, in the table's order. Secrets are not among
/// them; the provider lists are shown apart, from their parsed lists, without secrets.
fn shown() -> impl Iterator<Item = (&'static str, &'static str)> {
    SETTINGS.iter().filter(|s| !s.secret).filter_map(|s| Some((s.heading?, s.key)))
}

/// Every shown setting of `matches` (a parse of the whole command line).
pub fn report(matches: &ArgMatches) -> Vec<ReportedSetting> {
    let command = <crate::cli::Cli as clap::CommandFactory>::command();
    let mut settings = Vec::new();
    for (group, id) in shown() {
        let Some(arg) = command.get_arguments().find(|a| a.get_id() == id) else { continue };
        let name = arg.get_env().map(|e| e.to_string_lossy().into_owned()).unwrap_or_else(|| format!("--{id}"));
        let (source, via) = source(matches, id, &name);
        settings.push(ReportedSetting { group: group.to_owned(), name, value: value(matches, id), source, via });
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
        assert_eq!(report.len(), shown().count(), "a shown key names no flag");
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
