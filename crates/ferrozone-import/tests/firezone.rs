//! Reading Firezone installations built in PostgreSQL by the fixture. Runs when
//! `FERROZONE_TEST_DATABASE_URL` is set (its server hosts the fixture databases); a set
//! but unreachable URL fails the tests.

// Helpers outside #[test] functions unwrap too: a failure is the test's failure.
#![allow(clippy::unwrap_used)]

use ferrozone_domain::crypto::{Cipher, Sealed};
use ferrozone_domain::import::ImportBatch;
use ferrozone_domain::Settings;
use ferrozone_import::firezone::fixture::{self, Installation, Layout};
use ferrozone_import::firezone::report::Report;
use ferrozone_import::firezone::schema::UPGRADE_FIRST;
use ferrozone_import::firezone::secrets::{ServerKey, Variables, DATABASE_ENCRYPTION_KEY};
use ferrozone_import::firezone::{convert::ZERO_PSK, prepare};
use sqlx::Connection;

fn server_url() -> Option<String> {
    let url = std::env::var("FERROZONE_TEST_DATABASE_URL").ok().filter(|u| !u.trim().is_empty());
    if url.is_none() {
        eprintln!("FERROZONE_TEST_DATABASE_URL is not set: the Firezone source tests run in the PostgreSQL pass");
    }
    url
}

fn variables(fz: &Installation) -> Variables {
    match fz.layout {
        Layout::Docker => Variables::from_env_file(&fz.env_file).unwrap(),
        Layout::Omnibus => Variables::from_secrets_json(&fz.secrets_json).unwrap(),
    }
}

async fn run(fz: &Installation, vars: &Variables, cipher: &Cipher) -> anyhow::Result<(ImportBatch, Report)> {
    let key = ServerKey::from_file_text(&fz.private_key_file).unwrap();
    prepare(&fz.database.url, vars, Some(&key), cipher, &Settings::standard().pools).await
}

#[tokio::test]
async fn a_docker_installation_reads_with_every_malformed_case_reported() {
    let Some(url) = server_url() else { return };
    let fz = fixture::realistic(&url, Layout::Docker).await.unwrap();
    let cipher = Cipher::from_base64(&Cipher::generate_key()).unwrap();
    let (batch, report) = run(&fz, &variables(&fz), &cipher).await.unwrap();
    let e = &fz.expected;
    assert_eq!(report.count("user"), Some((e.users, e.users - 1)), "{report}");
    assert_eq!(report.count("device"), Some((e.devices, e.devices)), "{report}");
    assert_eq!(report.count("token"), Some((e.tokens, e.tokens - 1)), "one has expired: {report}");
    assert_eq!(report.count("rule"), Some((e.rules, e.rules)), "{report}");
    assert_eq!(report.count("oidc_connection"), Some((1, 1)), "{report}");
    assert_eq!(report.count("totp"), Some((e.mfa_methods, 1)), "{report}");
    let text = report.to_string();
    for needle in [
        format!("user {}: its email differs only in case", e.duplicate_email),
        format!("device {}: had no preshared key", e.device_without_psk),
        format!("device {}: its address 192.168.77.7 is outside", e.device_outside),
        format!("totp {}: its payload is not a Cloak", e.junk_mfa),
        "FERROZONE_WIREGUARD_IPV4_NETWORK=100.64.0.0/10".to_owned(),
        "FERROZONE_WIREGUARD_IPV6_ADDRESS=fd00::1".to_owned(),
        format!("server public key: {}", fz.server_public_key),
    ] {
        assert!(text.contains(&needle), "missing {needle:?} in\n{text}");
    }
    let zero = batch.devices.iter().find(|d| d.id == e.device_without_psk).unwrap();
    assert_eq!(cipher.open_str(&zero.preshared_key).unwrap(), ZERO_PSK);
    let split = batch.devices.iter().find(|d| d.name == "carol-split").unwrap();
    assert_eq!(split.custom.allowed_ips, ["10.0.0.0/8", "192.168.1.1"]);
    assert_eq!(split.custom.mtu, Some(1380));
    let ranges: Vec<_> = batch.rules.iter().map(|r| r.ports.as_ref().map(|p| p.range.clone())).collect();
    assert_eq!(ranges, [None, Some("80 - 443".to_owned()), Some("53".to_owned())]);
    assert_eq!(batch.rules[2].destination, "1.1.1.1/24", "host bits kept");
    assert_eq!(cipher.open(&batch.totp[0].sealed_secret).unwrap().as_slice(), e.totp_secret);
    assert_eq!(cipher.open_str(&batch.oidc_connections[0].refresh_token).unwrap(), "refresh-token-of-carol");
    let admin = batch.users.iter().find(|u| u.email == "admin@example.com").unwrap();
    assert!(admin.password_hash.as_deref().unwrap().starts_with("$argon2id$v=19$m=131072,t=8,p=4$"));
    let row = |key: &str| batch.settings.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone()).unwrap();
    assert_eq!(row("configuration.default_client_endpoint"), br#""vpn.example.com:51820""#);
    let providers = cipher.open(&Sealed(row("configuration.openid_connect_providers"))).unwrap();
    assert!(String::from_utf8_lossy(&providers).contains("\"id\":\"google\""));
    fz.database.drop_now().await.unwrap();
}

