//! `ferrozone env-file`: every setting as a commented-out `FERROZONE_*=default` line.
//!
//! Generated from the command line's own definition, so the file a package installs (or an
//! operator prints after an upgrade) names every setting this binary reads, with the help
//! and default `--help` shows: it cannot fall behind a new setting.

use std::collections::BTreeSet;
use std::fmt::Write as _;

/// Comment lines are wrapped to this width.
const WIDTH: usize = 95;

const HEADER: &str = "\
Ferrozone's settings, as environment variables. The systemd unit reads this file
(EnvironmentFile=); `docker run --env-file` and compose's `env_file` read it too.

Every setting is commented out and shows its default: uncomment a line to change it.
Write values as they are, without quotes; wrap a JSON value in single quotes.
`ferrozone env-file` prints this file afresh, with the settings of the installed version;
`ferrozone --help` describes the same settings as command-line flags.";

/// The environment file of `command`'s settings: each argument with an environment
/// variable, once, in declaration order, with its help, flag, allowed values and default.
pub fn render(command: &clap::Command) -> String {
    let mut out = String::new();
    comment(&mut out, HEADER);
    let mut seen = BTreeSet::new();
    for arg in arguments(command) {
        let Some(name) = arg.get_env().map(|n| n.to_string_lossy().into_owned()) else { continue };
        if arg.is_hide_set() || !seen.insert(name.clone()) {
            continue;
        }
        out.push('\n');
        comment(&mut out, &describe(arg));
        let default: Vec<_> = arg.get_default_values().iter().map(|v| v.to_string_lossy()).collect();
        let _ = writeln!(out, "#{name}={}", default.join(","));
    }
    out
}

/// The arguments of `command` and of its subcommands, depth first.
fn arguments(command: &clap::Command) -> Vec<&clap::Arg> {
    let mut all: Vec<&clap::Arg> = command.get_arguments().collect();
    for sub in command.get_subcommands() {
        all.extend(arguments(sub));
    }
    all
}

/// The help text, then the flag and the values it takes.
fn describe(arg: &clap::Arg) -> String {
    let help = arg.get_long_help().or(arg.get_help()).map(ToString::to_string).unwrap_or_default();
    let mut text = help.trim().to_owned();
    if let Some(long) = arg.get_long() {
        let _ = write!(text, "\nFlag: --{long}.");
    }
    let values: Vec<_> =
        arg.get_possible_values().iter().filter(|v| !v.is_hide_set()).map(|v| v.get_name().to_owned()).collect();
    if !values.is_empty() {
        let _ = write!(text, " One of: {}.", values.join(", "));
    }
    text
}

/// Appends `text` as `# ` comment lines wrapped to [`WIDTH`], keeping its line breaks.
fn comment(out: &mut String, text: &str) {
    for paragraph in text.lines() {
        let mut line = String::from("#");
        for word in paragraph.split_whitespace() {
            if line.len() > 1 && line.len() + 1 + word.len() > WIDTH {
                out.push_str(&line);
                out.push('\n');
                line = String::from("#");
            }
            line.push(' ');
            line.push_str(word);
        }
        out.push_str(&line);
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::*;
    use crate::cli::Cli;

    /// `(name, default)` of each commented-out setting line.
    fn settings(file: &str) -> Vec<(String, String)> {
        file.lines()
            .filter_map(|l| l.strip_prefix("#FERROZONE_"))
            .filter_map(|l| l.split_once('='))
            .map(|(name, value)| (format!("FERROZONE_{name}"), value.to_owned()))
            .collect()
    }

    #[test]
    fn every_setting_appears_once() {
        let file = render(&Cli::command());
        let listed: Vec<_> = settings(&file).into_iter().map(|(name, _)| name).collect();
        let unique: BTreeSet<_> = listed.iter().cloned().collect();
        assert_eq!(listed.len(), unique.len(), "a setting listed twice");
        let mut expected = BTreeSet::new();
        for arg in arguments(&Cli::command()) {
            expected.extend(arg.get_env().map(|n| n.to_string_lossy().into_owned()));
        }
        assert_eq!(unique, expected);
        assert!(file.lines().all(|l| l.is_empty() || l.starts_with('#')), "nothing is set:\n{file}");
        assert!(file.lines().all(|l| l.len() <= WIDTH || l.starts_with("#FERROZONE_")), "wrapped:\n{file}");
    }

    #[test]
    fn each_line_has_its_description_and_default() {
        let file = render(&Cli::command());
        let listen = "# Address the HTTP API listens on\n# Flag: --listen.\n#FERROZONE_LISTEN=127.0.0.1:13000\n";
        assert!(file.contains(listen), "{file}");
        assert!(file.contains("One of: auto, kernel, userspace, none.\n#FERROZONE_WIREGUARD_BACKEND=auto\n"));
        assert!(file.contains("\n#FERROZONE_DATABASE_URL=\n"), "no default: an empty value");
    }

    /// Uncommented as it is, every line would be accepted: the shown defaults are real.
    #[test]
    fn every_shown_default_parses() {
        let command = Cli::command();
        for (name, value) in settings(&render(&command)).into_iter().filter(|(_, v)| !v.is_empty()) {
            let arg = arguments(&command).into_iter().find(|a| a.get_env().is_some_and(|e| e == name.as_str()));
            let long = arg.and_then(clap::Arg::get_long).expect("a flag for each setting");
            let flag = format!("--{long}={value}");
            let parsed = Cli::try_parse_from(["ferrozone", flag.as_str(), "serve"]);
            assert!(parsed.is_ok(), "{name}={value}: {:?}", parsed.err());
        }
    }
}
