//! Users: CRUD, case-insensitive email uniqueness, the last admin, settings.

use ferrozone_domain::model::{email_key, DisabledBy, Role, UserUpdate};
use ferrozone_domain::store::UserQuery;
use ferrozone_domain::Timestamp;
use uuid::Uuid;

use crate::support::{add_user, assert_invalid, assert_not_found, db, user};

#[tokio::test]
async fn users_round_trip_and_list_in_insertion_order() {
    let db = db().await;
    let mut first = user("First@Example.com", Role::Admin);
    first.password_hash = Some("$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA".into());
    first.disabled_at = Some(Timestamp::from_micros(1_700_000_000_123_456));
    first.last_signed_in_at = Some(Timestamp::from_micros(1_700_000_000_000_001));
    first.last_signed_in_method = Some("password".into());
    db.store.insert_user(&first).await.unwrap();
    let mut second = user("second@example.com", Role::Unprivileged);
    second.inserted_at = first.inserted_at.plus_secs(1);
    db.store.insert_user(&second).await.unwrap();

    assert_eq!(db.store.user_by_id(first.id).await.unwrap(), Some(first.clone()));
    assert_eq!(db.store.user_by_email(&email_key(" FIRST@example.COM ")).await.unwrap(), Some(first.clone()));
    assert_eq!(db.store.user_by_id(Uuid::now_v7()).await.unwrap(), None);
    assert_eq!(db.store.user_by_email("nobody@example.com").await.unwrap(), None);
    assert_eq!(db.store.list_users().await.unwrap(), vec![first, second]);
    assert_eq!(db.store.count_admins().await.unwrap(), 1);
}

#[tokio::test]
async fn emails_are_unique_case_insensitively() {
    let db = db().await;
    add_user(&db, "Alice@Example.com", Role::Admin).await;
    assert_invalid(
        db.store.insert_user(&user("alice@EXAMPLE.com", Role::Unprivileged)).await,
        "email",
        "has already been taken",
    );

    let bob = add_user(&db, "bob@example.com", Role::Unprivileged).await;
    let update = UserUpdate { email: Some("ALICE@example.com".into()), ..UserUpdate::default() };
    assert_invalid(db.store.update_user(bob.id, &update, Timestamp::now()).await, "email", "has already been taken");
    assert_eq!(db.store.user_by_id(bob.id).await.unwrap(), Some(bob));
}

#[tokio::test]
async fn update_moves_updated_at_only_on_a_change() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let later = alice.updated_at.plus_secs(60);

    let same = UserUpdate { email: Some(alice.email.clone()), role: Some(Role::Admin), ..UserUpdate::default() };
    assert_eq!(db.store.update_user(alice.id, &same, later).await.unwrap(), alice);
    assert_eq!(db.store.update_user(alice.id, &UserUpdate::default(), later).await.unwrap(), alice);

    let rename = UserUpdate { email: Some("Alice.New@Example.com".into()), ..UserUpdate::default() };
    let renamed = db.store.update_user(alice.id, &rename, later).await.unwrap();
    assert_eq!((renamed.email.as_str(), renamed.updated_at), ("Alice.New@Example.com", later));
    assert_eq!(db.store.user_by_email("alice.new@example.com").await.unwrap(), Some(renamed.clone()));
    assert_eq!(db.store.user_by_email("alice@example.com").await.unwrap(), None);

    let even_later = later.plus_secs(60);
    let password = UserUpdate { password_hash: Some("hash".into()), ..UserUpdate::default() };
    let changed = db.store.update_user(alice.id, &password, even_later).await.unwrap();
    assert_eq!((changed.password_hash.as_deref(), changed.updated_at), (Some("hash"), even_later));
    assert_eq!(db.store.user_by_id(alice.id).await.unwrap(), Some(changed));

    assert_not_found(db.store.update_user(Uuid::now_v7(), &password, even_later).await);
}

