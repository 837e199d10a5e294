//! The first admin's password: `FERROZONE_ADMIN_PASSWORD` (Firezone's
//! `DEFAULT_ADMIN_PASSWORD`) or `FERROZONE_ADMIN_PASSWORD_FILE`.

use std::path::Path;

use anyhow::{bail, Context};
use ferrozone_domain::validate::user::password_problem;
use zeroize::Zeroizing;

use super::env::{folded, Folded};
use super::Config;

impl Config {
    /// The password the first admin gets, if one is set, checked against the password
    /// rules at start: a password the rules refuse is a start error naming the variable,
    /// never a silent admin without a password. The password itself is never shown.
    pub fn admin_password(&self) -> anyhow::Result<Option<Zeroizing<String>>> {
        let (password, source) = match (&self.admin_password, &self.admin_password_file) {
            (Some(password), _) if !password.is_empty() => (Zeroizing::new(password.clone()), variable_name()),
            (_, Some(path)) => (read_first_line(path)?, format!("FERROZONE_ADMIN_PASSWORD_FILE ({})", path.display())),
            _ => return Ok(None),
        };
        if let Some(problem) = password_problem(&password) {
            bail!("{source}: the password {problem}");
        }
        Ok(Some(password))
    }
}

/// The variable the operator set: Firezone's name when the value came through it.
fn variable_name() -> String {
    match folded("FERROZONE_ADMIN_PASSWORD") {
        Some(Folded::Alias(alias)) => alias.to_owned(),
        Some(Folded::File) => "admin_password in the config file".to_owned(),
        None => "FERROZONE_ADMIN_PASSWORD".to_owned(),
    }
}

/// The first line of `path`, without its line ending: a systemd credential or a file
/// written with `echo` both end in a newline that is no part of the password.
fn read_first_line(path: &Path) -> anyhow::Result<Zeroizing<String>> {
    let text = Zeroizing::new(
        std::fs::read_to_string(path)
            .with_context(|| format!("FERROZONE_ADMIN_PASSWORD_FILE: reading {}", path.display()))?,
    );
    let line = text.lines().next().unwrap_or_default();
    if line.is_empty() {
        bail!("FERROZONE_ADMIN_PASSWORD_FILE: {} holds no password on its first line", path.display());
    }
    Ok(Zeroizing::new(line.to_owned()))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use crate::cli::Cli;

    fn config(args: &[&str]) -> super::Config {
        Cli::parse_args(args).unwrap().config
    }

    #[test]
    fn no_password_is_none_and_a_good_one_is_given_back() {
        assert!(config(&["ferrozone", "serve"]).admin_password().unwrap().is_none());
        let given = config(&["ferrozone", "serve", "--admin-password", "correct horse battery"]).admin_password();
        assert_eq!(given.unwrap().as_deref().map(String::as_str), Some("correct horse battery"));
    }

    #[test]
    fn a_password_the_rules_refuse_is_a_start_error_that_does_not_show_it() {
        let error = config(&["ferrozone", "serve", "--admin-password", "short1"]).admin_password().unwrap_err();
        let error = format!("{error:#}");
        assert!(error.contains("FERROZONE_ADMIN_PASSWORD") && error.contains("at least 12"), "{error}");
        assert!(!error.contains("short1"), "{error}");
    }

    #[test]
    fn the_file_gives_its_first_line_without_the_newline() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        writeln!(file, "a password from a file\nsecond line").unwrap();
        let path = file.path().to_str().unwrap();
        let password = config(&["ferrozone", "serve", "--admin-password-file", path]).admin_password().unwrap();
        assert_eq!(password.as_deref().map(String::as_str), Some("a password from a file"));
        let empty = tempfile::NamedTempFile::new().unwrap();
        let path = empty.path().to_str().unwrap();
        let error = config(&["ferrozone", "serve", "--admin-password-file", path]).admin_password().unwrap_err();
        assert!(error.to_string().contains("holds no password"), "{error}");
    }

    #[test]
    fn the_variable_and_the_file_do_not_go_together() {
        let args = ["ferrozone", "serve", "--admin-password", "correct horse battery", "--admin-password-file", "f"];
        assert!(Cli::parse_args(args).is_err());
    }
}
