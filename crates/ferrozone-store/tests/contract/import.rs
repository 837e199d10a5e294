//! Importing a whole installation: all or nothing, fresh or merged, nothing overwritten.

use std::net::{Ipv4Addr, Ipv6Addr};

use ferrozone_domain::crypto::generate_keypair;
use ferrozone_domain::egress::{Rule, RuleAction};
use ferrozone_domain::import::{ImportBatch, ImportMode, ImportedToken, ImportedTotp, Skipped};
use ferrozone_domain::model::{ApiToken, CustomConfig, Device, OidcConnection, PeerStats, Role, UseDefaults, User};
use ferrozone_domain::service::SERVER_KEY_SETTING;
use ferrozone_domain::store::{DeviceQuery, TokenPage};
use ferrozone_domain::{DomainError, Timestamp};
use ferrozone_store::testing::TestDb;
use uuid::Uuid;

use crate::support::{add_user, assert_invalid, cipher, db, new_device, pools, user};

/// A device of `user_id` as the source had it: addresses `10.9.<n>` / `fd00:9::<n>`.
fn device(user_id: Uuid, n: u16) -> Device {
    let at = Timestamp::from_secs(1_600_000_000 + i64::from(n));
    Device {
        id: Uuid::new_v4(),
        user_id,
        name: format!("laptop-{n}"),
        description: Some("imported".into()),
        public_key: generate_keypair().public_key,
        preshared_key: cipher().seal(b"psk"),
        ipv4: Some(Ipv4Addr::new(10, 9, (n >> 8) as u8, n as u8)),
        ipv6: Some(Ipv6Addr::new(0xfd00, 9, 0, 0, 0, 0, 0, n)),
        use_default: UseDefaults { mtu: false, ..UseDefaults::default() },
        custom: CustomConfig { mtu: Some(1380), ..CustomConfig::default() },
        stats: PeerStats {
            latest_handshake: Some(at.plus_secs(60)),
            remote_ip: Some("198.51.100.7".into()),
            rx_bytes: Some(1234),
            tx_bytes: Some(5678),
        },
        paused_at: None,
        inserted_at: at,
        updated_at: at.plus_secs(1),
    }
}

fn rule(user_id: Option<Uuid>, destination: &str) -> Rule {
    let at = Timestamp::from_secs(1_600_000_000);
    Rule {
        id: Uuid::new_v4(),
        user_id,
        group_id: None,
        destination: destination.into(),
        action: RuleAction::Drop,
        ports: None,
        inserted_at: at,
        updated_at: at,
    }
}

/// Two users (one with a password hash, an authenticator, a provider sign-in and a token),
/// three devices, two rules, the server key and a configuration row.
fn batch() -> ImportBatch {
    let now = Timestamp::now();
    let alice = User::new("Alice@Example.com".into(), Role::Admin, Some("$argon2id$v=19$…".into()), now);
    let bob = User::new("bob@example.com".into(), Role::Unprivileged, None, now);
    ImportBatch {
        devices: vec![device(alice.id, 2), device(alice.id, 3), device(bob.id, 4)],
        tokens: vec![ImportedToken {
            id: Uuid::new_v4(),
            user_id: alice.id,
            inserted_at: now,
            expires_at: Some(now.plus_days(30)),
        }],
        rules: vec![rule(None, "192.0.2.0/24"), rule(Some(bob.id), "198.51.100.0/24")],
        oidc_connections: vec![OidcConnection {
            user_id: bob.id,
            provider_id: "google".into(),
            refresh_token: cipher().seal(b"refresh"),
            refreshed_at: now,
            inserted_at: now,
            updated_at: now,
        }],
        totp: vec![ImportedTotp {
            user_id: alice.id,
            sealed_secret: cipher().seal(b"12345678901234567890"),
            confirmed_at: now,
            last_step: Some(42),
        }],
        settings: vec![
            (SERVER_KEY_SETTING.into(), b"imported server key".to_vec()),
            ("configuration.default_client_mtu".into(), b"1380".to_vec()),
        ],
        users: vec![alice, bob],
    }
}

