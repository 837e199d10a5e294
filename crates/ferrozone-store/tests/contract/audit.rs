//! The audit log: appends are numbered in order and chained, also when many race; reads
//! filter and page.

use std::sync::Arc;

use ferrozone_domain::audit::{self, Actor, ActorKind, AuditQuery, Change, NewAuditEvent, Origin, Subject};
use ferrozone_domain::Timestamp;
use serde_json::json;
use uuid::Uuid;

use crate::support::db;

fn event(actor: Actor, action: &str, subject_id: &str) -> NewAuditEvent {
    NewAuditEvent::new(
        actor,
        action,
        Subject { kind: action.split('.').next().unwrap().to_owned(), id: Some(subject_id.to_owned()) },
        Origin { client_address: Some("192.0.2.7".into()), request_id: Some("req-1".into()) },
    )
    .with_changes(vec![Change::value("name", None, Some(json!("laptop"))), Change::secret("preshared_key")])
}

fn every(limit: u32) -> AuditQuery {
    AuditQuery { after_seq: Some(0), limit, ..AuditQuery::default() }
}

#[tokio::test]
async fn concurrent_appends_form_one_unbroken_chain() {
    let db = db().await;
    let store = db.store.clone();
    let tasks: Vec<_> = (0..40)
        .map(|i| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let events = [event(Actor::cli(), "device.created", &format!("d{i}"))];
                store.append_audit_events(&events).await
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap().unwrap();
    }

    let head = db.store.audit_head().await.unwrap();
    assert_eq!(head.last_seq, 40);
    let records = db.store.audit_records(&every(100)).await.unwrap();
    assert_eq!(records.iter().map(|r| r.seq).collect::<Vec<_>>(), (1..=40).collect::<Vec<_>>());
    let verified = audit::verify(&audit::AuditKey::unkeyed(), &head, &records).unwrap();
    assert_eq!(verified.events, 40);

    let first = records[0].decode().unwrap();
    assert_eq!(first.event.origin.client_address.as_deref(), Some("192.0.2.7"));
    assert_eq!(first.event.changes[1], Change::secret("preshared_key"));
}

#[tokio::test]
async fn reads_filter_by_actor_subject_and_action_and_page_newest_first() {
    let db = db().await;
    let alice = Uuid::new_v4();
    let token = Actor { kind: ActorKind::Token, id: Some("t1".into()), user_id: Some(alice) };
    db.store
        .append_audit_events(&[
            event(token.clone(), "device.created", "d1"),
            event(Actor::cli(), "user.updated", "u1"),
            event(token.clone(), "device.deleted", "d1"),
            event(Actor::cli(), "device.created", "d2"),
        ])
        .await
        .unwrap();
    let seqs = |records: Vec<audit::EventRecord>| records.iter().map(|r| r.seq).collect::<Vec<_>>();

    let by_user = AuditQuery { actor_user_id: Some(alice), limit: 10, ..AuditQuery::default() };
    assert_eq!(seqs(db.store.audit_records(&by_user).await.unwrap()), [3, 1]);
    let devices = AuditQuery { action: Some("device.".into()), limit: 10, ..AuditQuery::default() };
    assert_eq!(seqs(db.store.audit_records(&devices).await.unwrap()), [4, 3, 1]);
    let d1 = AuditQuery {
        subject_kind: Some("device".into()),
        subject_id: Some("d1".into()),
        limit: 10,
        ..AuditQuery::default()
    };
    assert_eq!(seqs(db.store.audit_records(&d1).await.unwrap()), [3, 1]);
    let cli = AuditQuery { actor_kind: Some(ActorKind::Cli), limit: 10, ..AuditQuery::default() };
    assert_eq!(seqs(db.store.audit_records(&cli).await.unwrap()), [4, 2]);

    let first_page = AuditQuery { limit: 2, ..AuditQuery::default() };
    assert_eq!(seqs(db.store.audit_records(&first_page).await.unwrap()), [4, 3]);
    let next_page = AuditQuery { before_seq: Some(3), limit: 2, ..AuditQuery::default() };
    assert_eq!(seqs(db.store.audit_records(&next_page).await.unwrap()), [2, 1]);
    let after = AuditQuery { after_seq: Some(2), limit: 10, ..AuditQuery::default() };
    assert_eq!(seqs(db.store.audit_records(&after).await.unwrap()), [3, 4]);
}

