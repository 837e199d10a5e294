//! Every SCIM user, page by page (docs/design/scim.md, "Paging"): read by skipping or
//! resumed after a key, with the total and the generation read with the page. The
//! generation moves when a SCIM user is made or removed, through its user's deletion too,
//! and stays when one is replaced.

use ferrozone_domain::scim::{Page, ScimProfile, ScimUser, ScimUserWrite, Start, UserFilter, UsersPage};
use ferrozone_domain::Timestamp;
use ferrozone_store::testing::TestDb;

use crate::support::db;

fn write(user_name: &str) -> ScimUserWrite {
    let profile = ScimProfile { user_name: user_name.to_owned(), ..ScimProfile::default() };
    ScimUserWrite { profile, email: user_name.to_owned(), active: true }
}

fn names(page: &UsersPage) -> Vec<&str> {
    page.resources.iter().map(|user| user.profile.user_name.as_str()).collect()
}

fn after(user: &ScimUser) -> Start {
    Start::After(user.inserted_at, user.user.id)
}

async fn every(db: &TestDb, count: u32, start: Start) -> UsersPage {
    db.store.every_scim_user(count, start).await.unwrap()
}

#[tokio::test]
async fn every_user_pages_by_skipping_or_after_a_key_with_its_total_and_generation() {
    let db = db().await;
    let empty = every(&db, 10, Start::Offset(0)).await;
    assert_eq!((empty.total, names(&empty)), (0, vec![]));
    let base = Timestamp::now().micros();
    let mut made = Vec::new();
    for n in 0..5 {
        let at = Timestamp::from_micros(base + n);
        made.push(db.store.create_scim_user(&write(&format!("u{n}@example.com")), at).await.unwrap());
    }

    let first = every(&db, 2, Start::Offset(0)).await;
    assert_eq!((first.total, names(&first)), (5, vec!["u0@example.com", "u1@example.com"]));
    let resumed = every(&db, 2, after(first.resources.last().unwrap())).await;
    assert_eq!(names(&resumed), ["u2@example.com", "u3@example.com"]);
    assert_eq!(resumed, every(&db, 2, Start::Offset(2)).await, "a resumed page is the page skipped to");
    let listed = db.store.scim_users(&UserFilter::All, Page { start_index: 3, count: 2 }).await.unwrap();
    assert_eq!((listed.total, listed.resources), (5, resumed.resources.clone()), "as the filtered lists read");
    let past = every(&db, 2, after(&made[4])).await;
    assert_eq!((past.total, past.generation, names(&past)), (5, first.generation, vec![]));

    db.store.replace_scim_user(made[1].user.id, &write("U1@example.com"), Timestamp::now()).await.unwrap();
    let replaced = every(&db, 5, Start::Offset(0)).await;
    assert_eq!((replaced.generation, names(&replaced)[1]), (first.generation, "U1@example.com"));

    db.store.delete_scim_user(made[0].user.id, Timestamp::now()).await.unwrap();
    let deprovisioned = every(&db, 5, Start::Offset(0)).await;
    assert_ne!(deprovisioned.generation, first.generation, "a removal moves the generation");
    assert_eq!(deprovisioned.total, 4);
    db.store.delete_user(made[2].user.id).await.unwrap();
    let deleted = every(&db, 5, Start::Offset(0)).await;
    assert_ne!(deleted.generation, deprovisioned.generation, "so does the deletion of a SCIM user's user");
    assert_eq!((deleted.total, names(&deleted)), (3, vec!["U1@example.com", "u3@example.com", "u4@example.com"]));
    let made_again = db.store.create_scim_user(&write("u5@example.com"), Timestamp::now()).await.unwrap();
    let grown = every(&db, 5, after(&made[4])).await;
    assert_eq!((grown.total, names(&grown)), (4, vec![made_again.profile.user_name.as_str()]));
    assert_ne!(grown.generation, deleted.generation, "a new user moves it too");
}

#[tokio::test]
async fn concurrent_provisioning_is_counted_once_each() {
    let db = db().await;
    let before = every(&db, 0, Start::Offset(0)).await;
    let creates = (0..24).map(|n| {
        let store = db.store.clone();
        tokio::spawn(
            async move { store.create_scim_user(&write(&format!("c{n}@example.com")), Timestamp::now()).await },
        )
    });
    for create in creates.collect::<Vec<_>>() {
        create.await.unwrap().unwrap();
    }
    let after = every(&db, 100, Start::Offset(0)).await;
    assert_eq!((after.total, after.resources.len()), (24, 24));
    assert_eq!(after.generation, before.generation + 24, "each made user moved the generation once");
}
