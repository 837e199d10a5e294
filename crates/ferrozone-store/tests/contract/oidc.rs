//! OpenID Connect connections: upsert keeps `inserted_at`, the claim is a compare-and-set,
//! rotation, deletion, and the cascade with the user.

use ferrozone_domain::crypto::Sealed;
use ferrozone_domain::model::{OidcConnection, Role};
use ferrozone_domain::Timestamp;
use uuid::Uuid;

use crate::support::{add_user, db};

fn connection(user_id: Uuid, provider_id: &str, token: &[u8], at: Timestamp) -> OidcConnection {
    OidcConnection {
        user_id,
        provider_id: provider_id.to_owned(),
        refresh_token: Sealed(token.to_vec()),
        refreshed_at: at,
        inserted_at: at,
        updated_at: at,
    }
}

fn sorted(mut connections: Vec<OidcConnection>) -> Vec<OidcConnection> {
    connections.sort_by(|a, b| (a.user_id, &a.provider_id).cmp(&(b.user_id, &b.provider_id)));
    connections
}

#[tokio::test]
async fn connections_are_stored_per_user_and_provider_and_replaced_on_sign_in() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Unprivileged).await;
    let bob = add_user(&db, "bob@example.com", Role::Unprivileged).await;
    let t0 = Timestamp::from_micros(1_700_000_000_000_000);
    let a = connection(alice.id, "google", b"a1", t0);
    let a_okta = connection(alice.id, "okta", b"a2", t0);
    let b = connection(bob.id, "google", b"b1", t0);
    for c in [&a, &a_okta, &b] {
        db.store.upsert_oidc_connection(c).await.unwrap();
    }
    assert_eq!(sorted(db.store.list_oidc_connections().await.unwrap()), sorted(vec![a.clone(), a_okta.clone(), b]));

    let t1 = t0.plus_secs(60);
    let again = connection(alice.id, "google", b"a3", t1);
    db.store.upsert_oidc_connection(&again).await.unwrap();
    let stored = db.store.list_oidc_connections().await.unwrap();
    let found = stored.iter().find(|c| c.user_id == alice.id && c.provider_id == "google").unwrap();
    assert_eq!(found, &OidcConnection { inserted_at: t0, ..again }, "inserted_at stays, the rest is replaced");

    let ghost = connection(Uuid::now_v7(), "google", b"x", t0);
    assert!(db.store.upsert_oidc_connection(&ghost).await.is_err(), "the user must exist");
}

#[tokio::test]
async fn a_claim_is_won_once_and_rotation_and_deletion_hold_only_for_that_claim() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Unprivileged).await;
    let t0 = Timestamp::from_micros(1_700_000_000_000_000);
    db.store.upsert_oidc_connection(&connection(alice.id, "google", b"a1", t0)).await.unwrap();

    let (t1, t2, t3) = (t0.plus_secs(10), t0.plus_secs(20), t0.plus_secs(30));
    assert!(db.store.claim_oidc_connection(alice.id, "google", t0, t1).await.unwrap());
    assert!(!db.store.claim_oidc_connection(alice.id, "google", t0, t2).await.unwrap(), "already claimed");
    assert!(!db.store.claim_oidc_connection(alice.id, "okta", t0, t2).await.unwrap(), "no such connection");

    let a2 = Sealed(b"a2".to_vec());
    assert!(!db.store.rotate_oidc_refresh_token(alice.id, "google", t0, &a2, t2).await.unwrap(), "not that claim");
    assert!(db.store.rotate_oidc_refresh_token(alice.id, "google", t1, &a2, t2).await.unwrap());
    let stored = db.store.list_oidc_connections().await.unwrap();
    let expected = OidcConnection { refreshed_at: t1, updated_at: t2, ..connection(alice.id, "google", b"a2", t0) };
    assert_eq!(stored, vec![expected]);
    assert!(!db.store.rotate_oidc_refresh_token(alice.id, "okta", t1, &a2, t2).await.unwrap());

    assert!(!db.store.delete_oidc_connection(alice.id, "google", t0).await.unwrap(), "not that claim");
    assert!(db.store.delete_oidc_connection(alice.id, "google", t1).await.unwrap());
    assert!(!db.store.delete_oidc_connection(alice.id, "google", t1).await.unwrap());
    assert!(db.store.list_oidc_connections().await.unwrap().is_empty());

    // A sign-in replacing a claimed connection makes the claim's rotation and deletion void.
    db.store.upsert_oidc_connection(&connection(alice.id, "google", b"b1", t0)).await.unwrap();
    assert!(db.store.claim_oidc_connection(alice.id, "google", t0, t1).await.unwrap());
    db.store.upsert_oidc_connection(&connection(alice.id, "google", b"c1", t3)).await.unwrap();
    assert!(!db.store.rotate_oidc_refresh_token(alice.id, "google", t1, &a2, t3).await.unwrap());
    assert!(!db.store.delete_oidc_connection(alice.id, "google", t1).await.unwrap());
    let stored = db.store.list_oidc_connections().await.unwrap();
    assert_eq!(stored[0].refresh_token, Sealed(b"c1".to_vec()), "the sign-in's token stays");
}

#[tokio::test]
async fn deleting_a_user_deletes_its_connections() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Unprivileged).await;
    let bob = add_user(&db, "bob@example.com", Role::Unprivileged).await;
    let now = Timestamp::now();
    db.store.upsert_oidc_connection(&connection(alice.id, "google", b"a", now)).await.unwrap();
    db.store.upsert_oidc_connection(&connection(bob.id, "google", b"b", now)).await.unwrap();
    db.store.delete_user(alice.id).await.unwrap();
    let left = db.store.list_oidc_connections().await.unwrap();
    assert_eq!(left.iter().map(|c| c.user_id).collect::<Vec<_>>(), vec![bob.id]);
}
