//! `ferrozone import firezone` on Firezone installations built by the fixture. They live
//! in PostgreSQL: runs when `FERROZONE_TEST_DATABASE_URL` is set, and fails when it is set
//! but unreachable. Until the store can import, only dry runs are tested.

use std::path::Path;
use std::process::Stdio;

use ferrozone_domain::crypto::Cipher;
use ferrozone_import::firezone::fixture::{self, Installation, Layout};
use ferrozone_import::firezone::schema::UPGRADE_FIRST;

use crate::harness::command;

fn server_url() -> Option<String> {
    let url = std::env::var("FERROZONE_TEST_DATABASE_URL").ok().filter(|u| !u.trim().is_empty());
    if url.is_none() {
        eprintln!("FERROZONE_TEST_DATABASE_URL is not set: the Firezone import tests run in the PostgreSQL pass");
    }
    url
}

fn import(dir: &Path, args: &[&str]) -> (bool, String, String) {
    let out = command(dir, &[]).args(["import", "firezone"]).args(args).stdin(Stdio::null()).output().unwrap();
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

/// The installation's files written into `dir`: (secrets or env file flag, its path, key file).
fn files(fz: &Installation, dir: &Path) -> [String; 4] {
    let (flag, text) = match fz.layout {
        Layout::Docker => ("--env-file", &fz.env_file),
        Layout::Omnibus => ("--secrets-file", &fz.secrets_json),
    };
    let secrets = dir.join("secrets");
    std::fs::write(&secrets, text).unwrap();
    let key = dir.join("private_key");
    std::fs::write(&key, &fz.private_key_file).unwrap();
    [flag.into(), secrets.display().to_string(), "--private-key-file".into(), key.display().to_string()]
}

fn refs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

#[tokio::test]
async fn a_dry_run_prints_the_report_and_writes_nothing() {
    let Some(url) = server_url() else { return };
    let fz = fixture::realistic(&url, Layout::Docker).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut args = vec!["--source-database-url".to_owned(), fz.database.url.clone(), "--dry-run".into()];
    args.extend(files(&fz, dir.path()));
    let (ok, out, err) = import(&data, &refs(&args));
    assert!(ok, "{err}");
    let e = &fz.expected;
    for needle in [
        "user                    7          6".to_owned(),
        "device                  6          6".to_owned(),
        "token                   3          2".to_owned(),
        "totp                    2          1".to_owned(),
        format!("server public key: {}", fz.server_public_key),
        format!("device {}: had no preshared key", e.device_without_psk),
        format!("device {}: its address 192.168.77.7 is outside", e.device_outside),
        format!("totp {}: its payload is not a Cloak", e.junk_mfa),
        format!("user {}: its email differs only in case", e.duplicate_email),
        "  FERROZONE_WIREGUARD_IPV4_NETWORK=100.64.0.0/10".to_owned(),
        "  FERROZONE_WIREGUARD_IPV6_NETWORK=fd00::/106".to_owned(),
        "dry run: nothing was written".to_owned(),
    ] {
        assert!(out.contains(&needle), "missing {needle:?} in\n{out}");
    }
    assert!(!out.contains(&fz.database_encryption_key) && !err.contains(&fz.database_encryption_key));
    assert!(!data.exists(), "a dry run creates nothing");
}

#[tokio::test]
async fn a_dump_is_read_through_a_scratch_database() {
    let Some(url) = server_url() else { return };
    let fz = fixture::realistic(&url, Layout::Omnibus).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("firezone.sql");
    let status = std::process::Command::new("pg_dump")
        .args(["-O", "-x", "-f"])
        .arg(&dump)
        .arg(&fz.database.url)
        .status()
        .unwrap();
    assert!(status.success());
    let mut args = vec![
        "--dump".to_owned(),
        dump.display().to_string(),
        "--scratch-database-url".into(),
        url.clone(),
        "--dry-run".into(),
    ];
    args.extend(files(&fz, dir.path()));
    let (ok, out, err) = import(&dir.path().join("data"), &refs(&args));
    assert!(ok, "{err}");
    assert!(out.contains("device                  6          6"), "{out}");
    assert!(!out.contains("FERROZONE_WIREGUARD"), "Omnibus networks are Ferrozone's defaults:\n{out}");

    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&url).await.unwrap();
    let left: i64 = sqlx::query_scalar("SELECT count(*) FROM pg_database WHERE datname LIKE 'ferrozone_import_%'")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(left, 0, "the scratch database is dropped");
}

#[tokio::test]
async fn a_wrong_key_and_an_old_schema_are_clear_errors() {
    let Some(url) = server_url() else { return };
    let fz = fixture::realistic(&url, Layout::Omnibus).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let wrong = Cipher::generate_key();
    let mut args = vec!["--source-database-url".to_owned(), fz.database.url.clone(), "--dry-run".into()];
    args.extend(files(&fz, dir.path()));
    args.extend(["--database-encryption-key".to_owned(), wrong]);
    let (ok, _, err) = import(&data, &refs(&args));
    assert!(!ok && err.contains("wrong DATABASE_ENCRYPTION_KEY"), "{err}");

    let (old, mut conn) = fixture::empty(&url).await.unwrap();
    sqlx::query("DELETE FROM schema_migrations WHERE version = 20230317161258").execute(&mut conn).await.unwrap();
    let args =
        ["--source-database-url", &old.url, "--database-encryption-key", &fz.database_encryption_key, "--dry-run"];
    let (ok, _, err) = import(&data, &args);
    assert!(!ok && err.contains(UPGRADE_FIRST), "{err}");
}
