//! Every write records its event in its own transaction: by the actor and from the origin
//! of the audit context it was called in, with the changed fields and never a secret; a
//! write that fails, or changes nothing, records nothing.

use ferrozone_domain::audit::context::{self, Context};
use ferrozone_domain::audit::{self, Actor, ActorKind, AuditEvent, AuditKey, AuditQuery, Change, Origin};
use ferrozone_domain::model::{DeviceUpdate, Role, Session, User, UserUpdate};
use ferrozone_domain::Timestamp;
use ferrozone_store::testing::TestDb;
use serde_json::json;
use uuid::Uuid;

use crate::rules::rule;
use crate::support::{add_user, assert_invalid, cipher, db, new_device, pools};

fn token_actor(user_id: Uuid) -> Context {
    let actor = Actor { kind: ActorKind::Token, id: Some("token-1".into()), user_id: Some(user_id) };
    Context::new(actor, Origin { client_address: Some("198.51.100.4".into()), request_id: Some("req-9".into()) })
}

/// Every event recorded so far, oldest first, after checking the chain.
async fn events(db: &TestDb) -> Vec<AuditEvent> {
    let records =
        db.store.audit_records(&AuditQuery { after_seq: Some(0), limit: 1000, ..AuditQuery::default() }).await.unwrap();
    let head = db.store.audit_head().await.unwrap();
    audit::verify(&AuditKey::unkeyed(), &head, &records).expect("the chain is intact");
    records.iter().map(|record| record.decode().expect("every record decodes")).collect()
}

fn actions(events: &[AuditEvent]) -> Vec<&str> {
    events.iter().map(|e| e.event.action.as_str()).collect()
}

#[tokio::test]
async fn device_writes_record_the_actor_origin_and_changed_fields() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let as_token = token_actor(alice.id);
    let new = new_device(alice.id);
    let device = context::scope(as_token.clone(), db.store.insert_device(&new, &pools(), 10))
        .await
        .expect("the device is added");
    let mut same_key = new_device(alice.id);
    same_key.public_key = new.public_key.clone();
    let taken = context::scope(as_token.clone(), db.store.insert_device(&same_key, &pools(), 10)).await;
    assert_invalid(taken, "public_key", "has already been taken");

    let unchanged = DeviceUpdate {
        name: device.name.clone(),
        description: device.description.clone(),
        public_key: device.public_key.clone(),
        preshared_key: None,
        ipv4: device.ipv4,
        ipv6: device.ipv6,
        use_default: device.use_default,
        custom: device.custom.clone(),
    };
    context::scope(as_token.clone(), db.store.update_device(device.id, &unchanged, Timestamp::now())).await.unwrap();
    let renamed = DeviceUpdate { name: "phone".into(), preshared_key: Some(cipher().seal(b"new psk")), ..unchanged };
    context::scope(as_token.clone(), db.store.update_device(device.id, &renamed, Timestamp::now())).await.unwrap();
    assert!(context::scope(as_token.clone(), db.store.delete_device(device.id)).await.unwrap());
    assert!(!db.store.delete_device(device.id).await.unwrap(), "a second delete changes nothing");

    let events = events(&db).await;
    assert_eq!(actions(&events), ["user.created", "device.created", "device.updated", "device.deleted"]);
    let [_, created, updated, deleted] = &events[..] else { unreachable!() };
    assert_eq!(events[0].event.actor, Actor::system(), "outside any scope: the system");
    for event in [created, updated, deleted] {
        assert_eq!(event.event.actor, as_token.actor);
        assert_eq!(event.event.origin, as_token.origin);
        assert_eq!(event.event.subject.id, Some(device.id.to_string()));
    }
    let change = |event: &AuditEvent, field: &str| event.event.changes.iter().find(|c| c.field == field).cloned();
    assert_eq!(change(created, "public_key"), Some(Change::value("public_key", None, Some(json!(new.public_key)))));
    assert_eq!(change(created, "preshared_key"), Some(Change::secret("preshared_key")));
    assert_eq!(
        updated.event.changes,
        [Change::value("name", Some(json!(device.name)), Some(json!("phone"))), Change::secret("preshared_key")]
    );
    assert_eq!(change(deleted, "name"), Some(Change::value("name", Some(json!("phone")), None)));
    assert_eq!(
        change(deleted, "ipv4"),
        Some(Change::value("ipv4", Some(json!(device.ipv4.unwrap().to_string())), None))
    );
}