/// Everything an import may write, as the store reads it back.
#[derive(Debug, PartialEq)]
struct Snapshot {
    users: Vec<User>,
    devices: Vec<Device>,
    tokens: Vec<(ApiToken, User)>,
    rules: Vec<Rule>,
    oidc: Vec<OidcConnection>,
    server_key: Option<Vec<u8>>,
    counts: Vec<Option<u64>>,
}

async fn snapshot(db: &TestDb) -> Snapshot {
    let store = &db.store;
    let users = store.list_users().await.unwrap();
    let mut counts = Vec::new();
    for user in &users {
        counts.push(store.user_device_count(user.id).await.unwrap());
    }
    let mut rules = store.list_rules().await.unwrap();
    rules.sort_by_key(|r| r.id);
    let mut oidc = store.list_oidc_connections().await.unwrap();
    oidc.sort_by_key(|c| c.user_id);
    Snapshot {
        devices: store.list_devices(&DeviceQuery::default()).await.unwrap(),
        tokens: store.list_all_tokens(TokenPage { after: None, limit: 1000 }).await.unwrap(),
        server_key: store.setting(SERVER_KEY_SETTING).await.unwrap(),
        users,
        rules,
        oidc,
        counts,
    }
}

#[tokio::test]
async fn a_fresh_import_writes_everything_as_it_was() {
    let db = db().await;
    db.store.init_setting(SERVER_KEY_SETTING, b"generated at start").await.unwrap();
    let batch = batch();
    let outcome = db.store.import(&batch, ImportMode::Fresh).await.unwrap();
    assert_eq!(
        (outcome.users, outcome.devices, outcome.tokens, outcome.rules, outcome.oidc_connections, outcome.totp),
        (2, 3, 1, 2, 1, 1)
    );
    assert_eq!(outcome.skipped, []);

    let (alice, bob) = (&batch.users[0], &batch.users[1]);
    assert_eq!(db.store.user_by_id(alice.id).await.unwrap().as_ref(), Some(alice));
    assert_eq!(db.store.user_by_email("alice@example.com").await.unwrap().as_ref(), Some(alice));
    for device in &batch.devices {
        assert_eq!(db.store.device_by_id(device.id).await.unwrap().as_ref(), Some(device), "kept as it was");
    }
    assert_eq!(db.store.user_device_count(alice.id).await.unwrap(), Some(2));
    assert_eq!(db.store.user_device_count(bob.id).await.unwrap(), Some(1));

    let tokens = db.store.list_tokens(alice.id).await.unwrap();
    assert_eq!(tokens.len(), 1);
    let token = &tokens[0];
    assert_eq!(
        (token.id, token.name.as_str(), token.is_imported()),
        (batch.tokens[0].id, "Imported from Firezone", true)
    );
    assert_eq!(Some(token.expires_at), batch.tokens[0].expires_at);
    assert_eq!(token.inserted_at, batch.tokens[0].inserted_at);
    assert_eq!(db.store.token_by_hash(&[]).await.unwrap(), None, "an imported token has no hash to find");

    let mut rules = db.store.list_rules().await.unwrap();
    rules.sort_by_key(|r| r.id);
    let mut expected = batch.rules.clone();
    expected.sort_by_key(|r| r.id);
    assert_eq!(rules, expected);
    assert_eq!(db.store.list_oidc_connections().await.unwrap(), batch.oidc_connections);

    let totp = db.store.totp_of(alice.id).await.unwrap().unwrap();
    assert_eq!(totp.sealed_secret, batch.totp[0].sealed_secret);
    assert_eq!((totp.confirmed_at, totp.last_step), (Some(batch.totp[0].confirmed_at), Some(42)));
    assert_eq!(totp.recovery_codes_left, 0);

    assert_eq!(db.store.setting(SERVER_KEY_SETTING).await.unwrap().unwrap(), b"imported server key");
    let mtu = db.store.setting("configuration.default_client_mtu").await.unwrap();
    assert_eq!(mtu.unwrap(), b"1380");

    // A new device after the import gets an address no imported device has.
    let added = db.store.insert_device(&new_device(bob.id), &pools(), 99).await.unwrap();
    assert!(batch.devices.iter().all(|d| d.ipv4 != added.ipv4 && d.public_key != added.public_key));
    assert_eq!(db.store.user_device_count(bob.id).await.unwrap(), Some(2));
}

