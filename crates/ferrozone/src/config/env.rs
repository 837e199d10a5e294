//! Folding the config file and the Firezone aliases (of [`table`]) into `FERROZONE_*`
//! variables.
//! Firezone's `DATABASE_*` variables become `FERROZONE_DATABASE_URL` ([`firezone`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Mutex;

use anyhow::{bail, Context};

use super::{firezone, table};

/// The Firezone names [`prepare_environment`] folds in one to one.
#[cfg(test)]
pub fn alias_names() -> impl Iterator<Item = &'static str> {
    table::aliases().map(|(alias, _)| alias)
}

/// Where a `FERROZONE_*` variable that [`prepare_environment`] set came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Folded {
    /// The Firezone alias of this name.
    Alias(&'static str),
    /// A key of the config file.
    File,
}

/// The variables [`prepare_environment`] set, for the settings report: once folded in,
/// the environment alone no longer tells a file's value from an operator's variable.
static FOLDED: Mutex<BTreeMap<String, Folded>> = Mutex::new(BTreeMap::new());

/// Where [`prepare_environment`] took variable `name` from, if it set it.
pub fn folded(name: &str) -> Option<Folded> {
    FOLDED.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(name).cloned()
}

fn record(name: &str, from: Folded) {
    FOLDED.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(name.to_owned(), from);
}

/// Sets `FERROZONE_*` variables from the Firezone aliases and then from the config file,
/// never overriding a variable that is already set. Returns warnings to log once logging
/// is up (unknown variables, unknown file keys).
///
/// Must run before any other thread starts: it changes the process environment.
pub fn prepare_environment(args: &[String], known: &BTreeSet<String>) -> anyhow::Result<Vec<String>> {
    let var = |name: &str| std::env::var(name).ok();
    let database_url_set = std::env::var_os(DATABASE_URL).is_some() || has_flag(args, "--database-url");
    let mut warnings = firezone::warnings(var, database_url_set);
    if !database_url_set {
        if let Some(url) = firezone::database_url(var)? {
            std::env::set_var(DATABASE_URL, url);
            record(DATABASE_URL, Folded::Alias("DATABASE_HOST"));
        }
    }
    let (smtp, smtp_warnings) = super::smtp::firezone_variables(var)?;
    warnings.extend(smtp_warnings);
    for (name, value) in smtp {
        if std::env::var_os(name).is_none() {
            std::env::set_var(name, value);
            record(name, Folded::Alias("OUTBOUND_EMAIL_ADAPTER_OPTS"));
        }
    }
    for (alias, name) in table::aliases() {
        if std::env::var_os(name).is_none() {
            if let Some(value) = std::env::var_os(alias) {
                std::env::set_var(name, value);
                record(name, Folded::Alias(alias));
            }
        }
    }
    if let Some(path) = config_path(args) {
        warnings.extend(apply_file(Path::new(&path), known)?);
    }
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        let ours = name.starts_with("FERROZONE_") && !name.starts_with("FERROZONE_TEST_");
        if ours && !known.contains(name.as_ref()) && name != "FERROZONE_CONFIG" {
            warnings.push(format!("unknown setting {name} is ignored"));
        }
    }
    Ok(warnings)
}

const DATABASE_URL: &str = "FERROZONE_DATABASE_URL";

/// Whether `flag` is on the command line (`--flag value` or `--flag=value`).
fn has_flag(args: &[String], flag: &str) -> bool {
    args.iter().any(|arg| arg == flag || arg.strip_prefix(flag).is_some_and(|rest| rest.starts_with('=')))
}

/// `--config PATH`, `--config=PATH`, or `FERROZONE_CONFIG`.
fn config_path(args: &[String]) -> Option<String> {
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if arg == "--config" {
            return iter.next().cloned();
        }
        if let Some(path) = arg.strip_prefix("--config=") {
            return Some(path.to_owned());
        }
    }
    std::env::var("FERROZONE_CONFIG").ok()
}

/// Each `key = value` of the file becomes `FERROZONE_<KEY>` unless that is set already.
/// Arrays become comma-separated lists.
fn apply_file(path: &Path, known: &BTreeSet<String>) -> anyhow::Result<Vec<String>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading config file {}", path.display()))?;
    let table: toml::Table = text.parse().with_context(|| format!("parsing config file {}", path.display()))?;
    let mut warnings = Vec::new();
    for (key, value) in table {
        let name = format!("FERROZONE_{}", key.to_ascii_uppercase().replace('-', "_"));
        if !known.contains(&name) {
            warnings.push(format!("unknown key `{key}` in {} is ignored", path.display()));
            continue;
        }
        let value = match value {
            toml::Value::String(s) => s,
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            toml::Value::Array(items) => items
                .iter()
                .map(|i| i.as_str().map(str::to_owned).unwrap_or_else(|| i.to_string()))
                .collect::<Vec<_>>()
                .join(","),
            other => bail!("config key `{key}` has an unsupported value {other}"),
        };
        if std::env::var_os(&name).is_none() {
            std::env::set_var(&name, value);
            record(&name, Folded::File);
        }
    }
    Ok(warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_path_forms() {
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(config_path(&args(&["ferrozone", "--config", "a.toml", "serve"])).as_deref(), Some("a.toml"));
        assert_eq!(config_path(&args(&["ferrozone", "serve", "--config=b.toml"])).as_deref(), Some("b.toml"));
    }
}
