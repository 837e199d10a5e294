use std::collections::BTreeSet;

use clap::CommandFactory;
use ferrozone_domain::configuration::provider_lists::{OIDC_KEY, SAML_KEY};
use ferrozone_domain::configuration::KEYS;

use super::*;
use crate::cli::Cli;

/// `(id, variable, whether clap hides its value)` of every argument with a variable.
fn flags() -> Vec<(String, String, bool)> {
    Cli::command()
        .get_arguments()
        .filter_map(|arg| {
            let variable = arg.get_env()?.to_string_lossy().into_owned();
            Some((arg.get_id().to_string(), variable, arg.is_hide_env_values_set()))
        })
        .collect()
}

#[test]
fn every_flag_is_in_the_table_exactly_once_and_every_entry_is_a_flag() {
    let flags = flags();
    assert!(flags.len() > 50, "the settings are global arguments of the root command");
    for (id, variable, hidden) in &flags {
        let entries: Vec<_> = SETTINGS.iter().filter(|s| s.variable == variable.as_str()).collect();
        assert_eq!(entries.len(), 1, "{variable} is in the table {} times", entries.len());
        assert_eq!(entries[0].key, id.as_str(), "{variable}: the key is the id of its flag");
        assert_eq!(entries[0].secret, *hidden, "{variable}: secret exactly when clap hides its value");
    }
    for setting in SETTINGS {
        assert!(flags.iter().any(|(id, _, _)| id == setting.key), "{} has no flag", setting.key);
    }
    let keys: BTreeSet<_> = SETTINGS.iter().map(|s| s.key).collect();
    assert_eq!(keys.len(), SETTINGS.len(), "a key twice");
}

#[test]
fn every_flag_of_the_command_line_with_a_variable_is_global() {
    // The table holds the settings of the root command: a subcommand's own argument with
    // a variable would escape it.
    fn walk(command: &clap::Command, root: bool) {
        for arg in command.get_arguments().filter(|a| a.get_env().is_some()) {
            assert!(root || arg.is_global_set(), "{} of {}", arg.get_id(), command.get_name());
        }
        for sub in command.get_subcommands() {
            walk(sub, false);
        }
    }
    walk(&Cli::command(), true);
}

#[test]
fn an_alias_names_one_variable_and_is_no_ferrozone_name() {
    let mut seen = BTreeSet::new();
    for (alias, variable) in aliases() {
        assert!(seen.insert(alias), "{alias} is an alias twice");
        assert!(!alias.starts_with("FERROZONE_"), "{alias} of {variable}");
    }
}

#[test]
fn the_headings_are_contiguous_and_no_secret_is_shown() {
    let mut done: Vec<&str> = Vec::new();
    for heading in SETTINGS.iter().filter_map(|s| s.heading) {
        if done.last() != Some(&heading) {
            assert!(!done.contains(&heading), "{heading} is split");
            done.push(heading);
        }
    }
    assert!(SETTINGS.iter().all(|s| !(s.secret && s.heading.is_some())));
}

#[test]
fn the_runtime_settings_are_the_runtime_configuration_keys_save_require_totp() {
    let domain: Vec<&str> = KEYS.iter().copied().chain([OIDC_KEY, SAML_KEY]).collect();
    for setting in SETTINGS.iter().filter(|s| s.runtime) {
        assert!(domain.contains(&setting.key), "{} is no configuration key", setting.key);
    }
    let without: Vec<&str> = domain.into_iter().filter(|key| find(key).is_none_or(|s| !s.runtime)).collect();
    // docs/design/configuration.md, "One table of settings": `require_totp` has no variable.
    assert_eq!(without, ["require_totp"]);
}