#[tokio::test]
async fn a_second_fresh_import_is_refused_and_changes_nothing() {
    let db = db().await;
    db.store.import(&batch(), ImportMode::Fresh).await.unwrap();
    let before = snapshot(&db).await;
    let again = db.store.import(&batch(), ImportMode::Fresh).await;
    assert_invalid(again, "database", "already holds users or devices; import into an empty database, or merge");
    assert_eq!(snapshot(&db).await, before);

    // A database with only a user is not empty either.
    let db = crate::support::db().await;
    add_user(&db, "admin@example.com", Role::Admin).await;
    assert!(matches!(db.store.import(&batch(), ImportMode::Fresh).await, Err(DomainError::Invalid(_))));
}

#[tokio::test]
async fn a_merge_skips_what_is_taken_with_what_belongs_to_it_and_says_why() {
    let db = db().await;
    let carol = add_user(&db, "carol@example.com", Role::Admin).await;
    let existing = db.store.insert_device(&new_device(carol.id), &pools(), 99).await.unwrap();
    db.store.insert_rule(&rule(None, "192.0.2.128/25")).await.unwrap();
    db.store.init_setting(SERVER_KEY_SETTING, b"in use").await.unwrap();

    let mut batch = batch();
    // Alice's email is taken (case aside): she is skipped with her devices, token and
    // authenticator. One of Bob's devices has a taken key, another a taken address.
    let taken_email = user("ALICE@example.com", Role::Unprivileged);
    db.store.insert_user(&taken_email).await.unwrap();
    let bob = batch.users[1].id;
    let mut same_key = device(bob, 7);
    same_key.public_key = existing.public_key.clone();
    let mut same_v4 = device(bob, 8);
    same_v4.ipv4 = existing.ipv4;
    batch.devices.extend([same_key.clone(), same_v4.clone()]);
    let before = snapshot(&db).await;

    let outcome = db.store.import(&batch, ImportMode::Merge).await.unwrap();
    assert_eq!((outcome.users, outcome.devices, outcome.tokens, outcome.totp), (1, 1, 0, 0));
    assert_eq!((outcome.rules, outcome.oidc_connections), (1, 1), "Bob's rule; the global one overlaps");
    let alice = &batch.users[0];
    let gone = format!("its user {} is not imported", alice.id);
    let expected = [
        ("user", alice.email.clone(), "a user with this email exists".to_owned()),
        ("device", batch.devices[0].id.to_string(), gone.clone()),
        ("device", batch.devices[1].id.to_string(), gone.clone()),
        ("device", same_key.id.to_string(), "a device with this public key exists".to_owned()),
        ("device", same_v4.id.to_string(), "a device with this IPv4 address exists".to_owned()),
        ("token", batch.tokens[0].id.to_string(), gone.clone()),
        ("totp", alice.id.to_string(), gone),
        (
            "setting",
            SERVER_KEY_SETTING.to_owned(),
            "the database has devices, whose clients use its server key".to_owned(),
        ),
    ];
    let mut skipped: Vec<Skipped> =
        expected.into_iter().map(|(kind, id, reason)| Skipped { kind, id, reason }).collect();
    let overlapping = &outcome.skipped.iter().find(|s| s.kind == "rule").unwrap();
    assert_eq!(overlapping.id, batch.rules[0].id.to_string());
    assert!(overlapping.reason.starts_with("it overlaps rule "), "{}", overlapping.reason);
    skipped.insert(5, (*overlapping).clone());
    let mut got = outcome.skipped.clone();
    got.sort_by(|a, b| (a.kind, &a.id).cmp(&(b.kind, &b.id)));
    skipped.sort_by(|a, b| (a.kind, &a.id).cmp(&(b.kind, &b.id)));
    assert_eq!(got, skipped);

    let after = snapshot(&db).await;
    assert_eq!(after.server_key.as_deref(), Some(&b"in use"[..]), "never overwritten");
    assert_eq!(db.store.user_by_id(taken_email.id).await.unwrap(), Some(taken_email));
    assert_eq!(db.store.user_by_id(alice.id).await.unwrap(), None);
    assert_eq!(db.store.device_by_id(existing.id).await.unwrap(), Some(existing));
    assert_eq!(db.store.device_by_id(batch.devices[2].id).await.unwrap().as_ref(), Some(&batch.devices[2]));
    assert_eq!(after.users.len(), before.users.len() + 1);
    assert_eq!(after.devices.len(), before.devices.len() + 1);
    assert_eq!(db.store.user_device_count(bob).await.unwrap(), Some(1));
}

