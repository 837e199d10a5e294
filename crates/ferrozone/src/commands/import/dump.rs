//! Loading a plain-SQL dump into the scratch database with `psql`, after
//! [`ferrozone_import::dump::check`] accepted it: as a role that cannot reach beyond its own
//! databases, and, with a psql that has it, in psql's restricted mode (no meta-command).

use std::path::Path;
use std::process::Stdio;

use anyhow::{bail, Context};
use ferrozone_import::scratch::{redacted, role_powers};
use tokio::io::AsyncWriteExt;

/// Refuses a scratch role that can run programs on the database server or read and write
/// its files (or grant itself that), unless `allowed`; then it is a loud warning.
pub async fn check_scratch_role(server_url: &str, allowed: bool) -> anyhow::Result<()> {
    let powers = role_powers(server_url).await?;
    if powers.is_empty() {
        return Ok(());
    }
    let what = format!(
        "the role of --scratch-database-url has {}: the dump runs with its rights, which reach beyond the scratch \
         database (programs and files on the database server, other databases)",
        powers.join(", ")
    );
    if !allowed {
        bail!(
            "{what}. Give a role with CREATEDB only (docs/migrating-from-firezone.md), or add \
             --allow-privileged-scratch-role if the dump is trusted"
        );
    }
    eprintln!("WARNING: {what}; going on because of --allow-privileged-scratch-role");
    Ok(())
}

/// Loads `dump` into the database at `url`, stopping at the first error. Nothing of it runs
/// unless the whole dump passes the check; psql gets the checked bytes on its standard
/// input (never the file again, which could have changed). The password goes in the
/// environment, not on the command line.
pub async fn load(dump: &Path, url: &str) -> anyhow::Result<()> {
    let text = tokio::fs::read(dump).await.with_context(|| format!("reading the dump {}", dump.display()))?;
    let sql = ferrozone_import::dump::check(&text).map_err(|refused| {
        anyhow::anyhow!(
            "the dump {} is refused, and nothing of it was run: {refused} (psql would run it; a dump is loaded as \
             plain SQL and table data only)",
            dump.display()
        )
    })?;
    let mut parsed = url::Url::parse(url).context("the scratch database URL")?;
    let password = parsed.password().map(str::to_owned);
    let _ = parsed.set_password(None);
    let mut psql = tokio::process::Command::new("psql");
    psql.args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", parsed.as_str()]);
    if has_restrict(&psql_version().await?) {
        psql.arg("-c").arg(format!("\\restrict {}", uuid::Uuid::new_v4().simple()));
    }
    psql.args(["-f", "-"]).stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::piped());
    if let Some(password) = password {
        psql.env("PGPASSWORD", url_decode(&password));
    }
    let mut child = psql.spawn().context("running psql (install the PostgreSQL client) to load the dump")?;
    let mut stdin = child.stdin.take().context("psql's standard input")?;
    let feed = async move {
        // psql stops reading at its first error: the error is in its exit status.
        let _ = stdin.write_all(&sql).await;
    };
    let (_, out) = tokio::join!(feed, child.wait_with_output());
    let out = out.context("waiting for psql")?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        bail!("psql could not load {} into {}: {}", dump.display(), redacted(url), stderr.trim());
    }
    Ok(())
}

async fn psql_version() -> anyhow::Result<String> {
    let out = tokio::process::Command::new("psql")
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .await
        .context("running psql (install the PostgreSQL client) to load the dump")?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Whether the psql of `psql --version`'s output has `\restrict` (17.6, 16.10, 15.14,
/// 14.19, 13.22 and later).
fn has_restrict(version: &str) -> bool {
    let Some(number) = version.split_whitespace().find(|w| w.starts_with(|c: char| c.is_ascii_digit())) else {
        return false;
    };
    let mut parts = number.split('.').map(|p| p.chars().take_while(char::is_ascii_digit).collect::<String>());
    let major: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let minor: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    match major {
        18.. => true,
        17 => minor >= 6,
        16 => minor >= 10,
        15 => minor >= 14,
        14 => minor >= 19,
        13 => minor >= 22,
        _ => false,
    }
}

/// A URL's percent-encoded component (`p%40ss`) as the text it stands for (`p@ss`).
fn url_decode(text: &str) -> String {
    let (bytes, mut out) = (text.as_bytes(), Vec::with_capacity(text.len()));
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%').then(|| text.get(i + 1..i + 3)).flatten();
        match escaped.and_then(|hex| u8::from_str_radix(hex, 16).ok()) {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_passwords_are_decoded() {
        assert_eq!(url_decode("p%40ss%2Fw%zz%4"), "p@ss/w%zz%4");
    }

    #[test]
    fn restricted_mode_is_used_from_the_releases_that_have_it() {
        for yes in
            ["psql (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)", "psql (PostgreSQL) 17.6", "psql (PostgreSQL) 18beta1"]
        {
            assert!(has_restrict(yes), "{yes}");
        }
        for no in ["psql (PostgreSQL) 15.13", "psql (PostgreSQL) 16.9", "psql (PostgreSQL) 12.22", ""] {
            assert!(!has_restrict(no), "{no}");
        }
    }
}
