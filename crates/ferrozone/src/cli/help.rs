//! Which settings each command's `--help` shows.
//!
//! Every setting is a global flag, so every command reads it (from the command line, the
//! environment or the config file) wherever it is given. But a command's help lists only
//! the settings it uses: the store settings on every command that opens the database, the
//! rest on `serve`, plus a few a command reads itself (`token create` and the lifetime of
//! a token). A setting not listed here is the server's: it shows on `serve` alone, so a
//! new setting never clutters the help of commands that ignore it.
//!
//! How: clap copies a global flag into each subcommand unless the subcommand already has
//! one with that id. So before clap builds the command, each subcommand gets its own copy
//! of every setting, hidden or not; clap's parse and its value sources stay as they were.

use clap::{Arg, Command};

/// The settings of every command that opens the database.
const STORE: &[&str] = &[
    "config",
    "data_dir",
    "database_url",
    "database_max_connections",
    "sqlite_synchronous",
    "secret_key",
    "secret_key_file",
    "log_format",
];

/// Settings a command reads beyond [`STORE`], by its path of subcommand names.
const READS: &[(&str, &[&str])] = &[
    ("token create", &["api_token_days", "api_token_max_days"]),
    (
        "import firezone",
        &[
            "wireguard_ipv4_enabled",
            "wireguard_ipv4_network",
            "wireguard_ipv4_address",
            "wireguard_ipv6_enabled",
            "wireguard_ipv6_network",
            "wireguard_ipv6_address",
        ],
    ),
    ("status", &["listen"]),
];

/// `gateway` opens no database: it reads the data-plane settings alone.
const GATEWAY: (&str, &[&str]) = (
    "gateway",
    &[
        "config",
        "log_format",
        "wireguard_backend",
        "wireguard_interface",
        "wireguard_port",
        "wireguard_go",
        "stats_interval",
        "repair_interval",
        "egress_interface",
        "masquerade",
        "nft",
        "nft_remove_on_shutdown",
        "wireguard_remove_on_shutdown",
        "host_filter",
        "gateway_control_plane",
        "gateway_state_dir",
        "gateway_enrolment_token",
        "gateway_enrolment_token_file",
        "gateway_ca_file",
    ],
);

/// Commands that open no database and read no setting.
const NO_SETTINGS: &[&str] = &["openapi", "env-file"];

/// The command that uses every setting but the gateway's own (`gateway_*`).
const SERVER: &str = "serve";

/// `root` with each subcommand showing only its own settings in its help.
pub fn scoped(root: Command) -> Command {
    let settings: Vec<Arg> = root.get_arguments().filter(|a| a.is_global_set()).cloned().collect();
    let mut root = root;
    for setting in &settings {
        let shown = shows(&[], setting.get_id().as_str());
        root = root.mut_arg(setting.get_id().clone(), |a| if shown { a } else { a.hide(true) });
    }
    scope_subcommands(root, &settings, &[])
}

fn scope_subcommands(mut cmd: Command, settings: &[Arg], path: &[String]) -> Command {
    let names: Vec<String> = cmd.get_subcommands().map(|s| s.get_name().to_owned()).collect();
    for name in names {
        let path: Vec<String> = path.iter().cloned().chain([name.clone()]).collect();
        cmd = cmd.mut_subcommand(&name, |sub| {
            let sub = with_settings(sub, settings, &path);
            scope_subcommands(sub, settings, &path)
        });
    }
    cmd
}

/// `cmd` with its own copy of each setting, hidden unless `cmd` uses it.
fn with_settings(mut cmd: Command, settings: &[Arg], path: &[String]) -> Command {
    let path: Vec<&str> = path.iter().map(String::as_str).collect();
    for setting in settings {
        let id = setting.get_id().as_str();
        if cmd.get_arguments().any(|a| a.get_id() == id) {
            continue;
        }
        let hidden = setting.is_hide_set() || !shows(&path, id);
        cmd = cmd.arg(setting.clone().hide(hidden));
    }
    cmd
}

/// Whether the help of the command at `path` (subcommand names; empty for the root)
/// shows the setting `id`.
fn shows(path: &[&str], id: &str) -> bool {
    let top = path.first().copied();
    if top == Some(SERVER) {
        return !id.starts_with("gateway_");
    }
    if top.is_some_and(|name| NO_SETTINGS.contains(&name)) {
        return false;
    }
    if top == Some(GATEWAY.0) {
        return GATEWAY.1.contains(&id);
    }
    let joined = path.join(" ");
    STORE.contains(&id) || READS.iter().any(|(command, ids)| *command == joined && ids.contains(&id))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn help(args: &[&str]) -> String {
        let mut cmd = scoped(<crate::cli::Cli as clap::CommandFactory>::command());
        cmd.build();
        let mut found = &mut cmd;
        for name in args {
            found = found.find_subcommand_mut(name).unwrap();
        }
        found.render_long_help().to_string()
    }

    #[test]
    fn a_command_shows_the_store_settings_and_its_own_flags_only() {
        let text = help(&["user", "create"]);
        assert!(text.contains("--email") && text.contains("--database-url") && text.contains("--data-dir"), "{text}");
        assert!(!text.contains("--wireguard-port") && !text.contains("--listen"), "{text}");
        let token = help(&["token", "create"]);
        assert!(token.contains("--api-token-days") && !token.contains("--session-hours"), "{token}");
        assert!(!help(&["token", "list"]).contains("--api-token-days"));
        assert!(!help(&["openapi"]).contains("--database-url"));
    }

    #[test]
    fn gateway_shows_the_data_plane_settings_and_no_database() {
        let text = help(&["gateway"]);
        for flag in ["--gateway-control-plane", "--gateway-state-dir", "--wireguard-backend", "--masquerade"] {
            assert!(text.contains(flag), "{flag} in {text}");
        }
        for flag in ["--database-url", "--data-dir", "--listen", "--secret-key"] {
            assert!(!text.contains(flag), "{flag} in {text}");
        }
        assert!(!help(&["serve"]).contains("--gateway-control-plane"), "the gateway's own settings are not serve's");
    }

    #[test]
    fn serve_shows_every_setting() {
        let text = help(&["serve"]);
        for flag in ["--wireguard-port", "--listen", "--http-header-timeout", "--database-url", "--session-hours"] {
            assert!(text.contains(flag), "{flag} in {text}");
        }
    }

    #[test]
    fn every_setting_a_command_is_said_to_read_exists() {
        let root = <crate::cli::Cli as clap::CommandFactory>::command();
        let ids: Vec<String> = root.get_arguments().map(|a| a.get_id().to_string()).collect();
        for id in STORE.iter().chain(READS.iter().flat_map(|(_, ids)| ids.iter())).chain(GATEWAY.1) {
            assert!(ids.iter().any(|known| known == id), "{id} is no setting");
        }
    }
}
