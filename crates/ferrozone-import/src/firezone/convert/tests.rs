use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use ferrozone_domain::crypto::generate_keypair;
use ferrozone_domain::Settings;

use super::*;
use crate::firezone::read::{FzConfiguration, FzMfaMethod};
use crate::firezone::secrets::Variables;

const NOW: i64 = 1_790_000_000_000_000;

struct Fixture {
    cloak: CloakKey,
    cipher: Cipher,
    server_key: ServerKey,
}

impl Fixture {
    fn new() -> Self {
        Self {
            cloak: CloakKey::from_base64(&STANDARD.encode([3u8; 32])).unwrap(),
            cipher: Cipher::from_base64(&Cipher::generate_key()).unwrap(),
            server_key: ServerKey::from_file_text(&generate_keypair().private_key).unwrap(),
        }
    }

    fn keys(&self) -> Keys<'_> {
        Keys {
            cloak: &self.cloak,
            cipher: &self.cipher,
            guardian_secret_key: Some("guardian"),
            server_key: Some(&self.server_key),
        }
    }

    fn run(&self, source: &Source) -> anyhow::Result<(ImportBatch, Report)> {
        self.run_with(source, &self.keys())
    }

    fn run_with(&self, source: &Source, keys: &Keys<'_>) -> anyhow::Result<(ImportBatch, Report)> {
        let networks = TunnelNetworks::from_variables(&Variables::default()).unwrap();
        convert(source, keys, &networks, &Settings::standard().pools, Timestamp::from_micros(NOW))
    }
}

fn user(email: &str) -> FzUser {
    FzUser {
        id: Uuid::new_v4(),
        email: Some(email.into()),
        password_hash: Some("$argon2id$v=19$m=131072,t=8,p=4$c2FsdA$aGFzaA".into()),
        role: "admin".into(),
        last_signed_in_at: None,
        last_signed_in_method: None,
        disabled_at: None,
        inserted_at: 1,
        updated_at: 2,
    }
}

fn device(f: &Fixture, user_id: Uuid, ipv4: &str, psk: Option<&str>) -> FzDevice {
    FzDevice {
        id: Uuid::new_v4(),
        user_id,
        name: "laptop".into(),
        description: None,
        public_key: generate_keypair().public_key,
        preshared_key: psk.map(|p| f.cloak.seal(p.as_bytes())),
        ipv4: Some(ipv4.into()),
        ipv6: Some("fd00::3:2:2".into()),
        allowed_ips: vec!["10.0.0.0/8".into()],
        dns: vec!["9.9.9.9".into()],
        endpoint: None,
        mtu: Some(1400),
        persistent_keepalive: None,
        use_default_allowed_ips: false,
        use_default_dns: true,
        use_default_endpoint: true,
        use_default_mtu: false,
        use_default_persistent_keepalive: true,
        remote_ip: None,
        latest_handshake: None,
        rx_bytes: Some(5),
        tx_bytes: None,
        inserted_at: 3,
        updated_at: 4,
    }
}

fn mfa(f: &Fixture, user_id: Uuid, payload: Vec<u8>, last_used_at: i64) -> FzMfaMethod {
    let _ = f;
    FzMfaMethod { id: Uuid::new_v4(), user_id, kind: "totp".into(), payload, last_used_at, inserted_at: 7 }
}

const PSK: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";

#[test]
fn users_devices_and_keys_are_carried_over() {
    let f = Fixture::new();
    let u = user("Ann@Example.com");
    let d = device(&f, u.id, "10.3.2.2", Some(PSK));
    let source = Source { users: vec![u.clone()], devices: vec![d.clone()], ..Source::default() };
    let (batch, report) = f.run(&source).unwrap();
    assert_eq!(batch.users[0].email, "Ann@Example.com");
    assert_eq!(batch.users[0].password_hash, u.password_hash);
    let imported = &batch.devices[0];
    assert_eq!(f.cipher.open_str(&imported.preshared_key).unwrap(), PSK);
    assert_eq!(imported.ipv4, Some("10.3.2.2".parse().unwrap()));
    assert_eq!(imported.custom.allowed_ips, ["10.0.0.0/8"]);
    assert_eq!(imported.custom.dns, Vec::<String>::new(), "dns follows the default");
    assert_eq!(imported.custom.mtu, Some(1400));
    assert_eq!(report.count("device"), Some((1, 1)));
    assert!(report.skipped.is_empty(), "{report}");
    assert!(report.warnings.iter().all(|w| w.kind == "configuration"), "no configuration row only: {report}");
    let key = batch.settings.iter().find(|(k, _)| k == SERVER_KEY_SETTING).unwrap();
    assert_eq!(f.cipher.open_str(&ferrozone_domain::crypto::Sealed(key.1.clone())).unwrap(), *f.server_key.private_key);
    assert!(batch.settings.iter().any(|(k, _)| k == LEGACY_TOKEN_SECRET_SETTING));
}

