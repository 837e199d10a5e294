//! Sealing the audit log: writers never wait for each other's events, and still every
//! committed event ends up in one chain, numbered 1..N with no gap, exactly once. On
//! PostgreSQL events are appended pending and sealed later; on SQLite as they are appended.

use std::collections::HashMap;

use ferrozone_domain::audit::{self, AuditKey, AuditQuery, EventRecord};
use ferrozone_domain::model::AddressRequest;
use ferrozone_domain::model::Role;
use ferrozone_domain::store::Store;
use ferrozone_store::testing::{test_options, TestDb};
use sqlx::Connection;
use tokio::task::JoinSet;
use uuid::Uuid;

use crate::support::{add_user, db, new_device, pools};

/// Every sealed event, oldest first, after checking the chain against the head.
async fn verified_log(store: &dyn Store) -> Vec<EventRecord> {
    let head = store.audit_head().await.unwrap();
    let mut records = Vec::new();
    loop {
        let after = records.last().map_or(head.pruned_seq, |r: &EventRecord| r.seq);
        let query = AuditQuery { after_seq: Some(after), limit: 500, ..AuditQuery::default() };
        let page = store.audit_records(&query).await.unwrap();
        if page.is_empty() {
            break;
        }
        records.extend(page);
    }
    audit::verify(&AuditKey::unkeyed(), &head, &records).unwrap();
    records
}

/// A second store on the test's database: another process, as far as PostgreSQL can tell.
/// SQLite has one writing process; its second store is the first.
async fn second_store(db: &TestDb) -> std::sync::Arc<dyn Store> {
    if db.backend != "postgres" {
        return db.store.clone();
    }
    let other = ferrozone_store::open(&db.url, &test_options()).await.unwrap();
    other.into_store()
}

#[tokio::test]
async fn many_writers_on_two_stores_make_one_chain_with_every_event_once() {
    const TASKS: usize = 64;
    const CREATES: usize = 20;
    let db = db().await;
    let stores = [db.store.clone(), second_store(&db).await];
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let mut writers = JoinSet::new();
    for task in 0..TASKS {
        let store = stores[task % 2].clone();
        writers.spawn(async move {
            let mut ids = Vec::with_capacity(CREATES);
            for _ in 0..CREATES {
                let mut new = new_device(alice.id);
                (new.ipv4, new.ipv6) = (AddressRequest::None, AddressRequest::None);
                ids.push(store.insert_device(&new, &pools(), u32::MAX).await.unwrap().id);
            }
            ids
        });
    }
    let created: Vec<Uuid> = writers.join_all().await.into_iter().flatten().collect();

    stores[1].seal_audit_events().await.unwrap();
    assert_eq!(db.store.pending_audit_events().await.unwrap(), 0);
    let records = verified_log(db.store.as_ref()).await;
    let seqs: Vec<i64> = records.iter().map(|r| r.seq).collect();
    assert_eq!(seqs, (1..=records.len() as i64).collect::<Vec<_>>(), "seqs have a gap or a repeat");
    let mut device_events: HashMap<String, usize> = HashMap::new();
    for record in records.iter().filter(|r| r.action == "device.created") {
        *device_events.entry(record.subject_id.clone().unwrap()).or_default() += 1;
    }
    assert_eq!(device_events.len(), TASKS * CREATES);
    for id in &created {
        assert_eq!(device_events.get(&id.to_string()), Some(&1), "device {id} has not exactly one event");
    }
}

#[tokio::test]
async fn a_reader_sees_the_event_of_the_write_it_just_made() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let device = db.store.insert_device(&new_device(alice.id), &pools(), u32::MAX).await.unwrap();
    let newest = db.store.audit_records(&AuditQuery { limit: 1, ..AuditQuery::default() }).await.unwrap();
    assert_eq!(newest.len(), 1);
    assert_eq!(
        (newest[0].action.as_str(), newest[0].subject_id.clone()),
        ("device.created", Some(device.id.to_string()))
    );
    assert_eq!(db.store.audit_head().await.unwrap().last_seq, newest[0].seq);
}

/// A pending event (PostgreSQL): one inserted in `tx`, whose commit the test controls.
async fn append_pending(tx: &mut sqlx::PgConnection, subject: &str) {
    sqlx::query(
        "INSERT INTO audit_events (id, at, actor_kind, action, subject_kind, subject_id, changes) \
         VALUES ($1, 1, 'cli', 'device.created', 'device', $2, '[]')",
    )
    .bind(Uuid::new_v4())
    .bind(subject)
    .execute(tx)
    .await
    .unwrap();
}

#[tokio::test]
async fn an_event_committed_after_a_later_one_was_sealed_gets_the_next_seq() {
    let db = db().await;
    if db.backend != "postgres" {
        return; // SQLite numbers each event as its one writer appends it.
    }
    let mut slow = sqlx::PgConnection::connect(&db.url).await.unwrap();
    let mut fast = sqlx::PgConnection::connect(&db.url).await.unwrap();
    let mut slow_tx = slow.begin().await.unwrap();
    append_pending(&mut slow_tx, "appended-first").await;
    append_pending(&mut fast, "appended-second").await;

    // The slow transaction's event is invisible until it commits: only the other is sealed.
    assert_eq!(db.store.seal_audit_events().await.unwrap(), 1);
    assert_eq!(db.store.audit_head().await.unwrap().last_seq, 1);
    slow_tx.commit().await.unwrap();
    assert_eq!(db.store.pending_audit_events().await.unwrap(), 1);

    let records = verified_log(db.store.as_ref()).await;
    let order: Vec<(i64, &str)> = records.iter().map(|r| (r.seq, r.subject_id.as_deref().unwrap())).collect();
    assert_eq!(order, [(1, "appended-second"), (2, "appended-first")]);
    assert_eq!(db.store.pending_audit_events().await.unwrap(), 0);
}

#[tokio::test]
async fn sealing_with_nothing_pending_seals_nothing() {
    let db = db().await;
    assert_eq!(db.store.seal_audit_events().await.unwrap(), 0);
    add_user(&db, "alice@example.com", Role::Admin).await;
    db.store.seal_audit_events().await.unwrap();
    assert_eq!(db.store.seal_audit_events().await.unwrap(), 0);
    assert_eq!(db.store.pending_audit_events().await.unwrap(), 0);
    assert_eq!(verified_log(db.store.as_ref()).await.len(), 1);
}
