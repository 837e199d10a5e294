//! `ferrozone backup` and `ferrozone restore`: copies of the SQLite database that restore.
//! The copy and the swap are the store's ([`ferrozone_store::sqlite::backup`]); this module
//! finds the database, keeps `serve` away during a restore and tells the operator what to
//! keep with the backup.

use std::path::{Path, PathBuf};

use anyhow::bail;
use ferrozone_domain::time::Timestamp;
use ferrozone_store::sqlite::backup::{self, Contents};

use crate::config::Config;

/// Copies the configured database, live, to `out` and checks the copy.
pub fn backup(config: &Config, out: &Path, force: bool) -> anyhow::Result<()> {
    let database = sqlite_file(config, "pg_dump -Fc")?;
    let contents = backup::backup(&database, out, force)?;
    println!("backed up {} to {}", database.display(), out.display());
    print_contents(&contents);
    eprintln!("{}", keep_the_key(config));
    Ok(())
}

/// Replaces the configured database with the checked backup `file`, unless a `serve` runs on it.
pub fn restore(config: &Config, file: &Path) -> anyhow::Result<()> {
    let database = sqlite_file(config, "pg_restore")?;
    crate::startup::create_data_dir(&config.data_dir)?;
    let _lock = crate::serve_lock::acquire(&database, crate::serve_lock::Mode::Exclusive)?.map_err(|_| {
        anyhow::anyhow!(
            "the database {} is in use by a running `ferrozone serve` (or another restore): stop every \
             `serve` on it, then restore",
            database.display()
        )
    })?;
    let restored = backup::restore(file, &database, &stamp(Timestamp::now()))?;
    println!("restored {} into {}", file.display(), database.display());
    print_contents(&restored.contents);
    if let Some(previous) = &restored.previous {
        println!("the database it replaced is kept as {}", previous.display());
    }
    eprintln!(
        "start `ferrozone serve` with the secret key this backup was made with: \
         the stored secrets cannot be read with another"
    );
    Ok(())
}

/// The configured database's file: backups and restores of PostgreSQL are PostgreSQL's own
/// tools' job (`tool`).
fn sqlite_file(config: &Config, tool: &str) -> anyhow::Result<PathBuf> {
    let url = config.database_url();
    let scheme = url.split_once(':').map_or("", |(scheme, _)| scheme).to_ascii_lowercase();
    if scheme == "postgres" || scheme == "postgresql" {
        bail!(
            "the database is PostgreSQL: back it up and restore it with PostgreSQL's tools ({tool}), \
             see \"Backups\" in docs/operations.md; keep the secret key with the dump"
        );
    }
    backup::database_file(&url)
}

fn print_contents(contents: &Contents) {
    println!("schema version {}", contents.schema_version);
    for (what, rows) in &contents.counts {
        println!("{what}: {rows}");
    }
}

/// Where this installation's secret key is, to keep with the backup.
fn keep_the_key(config: &Config) -> String {
    let key = if config.secret_key.is_some() {
        "the value of FERROZONE_SECRET_KEY".to_owned()
    } else if let Some(file) = &config.secret_key_file {
        format!("{} (FERROZONE_SECRET_KEY_FILE)", file.display())
    } else {
        config.data_dir.join("secret.key").display().to_string()
    };
    format!(
        "keep the secret key with this backup: {key}. Without it the secrets sealed in the backup \
         (the server's WireGuard private key, the devices' preshared keys, TOTP secrets, \
         identity-provider secrets and refresh tokens) cannot be read"
    )
}

/// A timestamp for a file name: `20261126T191700Z`.
fn stamp(now: Timestamp) -> String {
    let rfc3339 = now.to_string();
    let seconds = rfc3339.split('.').next().unwrap_or(&rfc3339);
    let digits: String = seconds.chars().filter(|c| *c != '-' && *c != ':').collect();
    format!("{}Z", digits.trim_end_matches('Z'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_are_compact_utc_seconds() {
        assert_eq!(stamp(Timestamp::from_secs(1_764_184_620)), "20251126T191700Z");
    }
}