fn at(event: NewAuditEvent, micros: i64) -> NewAuditEvent {
    NewAuditEvent { at: Timestamp::from_micros(micros), ..event }
}

#[tokio::test]
async fn pruning_removes_the_oldest_in_batches_and_the_rest_still_verifies() {
    let db = db().await;
    let events: Vec<_> =
        (1..=5).map(|i| at(event(Actor::cli(), "device.created", &format!("d{i}")), i * 1000)).collect();
    db.store.append_audit_events(&events).await.unwrap();
    let before_pruning = db.store.audit_records(&every(10)).await.unwrap();

    // Events at 1000, 2000 and 3000 are older than 3500: a batch of two takes the first two.
    assert_eq!(db.store.prune_audit_events(Timestamp::from_micros(3500), 2).await.unwrap(), 2);
    let head = db.store.audit_head().await.unwrap();
    assert_eq!((head.pruned_seq, head.pruned_hash.to_vec()), (2, before_pruning[1].hash.clone()));
    let kept = db.store.audit_records(&every(10)).await.unwrap();
    // 6: the `audit.pruned` event vouching for the mark (docs/operations.md, "Audit log").
    assert_eq!(kept.iter().map(|r| r.seq).collect::<Vec<_>>(), [3, 4, 5, 6]);
    assert_eq!(kept[3].action, "audit.pruned");
    let verified = audit::verify(&audit::AuditKey::unkeyed(), &head, &kept).unwrap();
    assert_eq!((verified.events, verified.first), (4, Some(3)));

    assert_eq!(db.store.prune_audit_events(Timestamp::from_micros(3500), 1000).await.unwrap(), 1);
    assert_eq!(db.store.prune_audit_events(Timestamp::from_micros(3500), 1000).await.unwrap(), 0, "nothing older");
    let head = db.store.audit_head().await.unwrap();
    assert_eq!(head.pruned_seq, 3);

    // New events chain on after pruning, and everything kept verifies from the new start.
    db.store.append_audit_events(&[event(Actor::cli(), "user.updated", "u1")]).await.unwrap();
    let head = db.store.audit_head().await.unwrap();
    let kept = db.store.audit_records(&every(10)).await.unwrap();
    assert_eq!(audit::verify(&audit::AuditKey::unkeyed(), &head, &kept).unwrap().events, 5, "4 to 8");
}

#[tokio::test]
async fn pruning_an_empty_or_young_log_is_a_no_op() {
    let db = db().await;
    assert_eq!(db.store.prune_audit_events(Timestamp::now(), 1000).await.unwrap(), 0);
    assert_eq!(db.store.audit_head().await.unwrap(), audit::AuditHead::EMPTY);

    db.store.append_audit_events(&[event(Actor::cli(), "device.created", "d1")]).await.unwrap();
    let head = db.store.audit_head().await.unwrap();
    assert_eq!(db.store.prune_audit_events(Timestamp::from_micros(0), 1000).await.unwrap(), 0);
    assert_eq!(db.store.audit_head().await.unwrap(), head);
}

#[tokio::test]
async fn pruners_racing_each_other_and_appends_keep_one_chain() {
    let db = db().await;
    let events: Vec<_> = (1..=30).map(|i| at(event(Actor::cli(), "device.created", &format!("d{i}")), i)).collect();
    db.store.append_audit_events(&events).await.unwrap();
    let tasks: Vec<_> = (0..6)
        .map(|i| {
            let store = Arc::clone(&db.store);
            tokio::spawn(async move {
                if i % 2 == 0 {
                    store.prune_audit_events(Timestamp::from_micros(21), 4).await.map(|_| ())
                } else {
                    store.append_audit_events(&[event(Actor::cli(), "user.updated", "u")]).await
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    let head = db.store.audit_head().await.unwrap();
    // 30 events, 3 appended, and an `audit.pruned` event per pruner.
    assert_eq!((head.pruned_seq, head.last_seq), (12, 36));
    let kept = db.store.audit_records(&every(100)).await.unwrap();
    assert_eq!(audit::verify(&audit::AuditKey::unkeyed(), &head, &kept).unwrap().events, 24);
}