#[tokio::test]
async fn user_token_and_session_writes_record_events_without_secrets() {
    let db = db().await;
    let admin = add_user(&db, "admin@example.com", Role::Admin).await;
    let with_password =
        User::new("bob@example.com".into(), Role::Unprivileged, Some("$argon2id$secret-hash".into()), Timestamp::now());
    let cli = Context::new(Actor::cli(), Origin::default());
    context::scope(cli.clone(), db.store.insert_user(&with_password)).await.unwrap();
    let token = ferrozone_domain::model::ApiToken {
        id: Uuid::now_v7(),
        user_id: with_password.id,
        name: "laptop".into(),
        token_hash: b"token-hash-bytes".to_vec(),
        inserted_at: Timestamp::now(),
        expires_at: Timestamp::now().plus_days(1),
        last_used_at: None,
    };
    context::scope(cli.clone(), db.store.insert_token(&token)).await.unwrap();
    assert!(context::scope(cli.clone(), db.store.delete_token(token.id)).await.unwrap());

    let session = Session {
        id: Uuid::now_v7(),
        user_id: with_password.id,
        secret_hash: vec![7; 32],
        inserted_at: Timestamp::now(),
        expires_at: Timestamp::now().plus_secs(3600),
    };
    let signing_in = Context::new(Actor::anonymous(), Origin::default());
    context::scope(signing_in, db.store.insert_session(&session, "password")).await.unwrap();
    let update =
        UserUpdate { role: Some(Role::Admin), password_hash: Some("$argon2id$other".into()), ..Default::default() };
    context::scope(cli.clone(), db.store.update_user(with_password.id, &update, Timestamp::now())).await.unwrap();
    context::scope(cli.clone(), db.store.update_user(with_password.id, &UserUpdate::default(), Timestamp::now()))
        .await
        .unwrap();
    context::scope(cli.clone(), db.store.insert_rule(&rule("10.0.0.0/8", Some(with_password.id)))).await.unwrap();
    context::scope(cli.clone(), db.store.delete_user(with_password.id)).await.unwrap();
    let _ = admin;

    let events = events(&db).await;
    assert_eq!(
        actions(&events),
        [
            "user.created",
            "user.created",
            "token.created",
            "token.deleted",
            "user.signed_in",
            "user.updated",
            "rule.created",
            "user.deleted"
        ]
    );
    let signed_in = &events[4].event;
    assert_eq!(signed_in.actor.kind, ActorKind::User, "a sign-in is the user's own act");
    assert_eq!(signed_in.actor.user_id, Some(with_password.id));
    let updated = &events[5].event;
    assert_eq!(updated.changes[0], Change::value("role", Some(json!("unprivileged")), Some(json!("admin"))));
    assert!(updated.changes.contains(&Change::secret("password")));
    let deleted = &events[7].event;
    assert!(deleted.changes.contains(&Change::value("rules", Some(json!(1)), None)), "{:?}", deleted.changes);
    assert!(deleted.changes.contains(&Change::value("sessions", Some(json!(0)), None)), "{:?}", deleted.changes);

    let text: String = events.iter().map(|e| serde_json::to_string(&e.event.changes).unwrap()).collect();
    for secret in ["secret-hash", "argon2", "token-hash"] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
}

#[tokio::test]
async fn configuration_totp_and_session_ends_record_events() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let entries = vec![("configuration.default_client_mtu".to_owned(), b"1280".to_vec())];
    db.store.put_settings(&entries).await.unwrap();
    db.store.put_settings(&entries).await.unwrap();
    assert!(db.store.start_totp(alice.id, &cipher().seal(b"totp secret"), Timestamp::now()).await.unwrap());
    assert!(db.store.confirm_totp(alice.id, 1, Timestamp::now(), &[vec![1; 32], vec![2; 32]]).await.unwrap());
    assert!(db.store.delete_totp(alice.id).await.unwrap());
    assert!(!db.store.delete_totp(alice.id).await.unwrap());
    let session = |byte: u8| Session {
        id: Uuid::now_v7(),
        user_id: alice.id,
        secret_hash: vec![byte; 32],
        inserted_at: Timestamp::now(),
        expires_at: Timestamp::now().plus_secs(3600),
    };
    let (first, second) = (session(1), session(2));
    db.store.insert_session(&first, "password").await.unwrap();
    db.store.insert_session(&second, "password").await.unwrap();
    let itself = Actor { kind: ActorKind::Session, id: Some(first.id.to_string()), user_id: Some(alice.id) };
    let own = Context::new(itself, Origin::default());
    assert!(context::scope(own, db.store.delete_session(first.id)).await.unwrap());
    assert_eq!(db.store.delete_user_sessions(alice.id).await.unwrap(), 1);
    assert_eq!(db.store.delete_user_sessions(alice.id).await.unwrap(), 0);

    let events = events(&db).await;
    assert_eq!(
        actions(&events),
        [
            "user.created",
            "configuration.updated",
            "totp.started",
            "totp.confirmed",
            "totp.deleted",
            "user.signed_in",
            "user.signed_in",
            "user.signed_out",
            "user.sessions_revoked"
        ]
    );
    assert_eq!(events[1].event.changes, [Change::value("default_client_mtu", None, Some(json!(1280)))]);
    assert_eq!(events[3].event.changes, [Change::value("recovery_codes", None, Some(json!(2)))]);
}