#[tokio::test]
async fn disabling_is_stored_and_idempotent() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let (later, even_later) = (alice.updated_at.plus_secs(60), alice.updated_at.plus_secs(120));
    let disable = UserUpdate { disabled: Some(true), ..UserUpdate::default() };
    let disabled = db.store.update_user(alice.id, &disable, later).await.unwrap();
    assert_eq!((disabled.disabled_at, disabled.updated_at), (Some(later), later));
    assert_eq!(db.store.update_user(alice.id, &disable, even_later).await.unwrap(), disabled, "kept as it was");
    assert_eq!(db.store.user_by_email("alice@example.com").await.unwrap(), Some(disabled.clone()));

    let enable = UserUpdate { disabled: Some(false), ..UserUpdate::default() };
    let enabled = db.store.update_user(alice.id, &enable, even_later).await.unwrap();
    assert_eq!((enabled.disabled_at, enabled.updated_at), (None, even_later));
    assert_eq!(db.store.user_by_id(alice.id).await.unwrap(), Some(enabled));
}

#[tokio::test]
async fn who_disabled_a_user_is_stored_kept_and_cleared() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let later = alice.updated_at.plus_secs(60);
    let by = |who: DisabledBy| UserUpdate { disabled: Some(true), disabled_by: Some(who), ..UserUpdate::default() };
    let provider = DisabledBy::IdentityProvider("corp-okta".into());
    let disabled = db.store.update_user(alice.id, &by(provider.clone()), later).await.unwrap();
    assert_eq!(disabled.disabled_by, Some(provider.clone()));
    let again = db.store.update_user(alice.id, &by(DisabledBy::Admin), later.plus_secs(60)).await.unwrap();
    assert_eq!(again, disabled, "the first reason stays, as the first time does");
    assert_eq!(db.store.user_by_id(alice.id).await.unwrap(), Some(disabled.clone()));
    assert_eq!(db.store.user_by_email("alice@example.com").await.unwrap(), Some(disabled.clone()));
    let page = db.store.list_users_page(&UserQuery { limit: 10, ..UserQuery::default() }).await.unwrap();
    assert_eq!(page[0].user.disabled_by, Some(provider));

    let enable = UserUpdate { disabled: Some(false), ..UserUpdate::default() };
    let enabled = db.store.update_user(alice.id, &enable, later.plus_secs(120)).await.unwrap();
    assert_eq!((enabled.disabled_at, enabled.disabled_by), (None, None));
    for who in [DisabledBy::Admin, DisabledBy::Cli] {
        let disabled = db.store.update_user(alice.id, &by(who.clone()), later.plus_secs(180)).await.unwrap();
        assert_eq!(db.store.list_users().await.unwrap()[0].disabled_by, Some(who));
        assert!(disabled.disabled_at.is_some());
        db.store.update_user(alice.id, &enable, later.plus_secs(240)).await.unwrap();
    }

    let mut bob = user("bob@example.com", Role::Unprivileged);
    bob.disabled_at = Some(later);
    db.store.insert_user(&bob).await.unwrap();
    let unknown = db.store.user_by_id(bob.id).await.unwrap().unwrap();
    assert_eq!((unknown.disabled_at, unknown.disabled_by), (Some(later), None), "disabled, reason unknown");
}

#[tokio::test]
async fn the_last_admin_cannot_be_demoted() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let demote = UserUpdate { role: Some(Role::Unprivileged), ..UserUpdate::default() };
    assert_invalid(
        db.store.update_user(alice.id, &demote, Timestamp::now()).await,
        "base",
        "cannot remove the last admin",
    );

    let bob = add_user(&db, "bob@example.com", Role::Admin).await;
    let demoted = db.store.update_user(alice.id, &demote, Timestamp::now()).await.unwrap();
    assert_eq!(demoted.role, Role::Unprivileged);
    assert_eq!(db.store.count_admins().await.unwrap(), 1);
    assert_invalid(
        db.store.update_user(bob.id, &demote, Timestamp::now()).await,
        "base",
        "cannot remove the last admin",
    );
    // Demoting someone who is not an admin is not removing an admin.
    assert_eq!(db.store.update_user(alice.id, &demote, Timestamp::now()).await.unwrap(), demoted);
}