#[test]
fn malformed_rows_are_reported_not_fatal() {
    let f = Fixture::new();
    let (a, b) = (user("a@example.com"), user("A@EXAMPLE.com"));
    let no_psk = device(&f, a.id, "10.3.2.3", None);
    let outside = device(&f, a.id, "100.64.0.5", Some(PSK));
    let orphan = device(&f, b.id, "10.3.2.4", Some(PSK));
    let junk = mfa(&f, a.id, b"bm90IGEgY2xvYWsgdmFsdWU=".to_vec(), 0);
    let source = Source {
        users: vec![a, b],
        devices: vec![no_psk.clone(), outside.clone(), orphan.clone()],
        mfa_methods: vec![junk.clone()],
        ..Source::default()
    };
    let (batch, report) = f.run(&source).unwrap();
    assert_eq!(report.count("user"), Some((2, 1)));
    assert_eq!(report.count("device"), Some((3, 2)));
    assert_eq!(report.count("totp"), Some((1, 0)));
    let zero = batch.devices.iter().find(|d| d.id == no_psk.id).unwrap();
    assert_eq!(f.cipher.open_str(&zero.preshared_key).unwrap(), ZERO_PSK);
    let text = report.to_string();
    assert!(text.contains("differs only in case"), "{text}");
    assert!(text.contains(&format!("{}: had no preshared key", no_psk.id)), "{text}");
    assert!(text.contains("100.64.0.5 is outside the source's tunnel networks"), "{text}");
    assert!(text.contains(&format!("device {}: its user", orphan.id)), "{text}");
    assert!(text.contains(&format!("totp {}: its payload is not a Cloak", junk.id)), "{text}");
    assert_eq!(STANDARD.decode(ZERO_PSK).unwrap(), [0u8; 32]);
}

#[test]
fn a_wrong_key_is_an_error_and_a_damaged_value_is_not() {
    let f = Fixture::new();
    let u = user("a@example.com");
    let good = device(&f, u.id, "10.3.2.2", Some(PSK));
    let mut damaged = device(&f, u.id, "10.3.2.3", Some(PSK));
    damaged.preshared_key.as_mut().unwrap()[30] ^= 1;
    let source = Source { users: vec![u], devices: vec![good, damaged.clone()], ..Source::default() };
    let (_, report) = f.run(&source).unwrap();
    assert_eq!(report.skipped.len(), 1);
    assert_eq!(report.skipped[0].id, damaged.id.to_string());
    let other = CloakKey::from_base64(&STANDARD.encode([4u8; 32])).unwrap();
    let err = f.run_with(&source, &Keys { cloak: &other, ..f.keys() }).unwrap_err();
    assert!(err.to_string().starts_with("wrong DATABASE_ENCRYPTION_KEY"), "{err}");
}

