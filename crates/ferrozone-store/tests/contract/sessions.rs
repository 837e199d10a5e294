//! Browser sessions: look-up by secret hash with the user, deletion, expiry, cascade;
//! recording a sign-in; and provider sign-in flows, each taken once.

use ferrozone_domain::crypto::Sealed;
use ferrozone_domain::model::{Role, Session, SignInFlow};
use ferrozone_domain::Timestamp;
use uuid::Uuid;

use crate::support::{add_user, db};

fn session(user_id: Uuid, hash: &[u8], inserted_at: Timestamp, hours: i64) -> Session {
    Session {
        id: Uuid::now_v7(),
        user_id,
        secret_hash: hash.to_vec(),
        inserted_at,
        expires_at: inserted_at.plus_secs(hours * 3600),
    }
}

#[tokio::test]
async fn sessions_are_found_by_hash_with_their_user_and_deleted() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Unprivileged).await;
    let now = Timestamp::now();
    let first = session(alice.id, &[1; 32], now, 24);
    let second = session(alice.id, &[2; 32], now, 24);
    db.store.insert_session(&first, "password").await.unwrap();
    db.store.insert_session(&second, "password").await.unwrap();

    assert_eq!(db.store.session_by_hash(&[1; 32]).await.unwrap(), Some((first.clone(), alice.clone())));
    assert_eq!(db.store.session_by_hash(&[3; 32]).await.unwrap(), None);
    assert!(
        db.store.insert_session(&session(alice.id, &[1; 32], now, 1), "password").await.is_err(),
        "hashes are unique"
    );

    assert!(db.store.delete_session(first.id).await.unwrap());
    assert!(!db.store.delete_session(first.id).await.unwrap());
    assert_eq!(db.store.session_by_hash(&[1; 32]).await.unwrap(), None);
    assert!(db.store.session_by_hash(&[2; 32]).await.unwrap().is_some(), "the other session stays");
}

#[tokio::test]
async fn expired_sessions_are_deleted_and_users_take_theirs_along() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let bob = add_user(&db, "bob@example.com", Role::Unprivileged).await;
    let now = Timestamp::now();
    db.store.insert_session(&session(alice.id, &[1; 32], now.plus_secs(-7200), 1), "password").await.unwrap();
    db.store.insert_session(&session(alice.id, &[2; 32], now, 1), "password").await.unwrap();
    db.store.insert_session(&session(bob.id, &[3; 32], now, 1), "password").await.unwrap();

    assert_eq!(db.store.delete_expired_sessions(now).await.unwrap(), 1);
    assert_eq!(db.store.session_by_hash(&[1; 32]).await.unwrap(), None);
    assert!(db.store.session_by_hash(&[2; 32]).await.unwrap().is_some());

    db.store.delete_user(bob.id).await.unwrap();
    assert_eq!(db.store.session_by_hash(&[3; 32]).await.unwrap(), None, "deleted with its user");
}

#[tokio::test]
async fn a_sign_in_is_recorded_without_moving_updated_at() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let at = alice.updated_at.plus_secs(60);
    db.store.record_sign_in(alice.id, "password", at).await.unwrap();
    let stored = db.store.user_by_id(alice.id).await.unwrap().unwrap();
    assert_eq!(stored.last_signed_in_at, Some(at));
    assert_eq!(stored.last_signed_in_method.as_deref(), Some("password"));
    assert_eq!(stored.updated_at, alice.updated_at);
    db.store.record_sign_in(Uuid::now_v7(), "password", at).await.expect("an unknown user is no error");
}

fn flow(hash: u8, provider: &str, expires_at: Timestamp) -> SignInFlow {
    SignInFlow {
        state_hash: vec![hash; 32],
        provider_id: provider.to_owned(),
        sealed: Sealed(vec![hash, 0, hash]),
        return_to: format!("/after/{hash}"),
        expires_at,
    }
}

#[tokio::test]
async fn a_sign_in_flow_is_taken_once() {
    let db = db().await;
    let now = Timestamp::now();
    let first = flow(1, "google", now.plus_secs(600));
    db.store.insert_sign_in_flow(&first, now).await.unwrap();
    db.store.insert_sign_in_flow(&flow(2, "okta", now.plus_secs(600)), now).await.unwrap();
    assert!(
        db.store.insert_sign_in_flow(&flow(1, "okta", now.plus_secs(600)), now).await.is_err(),
        "states are unique"
    );

    assert_eq!(db.store.take_sign_in_flow(&[1; 32]).await.unwrap(), Some(first));
    assert_eq!(db.store.take_sign_in_flow(&[1; 32]).await.unwrap(), None, "a flow is taken once");
    assert_eq!(db.store.take_sign_in_flow(&[3; 32]).await.unwrap(), None);
    assert!(db.store.take_sign_in_flow(&[2; 32]).await.unwrap().is_some(), "the other flow stays");
}

#[tokio::test]
async fn starting_a_flow_deletes_the_expired_ones() {
    let db = db().await;
    let now = Timestamp::now();
    db.store.insert_sign_in_flow(&flow(1, "google", now.plus_secs(-1)), now.plus_secs(-700)).await.unwrap();
    db.store.insert_sign_in_flow(&flow(2, "google", now.plus_secs(600)), now.plus_secs(-700)).await.unwrap();
    db.store.insert_sign_in_flow(&flow(3, "google", now.plus_secs(600)), now).await.unwrap();
    assert_eq!(db.store.take_sign_in_flow(&[1; 32]).await.unwrap(), None, "expired, so deleted");
    assert!(db.store.take_sign_in_flow(&[2; 32]).await.unwrap().is_some());
}

#[tokio::test]
async fn a_new_password_ends_the_other_sessions_of_its_user_only() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Unprivileged).await;
    let bob = add_user(&db, "bob@example.com", Role::Unprivileged).await;
    let now = Timestamp::now();
    let kept = session(alice.id, &[1; 32], now, 1);
    for s in [&kept, &session(alice.id, &[2; 32], now, 1), &session(bob.id, &[3; 32], now, 1)] {
        db.store.insert_session(s, "password").await.unwrap();
    }
    let password = ferrozone_domain::model::UserUpdate {
        password_hash: Some("hash".into()),
        keep_session: Some(kept.id),
        ..Default::default()
    };
    db.store.update_user(alice.id, &password, now).await.unwrap();
    assert!(db.store.session_by_hash(&[1; 32]).await.unwrap().is_some(), "the session that changed it stays");
    assert_eq!(db.store.session_by_hash(&[2; 32]).await.unwrap(), None, "the user's other session ended");
    assert!(db.store.session_by_hash(&[3; 32]).await.unwrap().is_some(), "another user's stays");
}
