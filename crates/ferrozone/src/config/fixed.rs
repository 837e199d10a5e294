//! Which configuration keys the environment sets (docs/design/configuration.md, "Configuration"):
//! those a PATCH of `/v0/configuration` may not change. The settings that set one are the
//! runtime ones of [`table`].

use clap::parser::ValueSource;
use clap::ArgMatches;
use ferrozone_domain::configuration::provider_lists::{OIDC_KEY, SAML_KEY};
use ferrozone_domain::configuration::{Fixed, KEYS};

use super::table::{self, Setting};

/// The settings that set a runtime configuration key, in the domain's order of the keys.
fn runtime() -> impl Iterator<Item = &'static Setting> {
    KEYS.iter().chain(&[OIDC_KEY, SAML_KEY]).filter_map(|key| table::find(key)).filter(|s| s.runtime)
}

/// The keys set through `var` (the process environment after the aliases and the config
/// file were folded in), each with the variable to name: the alias whose value is in
/// effect if the operator used one, else the `FERROZONE_*` name.
pub fn fixed(var: impl Fn(&str) -> Option<String>) -> Fixed {
    Fixed::new(runtime().filter_map(|setting| {
        let value = var(setting.variable)?;
        let alias = setting.aliases.iter().find(|alias| var(alias).as_ref() == Some(&value));
        Some((setting.key.to_owned(), alias.unwrap_or(&setting.variable).to_string()))
    }))
}

/// The keys a command-line flag sets (clap's value source, not a variable nor a default),
/// each with its flag. The keys are the ids of the flags' arguments.
pub fn flags(matches: &ArgMatches) -> Vec<(String, String)> {
    runtime()
        .filter(|setting| matches.value_source(setting.key) == Some(ValueSource::CommandLine))
        .map(|setting| (setting.key.to_owned(), format!("--{}", setting.key.replace('_', "-"))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        |name| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).to_owned())
    }

    #[test]
    fn a_set_variable_fixes_its_key_under_the_name_the_operator_used() {
        let fixed = fixed(env(&[
            ("FERROZONE_DEFAULT_CLIENT_MTU", "1400"),
            ("WIREGUARD_MTU", "1400"),
            ("FERROZONE_DEFAULT_CLIENT_DNS", "9.9.9.9"),
            ("DEFAULT_CLIENT_DNS", "8.8.8.8"),
        ]));
        assert_eq!(fixed.variable("default_client_mtu"), Some("WIREGUARD_MTU"));
        assert_eq!(fixed.variable("default_client_dns"), Some("FERROZONE_DEFAULT_CLIENT_DNS"));
        assert_eq!(fixed.variable("default_client_endpoint"), None);
    }

    #[test]
    fn a_flag_fixes_its_key_before_or_after_the_subcommand_and_a_default_does_not() {
        use ferrozone_domain::configuration::Source;
        let parse = |args: &[&str]| crate::cli::Cli::parse_args(args).unwrap().config;
        let config = parse(&["ferrozone", "--default-client-mtu=1400", "serve", "--local-auth-enabled", "false"]);
        let flag = |f: &str| (f[2..].replace('-', "_"), f.to_owned());
        assert_eq!(config.flags, [flag("--local-auth-enabled"), flag("--default-client-mtu")]);
        let fixed = config.settings().unwrap().fixed;
        assert_eq!(fixed.source("default_client_mtu"), Some(&Source::Flag("--default-client-mtu".to_owned())));
        assert_eq!(fixed.source("default_client_dns"), None, "a clap default is not set");
        assert!(parse(&["ferrozone", "serve"]).flags.is_empty());
    }

    #[test]
    fn every_key_is_the_id_of_its_flag() {
        use clap::CommandFactory;
        let command = crate::cli::Cli::command();
        assert_eq!(runtime().count(), 13);
        for Setting { key, variable, .. } in runtime() {
            let arg = command.get_arguments().find(|a| a.get_id() == key).unwrap_or_else(|| panic!("no flag {key}"));
            assert_eq!(arg.get_long(), Some(key.replace('_', "-").as_str()));
            assert_eq!(arg.get_env().and_then(|e| e.to_str()), Some(*variable));
        }
    }

    #[test]
    fn the_new_switches_are_settings_with_the_standard_defaults() {
        use clap::Parser;
        let parse = |args: &[&str]| crate::cli::Cli::try_parse_from(args).unwrap().config.settings().unwrap();
        let standard = parse(&["ferrozone", "serve"]).configuration;
        assert_eq!(standard, ferrozone_domain::Settings::standard().configuration);
        let set = parse(&[
            "ferrozone",
            "--local-auth-enabled=false",
            "--allow-unprivileged-device-management=false",
            "--allow-unprivileged-device-configuration=false",
            "--vpn-session-duration=3600",
            "serve",
        ])
        .configuration;
        assert!(!set.local_auth_enabled && !set.allow_unprivileged_device_management);
        assert!(!set.allow_unprivileged_device_configuration);
        assert_eq!(set.vpn_session_duration, 3600);
        assert!(crate::cli::Cli::try_parse_from(["ferrozone", "--vpn-session-duration=2147483648", "serve"]).is_err());
    }
}