#[test]
fn one_authenticator_per_user_the_most_recently_used() {
    let f = Fixture::new();
    let u = user("a@example.com");
    let payload = |secret: &[u8]| f.cloak.seal(format!(r#"{{"secret":"{}"}}"#, STANDARD.encode(secret)).as_bytes());
    let old = mfa(&f, u.id, payload(&[1; 20]), 30_000_000);
    let recent = mfa(&f, u.id, payload(&[2; 20]), 90_000_000);
    let source = Source { users: vec![u.clone()], mfa_methods: vec![old.clone(), recent], ..Source::default() };
    let (batch, report) = f.run(&source).unwrap();
    assert_eq!(batch.totp.len(), 1);
    assert_eq!(f.cipher.open(&batch.totp[0].sealed_secret).unwrap().as_slice(), [2; 20]);
    assert_eq!(batch.totp[0].last_step, Some(3));
    assert_eq!(report.skipped[0].id, old.id.to_string());
}

#[test]
fn rules_tokens_and_missing_secrets() {
    let f = Fixture::new();
    let u = user("a@example.com");
    let rule = |range: Option<(i32, i32)>| FzRule {
        id: Uuid::new_v4(),
        user_id: None,
        destination: "10.0.0.0/8".into(),
        action: "accept".into(),
        port_type: range.map(|_| "tcp".into()),
        port_range: range,
        inserted_at: 1,
        updated_at: 1,
    };
    let token = |expires_at| FzApiToken { id: Uuid::new_v4(), user_id: u.id, expires_at, inserted_at: 1 };
    let source = Source {
        users: vec![u.clone()],
        rules: vec![rule(Some((80, 443))), rule(Some((22, 22))), rule(None)],
        api_tokens: vec![token(None), token(Some(NOW - 1)), token(Some(NOW + 1))],
        ..Source::default()
    };
    let (batch, report) = f.run(&source).unwrap();
    let ranges: Vec<_> = batch.rules.iter().map(|r| r.ports.as_ref().map(|p| p.range.as_str())).collect();
    assert_eq!(ranges, [Some("80 - 443"), Some("22"), None]);
    assert_eq!(report.count("token"), Some((3, 2)));
    let keys = Keys { guardian_secret_key: None, server_key: None, ..f.keys() };
    let (batch, report) = f.run_with(&source, &keys).unwrap();
    assert!(batch.tokens.is_empty() && batch.settings.is_empty());
    let text = report.to_string();
    assert!(text.contains("GUARDIAN_SECRET_KEY was not given") && text.contains("no private key file"), "{text}");
}

#[test]
fn the_configuration_becomes_settings_rows() {
    let f = Fixture::new();
    let oidc = serde_json::json!([{"id": "google", "label": "Google", "scope": "openid email profile",
        "response_type": "code", "client_id": "c", "client_secret": "s", "auto_create_users": true,
        "discovery_document_uri": "https://accounts.google.com/.well-known/openid-configuration",
        "redirect_uri": null}]);
    let c = FzConfiguration {
        id: Uuid::new_v4(),
        local_auth_enabled: Some(false),
        allow_unprivileged_device_management: None,
        allow_unprivileged_device_configuration: Some(true),
        disable_vpn_on_oidc_error: Some(true),
        default_client_persistent_keepalive: Some(25),
        default_client_mtu: Some(9000),
        default_client_endpoint: Some("vpn.example:51820".into()),
        default_client_dns: vec!["1.1.1.1".into()],
        default_client_allowed_ips: vec!["0.0.0.0/0".into()],
        vpn_session_duration: 3600,
        openid_connect_providers: oidc.to_string(),
        saml_identity_providers: "{}".into(),
        inserted_at: 1,
        updated_at: 2,
    };
    let (batch, report) = f.run(&Source { configurations: vec![c], ..Source::default() }).unwrap();
    let row = |key: &str| batch.settings.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
    assert_eq!(row("configuration.local_auth_enabled").unwrap(), b"false");
    assert_eq!(row("configuration.vpn_session_duration").unwrap(), b"3600");
    assert_eq!(row("configuration.allow_unprivileged_device_management"), None);
    assert_eq!(row("configuration.default_client_mtu"), None, "out of Ferrozone's range");
    assert!(report.to_string().contains("configuration default_client_mtu:"), "{report}");
    let sealed = row("configuration.openid_connect_providers").unwrap();
    let opened = f.cipher.open(&ferrozone_domain::crypto::Sealed(sealed)).unwrap();
    assert_eq!(serde_json::from_slice::<serde_json::Value>(&opened).unwrap(), oidc);
    assert_eq!(row("configuration.saml_identity_providers"), None);
}

#[test]
fn devices_are_checked_as_the_api_checks_them() {
    let f = Fixture::new();
    let u = user("a@example.com");
    let mut endpoint = device(&f, u.id, "10.3.2.2", Some(PSK));
    (endpoint.use_default_endpoint, endpoint.endpoint) = (false, Some("a\nPostUp = touch /tmp/pwn".into()));
    let mut dns = device(&f, u.id, "10.3.2.3", Some(PSK));
    (dns.use_default_dns, dns.dns) = (false, vec!["1.1.1.1\nPreUp = id".into()]);
    let mut mtu = device(&f, u.id, "10.3.2.4", Some(PSK));
    mtu.mtu = Some(9000);
    let mut trimmed = device(&f, u.id, "10.3.2.5", Some(PSK));
    (trimmed.use_default_endpoint, trimmed.endpoint) = (false, Some(" vpn.example.com:51820\n".into()));
    let source = Source {
        users: vec![u],
        devices: vec![endpoint.clone(), dns.clone(), mtu.clone(), trimmed.clone()],
        ..Source::default()
    };
    let (batch, report) = f.run(&source).unwrap();
    assert_eq!(report.count("device"), Some((4, 1)), "{report}");
    let text = report.to_string();
    for (d, reason) in [(endpoint, "its endpoint is invalid"), (dns, "its dns is invalid"), (mtu, "its mtu must be")] {
        assert!(text.contains(&format!("device {}: {reason}", d.id)), "{reason}: {text}");
    }
    assert_eq!(batch.devices[0].id, trimmed.id);
    assert_eq!(batch.devices[0].custom.endpoint.as_deref(), Some("vpn.example.com:51820"), "stored as the API would");
}

#[test]
fn a_password_hash_asking_for_too_much_work_is_not_imported() {
    let f = Fixture::new();
    let mut huge = user("huge@example.com");
    huge.password_hash =
        Some("$argon2id$v=19$m=4194304,t=3,p=4$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g".into());
    let firezone = user("fz@example.com");
    let (batch, report) = f.run(&Source { users: vec![huge, firezone.clone()], ..Source::default() }).unwrap();
    assert_eq!(batch.users[0].password_hash, None, "imported without a password");
    assert_eq!(batch.users[1].password_hash, firezone.password_hash, "Firezone's own parameters are kept");
    let text = report.to_string();
    assert!(
        text.contains("user huge@example.com: its argon2 hash asks for more") && text.contains("must set a new one"),
        "{text}"
    );
}
