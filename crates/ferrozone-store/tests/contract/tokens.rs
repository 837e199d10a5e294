//! API tokens: look-up by hash with the owner, listing, touching, deleting, cascade.

use ferrozone_domain::model::{ApiToken, Role};
use ferrozone_domain::Timestamp;
use uuid::Uuid;

use crate::support::{add_user, assert_invalid, db, new_device, pools};

fn token(user_id: Uuid, name: &str, hash: &[u8], inserted_at: Timestamp) -> ApiToken {
    ApiToken {
        id: Uuid::now_v7(),
        user_id,
        name: name.to_owned(),
        token_hash: hash.to_vec(),
        inserted_at,
        expires_at: inserted_at.plus_days(30),
        last_used_at: None,
    }
}

#[tokio::test]
async fn tokens_are_found_by_hash_with_their_owner() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let now = Timestamp::now();
    let first = token(alice.id, "cli", &[1; 32], now);
    let second = token(alice.id, "terraform", &[2; 32], now.plus_secs(1));
    db.store.insert_token(&second).await.unwrap();
    db.store.insert_token(&first).await.unwrap();

    assert_eq!(db.store.token_by_hash(&[1; 32]).await.unwrap(), Some((first.clone(), alice.clone())));
    assert_eq!(db.store.token_by_hash(&[3; 32]).await.unwrap(), None);
    assert_eq!(db.store.list_tokens(alice.id).await.unwrap(), vec![first.clone(), second.clone()]);

    let used = now.plus_secs(5);
    db.store.touch_token(first.id, used).await.unwrap();
    let (touched, _) = db.store.token_by_hash(&[1; 32]).await.unwrap().unwrap();
    assert_eq!(touched.last_used_at, Some(used));
    // At most once a minute, whichever process asks: a touch within 60 s of the last one
    // changes nothing; one 60 s later does.
    db.store.touch_token(first.id, used.plus_secs(59)).await.unwrap();
    let (touched, _) = db.store.token_by_hash(&[1; 32]).await.unwrap().unwrap();
    assert_eq!(touched.last_used_at, Some(used), "not written again within a minute");
    db.store.touch_token(first.id, used.plus_secs(60)).await.unwrap();
    let (touched, _) = db.store.token_by_hash(&[1; 32]).await.unwrap().unwrap();
    assert_eq!(touched.last_used_at, Some(used.plus_secs(60)));

    assert!(db.store.delete_token(first.id).await.unwrap());
    assert!(!db.store.delete_token(first.id).await.unwrap());
    assert_eq!(db.store.token_by_hash(&[1; 32]).await.unwrap(), None);
    assert_eq!(db.store.list_tokens(alice.id).await.unwrap(), vec![second]);
}

#[tokio::test]
async fn deleting_the_owner_deletes_its_tokens() {
    let db = db().await;
    add_user(&db, "admin@example.com", Role::Admin).await;
    let bob = add_user(&db, "bob@example.com", Role::Unprivileged).await;
    db.store.insert_token(&token(bob.id, "t", &[9; 32], Timestamp::now())).await.unwrap();
    db.store.delete_user(bob.id).await.unwrap();
    assert_eq!(db.store.token_by_hash(&[9; 32]).await.unwrap(), None);
    assert_eq!(db.store.list_tokens(bob.id).await.unwrap(), vec![]);
}

#[tokio::test]
async fn a_token_needs_an_existing_owner() {
    let db = db().await;
    let result = db.store.insert_token(&token(Uuid::now_v7(), "t", &[7; 32], Timestamp::now())).await;
    assert_invalid(result, "user_id", "does not exist");
}

#[tokio::test]
async fn a_token_and_a_device_read_together_are_what_each_read_returns() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    db.store.insert_token(&token(alice.id, "t", &[4; 32], Timestamp::now())).await.unwrap();
    let device = db.store.insert_device(&new_device(alice.id), &pools(), 10).await.unwrap();
    let unknown = Uuid::now_v7();
    for (hash, id) in [([4u8; 32], device.id), ([4; 32], unknown), ([5; 32], device.id), ([5; 32], unknown)] {
        let together = db.store.token_and_device(&hash, id).await.unwrap();
        let token = db.store.token_by_hash(&hash).await.unwrap();
        // Without a token the request is refused, and the device is not read.
        let device = if token.is_some() { db.store.device_by_id(id).await.unwrap() } else { None };
        assert_eq!(together, (token, device));
    }
    // The read leaves its connection usable: a write and a later read see each other.
    db.store.delete_device(device.id).await.unwrap();
    assert_eq!(db.store.token_and_device(&[4; 32], device.id).await.unwrap().1, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_token_and_device_reads_at_once_each_get_their_own_answer() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let bob = add_user(&db, "bob@example.com", Role::Unprivileged).await;
    db.store.insert_token(&token(alice.id, "a", &[4; 32], Timestamp::now())).await.unwrap();
    db.store.insert_token(&token(bob.id, "b", &[6; 32], Timestamp::now())).await.unwrap();
    let mut ids = vec![Uuid::now_v7()];
    for owner in [alice.id, bob.id, bob.id] {
        ids.push(db.store.insert_device(&new_device(owner), &pools(), 10).await.unwrap().id);
    }
    let hashes = [[4u8; 32], [5; 32], [6; 32]];
    // Every pair many times over, all at once: a backend that gathers concurrent reads into
    // one statement must still give each its own answer, the one a lone read gives.
    let pairs: Vec<([u8; 32], Uuid)> =
        (0..300).map(|i| (hashes[i % hashes.len()], ids[(i / hashes.len()) % ids.len()])).collect();
    let reads = pairs.iter().map(|&(hash, id)| {
        let store = db.store.clone();
        tokio::spawn(async move { store.token_and_device(&hash, id).await.unwrap() })
    });
    let together = futures_util::future::join_all(reads).await;
    for ((hash, id), answer) in pairs.iter().zip(together) {
        let token = db.store.token_by_hash(hash).await.unwrap();
        let device = if token.is_some() { db.store.device_by_id(*id).await.unwrap() } else { None };
        assert_eq!(answer.unwrap(), (token, device), "token {:?}, device {id}", hash[0]);
    }
}

#[tokio::test]
async fn every_users_tokens_are_paged_in_creation_order_with_their_owners() {
    use ferrozone_domain::store::TokenPage;
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let bob = add_user(&db, "bob@example.com", Role::Unprivileged).await;
    let now = Timestamp::now();
    let tokens = [
        token(bob.id, "b1", &[1; 32], now),
        token(alice.id, "a1", &[2; 32], now.plus_secs(1)),
        token(bob.id, "b2", &[3; 32], now.plus_secs(2)),
    ];
    for t in tokens.iter().rev() {
        db.store.insert_token(t).await.unwrap();
    }
    let owner = |t: &ApiToken| if t.user_id == alice.id { alice.clone() } else { bob.clone() };
    let expected: Vec<_> = tokens.iter().map(|t| (t.clone(), owner(t))).collect();

    let all = db.store.list_all_tokens(TokenPage { after: None, limit: 10 }).await.unwrap();
    assert_eq!(all, expected);
    let first = db.store.list_all_tokens(TokenPage { after: None, limit: 2 }).await.unwrap();
    assert_eq!(first, expected[..2]);
    let last = &first[1].0;
    let rest = db.store.list_all_tokens(TokenPage { after: Some((last.inserted_at, last.id)), limit: 2 }).await;
    assert_eq!(rest.unwrap(), expected[2..]);
}