#[tokio::test]
async fn an_omnibus_installation_on_the_default_networks_needs_no_settings() {
    let Some(url) = server_url() else { return };
    let fz = fixture::realistic(&url, Layout::Omnibus).await.unwrap();
    let cipher = Cipher::from_base64(&Cipher::generate_key()).unwrap();
    let (_, report) = run(&fz, &variables(&fz), &cipher).await.unwrap();
    assert!(report.settings_to_set.is_empty(), "{report}");
    let outside: Vec<_> = report.warnings.iter().filter(|w| w.reason.contains("outside")).collect();
    assert_eq!(outside.len(), 1, "{report}");
    assert_eq!(outside[0].id, fz.expected.device_outside.to_string());
}

#[tokio::test]
async fn a_wrong_encryption_key_is_a_clear_error() {
    let Some(url) = server_url() else { return };
    let fz = fixture::realistic(&url, Layout::Omnibus).await.unwrap();
    let mut vars = variables(&fz);
    vars.set(DATABASE_ENCRYPTION_KEY, &Cipher::generate_key());
    let cipher = Cipher::from_base64(&Cipher::generate_key()).unwrap();
    let err = run(&fz, &vars, &cipher).await.unwrap_err().to_string();
    assert!(err.starts_with("wrong DATABASE_ENCRYPTION_KEY"), "{err}");
}

#[tokio::test]
async fn an_older_schema_is_refused_with_the_upgrade_advice() {
    let Some(url) = server_url() else { return };
    let (database, mut conn) = fixture::empty(&url).await.unwrap();
    let vars = Variables::from_env_file(&format!("{DATABASE_ENCRYPTION_KEY}={}", Cipher::generate_key())).unwrap();
    let cipher = Cipher::from_base64(&Cipher::generate_key()).unwrap();
    let pools = Settings::standard().pools;
    sqlx::query("DELETE FROM schema_migrations WHERE version = 20230317161258").execute(&mut conn).await.unwrap();
    let err = prepare(&database.url, &vars, None, &cipher, &pools).await.unwrap_err().to_string();
    assert!(err.contains("migration 20230317161258 has not run") && err.ends_with(UPGRADE_FIRST), "{err}");
    // Before 0.7.14, device DNS servers were one comma-separated string.
    sqlx::query("ALTER TABLE devices ALTER COLUMN dns DROP DEFAULT, ALTER COLUMN dns TYPE varchar(255) USING ''")
        .execute(&mut conn)
        .await
        .unwrap();
    let err = prepare(&database.url, &vars, None, &cipher, &pools).await.unwrap_err().to_string();
    assert!(err.contains("devices.dns is not ARRAY") && err.ends_with(UPGRADE_FIRST), "{err}");
    sqlx::query("DROP TABLE devices CASCADE").execute(&mut conn).await.unwrap();
    let err = prepare(&database.url, &vars, None, &cipher, &pools).await.unwrap_err().to_string();
    assert!(err.contains("no Firezone schema"), "{err}");
    conn.close().await.unwrap();
}

#[tokio::test]
async fn a_bulk_installation_reads_whole() {
    let Some(url) = server_url() else { return };
    let fz = fixture::bulk(&url, 20, 150).await.unwrap();
    let cipher = Cipher::from_base64(&Cipher::generate_key()).unwrap();
    let (batch, report) = run(&fz, &variables(&fz), &cipher).await.unwrap();
    assert_eq!(report.count("user"), Some((20, 20)), "{report}");
    assert_eq!(report.count("device"), Some((150, 150)), "{report}");
    assert!(report.skipped.is_empty(), "{report}");
    assert!(batch.devices.iter().all(|d| d.ipv4.is_some_and(|a| a.octets()[0] == 100)));
}