#[tokio::test]
async fn the_last_admin_cannot_be_deleted() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let carol = add_user(&db, "carol@example.com", Role::Unprivileged).await;
    assert_invalid(db.store.delete_user(alice.id).await, "base", "cannot remove the last admin");
    db.store.delete_user(carol.id).await.unwrap();
    assert_eq!(db.store.user_by_id(carol.id).await.unwrap(), None);
    assert_not_found(db.store.delete_user(carol.id).await);

    let bob = add_user(&db, "bob@example.com", Role::Admin).await;
    db.store.delete_user(alice.id).await.unwrap();
    assert_invalid(db.store.delete_user(bob.id).await, "base", "cannot remove the last admin");
    assert_eq!(db.store.count_admins().await.unwrap(), 1);
}

#[tokio::test]
async fn concurrent_demotions_leave_one_admin() {
    let db = db().await;
    let mut ids = Vec::new();
    for i in 0..4 {
        ids.push(add_user(&db, &format!("admin{i}@example.com"), Role::Admin).await.id);
    }
    let demote = UserUpdate { role: Some(Role::Unprivileged), ..UserUpdate::default() };
    let tasks: Vec<_> = ids
        .iter()
        .map(|id| {
            let (store, id, demote) = (db.store.clone(), *id, demote.clone());
            tokio::spawn(async move { store.update_user(id, &demote, Timestamp::now()).await })
        })
        .collect();
    let mut ok = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(_) => ok += 1,
            result => assert_invalid(result, "base", "cannot remove the last admin"),
        }
    }
    assert_eq!(ok, 3);
    assert_eq!(db.store.count_admins().await.unwrap(), 1);
}

#[tokio::test]
async fn settings_are_initialised_once() {
    let db = db().await;
    assert_eq!(db.store.setting("server_key").await.unwrap(), None);
    assert_eq!(db.store.init_setting("server_key", b"first").await.unwrap(), b"first");
    assert_eq!(db.store.init_setting("server_key", b"second").await.unwrap(), b"first");
    assert_eq!(db.store.setting("server_key").await.unwrap().as_deref(), Some(&b"first"[..]));
}

#[tokio::test]
async fn the_url_opens_the_same_database() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let options = ferrozone_store::testing::test_options();
    let again = ferrozone_store::connect(&db.url, &options).await.unwrap();
    assert_eq!(again.user_by_id(alice.id).await.unwrap(), Some(alice));
}

#[tokio::test]
async fn settings_are_put_together_and_replaced() {
    let db = db().await;
    let entries = vec![("a".to_owned(), b"1".to_vec()), ("b".to_owned(), b"2".to_vec())];
    db.store.put_settings(&entries).await.unwrap();
    db.store.put_settings(&[("a".to_owned(), b"3".to_vec())]).await.unwrap();
    assert_eq!(db.store.setting("a").await.unwrap().as_deref(), Some(&b"3"[..]));
    assert_eq!(db.store.setting("b").await.unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(db.store.init_setting("a", b"4").await.unwrap(), b"3");
}

#[tokio::test]
async fn users_by_ids_returns_those_that_exist() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let bob = add_user(&db, "bob@example.com", Role::Unprivileged).await;
    add_user(&db, "carol@example.com", Role::Unprivileged).await;
    assert_eq!(db.store.users_by_ids(&[]).await.unwrap(), vec![]);

    let gone = Uuid::new_v4();
    let mut found = db.store.users_by_ids(&[bob.id, gone, alice.id]).await.unwrap();
    found.sort_by(|a, b| a.email.cmp(&b.email));
    assert_eq!(found, vec![alice.clone(), bob], "carol was not asked for, the unknown id is left out");

    // A page's worth of ids, most of them unknown, is one read all the same.
    let mut many: Vec<Uuid> = (0..150).map(|_| Uuid::new_v4()).collect();
    many.push(alice.id);
    assert_eq!(db.store.users_by_ids(&many).await.unwrap(), vec![alice]);
}