#[tokio::test]
async fn a_batch_that_fails_midway_leaves_the_database_as_it_was() {
    let db = db().await;
    let carol = add_user(&db, "carol@example.com", Role::Admin).await;
    db.store.insert_device(&new_device(carol.id), &pools(), 99).await.unwrap();
    db.store.init_setting(SERVER_KEY_SETTING, b"in use").await.unwrap();
    let before = snapshot(&db).await;

    // Two devices of the batch share an address: the second insert fails, after the users,
    // the first devices and everything before it were written.
    let mut batch = batch();
    batch.devices[2].ipv4 = batch.devices[0].ipv4;
    let err = db.store.import(&batch, ImportMode::Merge).await.unwrap_err();
    assert!(matches!(&err, DomainError::Invalid(e) if e.has("ipv4")), "{err:?}");
    assert_eq!(snapshot(&db).await, before);
    let mtu = db.store.setting("configuration.default_client_mtu").await.unwrap();
    assert_eq!(mtu, None, "settings come last, and were not written either");

    // A token whose owner is not imported is skipped, not an error.
    let mut orphan = self::batch();
    orphan.tokens[0].user_id = Uuid::new_v4();
    let outcome = db.store.import(&orphan, ImportMode::Merge).await.unwrap();
    assert_eq!(outcome.tokens, 0);
    assert_eq!(outcome.skipped[0].kind, "token");
}

#[tokio::test]
async fn a_token_without_an_expiry_date_is_skipped() {
    let db = db().await;
    let mut batch = batch();
    batch.tokens[0].expires_at = None;
    let outcome = db.store.import(&batch, ImportMode::Fresh).await.unwrap();
    let reason = "it has no expiry date, which Firezone refused";
    assert_eq!(outcome.skipped, [Skipped { kind: "token", id: batch.tokens[0].id.to_string(), reason: reason.into() }]);
}

#[tokio::test]
async fn a_large_batch_lands_completely() {
    let db = db().await;
    let users: Vec<User> = (0..400).map(|i| user(&format!("user{i}@example.com"), Role::Unprivileged)).collect();
    let devices: Vec<Device> = (0..2000u16).map(|n| device(users[usize::from(n) % 400].id, n + 2)).collect();
    let batch = ImportBatch { users, devices, ..ImportBatch::default() };
    let outcome = db.store.import(&batch, ImportMode::Fresh).await.unwrap();
    assert_eq!((outcome.users, outcome.devices), (400, 2000));
    let stored = db.store.list_devices(&DeviceQuery::default()).await.unwrap();
    assert_eq!(stored.len(), 2000);
    let mut stored_ids: Vec<Uuid> = stored.iter().map(|d| d.id).collect();
    let mut ids: Vec<Uuid> = batch.devices.iter().map(|d| d.id).collect();
    stored_ids.sort();
    ids.sort();
    assert_eq!(stored_ids, ids);
    for user in batch.users.iter().step_by(97) {
        assert_eq!(db.store.user_device_count(user.id).await.unwrap(), Some(5));
    }
}
