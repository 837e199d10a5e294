//! Someone with write access to the database and without the key tampers with the audit
//! log: with the head's mark (to hide edited or deleted early events), with the head's
//! seal, or by adding a row after the head. [`audit::verify_log`], what `ferrozone audit
//! verify` runs, reports each; an untouched log and a legitimately pruned one verify.

use ferrozone_domain::audit::{self, Actor, AuditKey, Break, NewAuditEvent, Origin, Subject, Verified};
use ferrozone_domain::Timestamp;
use ferrozone_store::testing::TestDb;

use crate::support::db;

/// Six events, at 1000..6000 micros, so that retention can be aimed at the first ones.
async fn six_events(db: &TestDb) {
    let events: Vec<NewAuditEvent> = (1..=6)
        .map(|i| {
            let subject = Subject { kind: "device".into(), id: Some(format!("d{i}")) };
            let event = NewAuditEvent::new(Actor::cli(), "device.created", subject, Origin::default());
            NewAuditEvent { at: Timestamp::from_micros(i * 1000), ..event }
        })
        .collect();
    db.store.append_audit_events(&events).await.unwrap();
    // Sealed (on PostgreSQL), so that tampering meets them chained.
    db.store.seal_audit_events().await.unwrap();
}

async fn check(db: &TestDb) -> Result<Verified, Break> {
    audit::verify_log(db.store.as_ref(), &AuditKey::unkeyed()).await.unwrap()
}

/// Runs `statements` on the database directly, past the store. On PostgreSQL `{uuid}`
/// becomes a fresh uuid, on SQLite a fresh 16-byte blob.
async fn tamper(db: &TestDb, statements: &[&str]) {
    match db.url.strip_prefix("sqlite://") {
        Some(path) => {
            let conn = rusqlite::Connection::open(path).unwrap();
            for statement in statements {
                conn.execute_batch(&statement.replace("{uuid}", "randomblob(16)")).unwrap();
            }
        }
        None => {
            use sqlx::Connection;
            let mut conn = sqlx::PgConnection::connect(&db.url).await.unwrap();
            for statement in statements {
                sqlx::query(&statement.replace("{uuid}", "gen_random_uuid()")).execute(&mut conn).await.unwrap();
            }
            conn.close().await.unwrap();
        }
    }
}

/// Moves the pruned mark to event `seq`, taking its stored hash, as an intruder would.
fn move_mark(seq: i64) -> String {
    format!(
        "UPDATE audit_head SET pruned_seq = {seq}, \
         pruned_hash = (SELECT hash FROM audit_events WHERE seq = {seq}) WHERE id = 1"
    )
}

#[tokio::test]
async fn an_untouched_and_a_legitimately_pruned_log_verify() {
    let db = db().await;
    assert_eq!(check(&db).await, Ok(Verified { events: 0, first: None, last: None }), "an empty log");
    six_events(&db).await;
    assert_eq!(check(&db).await, Ok(Verified { events: 6, first: Some(1), last: Some(6) }));

    // Retention removes 1 and 2 and appends the event that vouches for the mark.
    assert_eq!(db.store.prune_audit_events(Timestamp::from_micros(2500), 1000).await.unwrap(), 2);
    let head = db.store.audit_head().await.unwrap();
    assert_eq!((head.pruned_seq, head.last_seq), (2, 7));
    let query = audit::AuditQuery { after_seq: Some(6), limit: 10, ..Default::default() };
    let vouching = db.store.audit_records(&query).await.unwrap().remove(0).decode().unwrap();
    assert_eq!((vouching.event.action.as_str(), vouching.event.actor.kind), ("audit.pruned", audit::ActorKind::System));
    let field = |name: &str| vouching.event.changes.iter().find(|c| c.field == name).and_then(|c| c.after.clone());
    assert_eq!(field("through_seq"), Some(serde_json::json!(2)));
    let hex: String = head.pruned_hash.iter().map(|byte| format!("{byte:02x}")).collect();
    assert_eq!(field("through_hash"), Some(serde_json::json!(hex)));
    assert_eq!(field("removed"), Some(serde_json::json!(2)));
    assert_eq!(check(&db).await, Ok(Verified { events: 5, first: Some(3), last: Some(7) }));

    // Pruned again, through the first vouching event; the new one vouches for the new mark.
    six_events(&db).await;
    assert_eq!(db.store.prune_audit_events(Timestamp::from_micros(4500), 1000).await.unwrap(), 2);
    assert_eq!(check(&db).await, Ok(Verified { events: 10, first: Some(5), last: Some(14) }));
}

#[tokio::test]
async fn an_early_event_edited_behind_a_moved_mark_is_found() {
    let db = db().await;
    six_events(&db).await;
    // Event 2 is edited, and the mark moved past it, as if retention had removed 1 and 2.
    tamper(&db, &["UPDATE audit_events SET subject_id = 'forged' WHERE seq = 2", &move_mark(2)]).await;
    assert_eq!(check(&db).await, Err(Break::HeadSeal));
    // The rows are still there, at or below the mark: found even with a head made whole.
    assert!(matches!(check_with_head_resealed(&db).await, Err(Break::BelowMark { seq: 1, pruned_seq: 2 })));
}

/// What verification says once the head's seal is removed and a write re-seals it as one
/// from before heads were sealed: the row-level checks, not the seal, must find it.
async fn check_with_head_resealed(db: &TestDb) -> Result<Verified, Break> {
    tamper(db, &["UPDATE audit_head SET seal = NULL WHERE id = 1"]).await;
    let subject = Subject { kind: "device".into(), id: Some("later".into()) };
    let later = NewAuditEvent::new(Actor::cli(), "device.updated", subject, Origin::default());
    db.store.append_audit_events(&[later]).await.unwrap();
    check(db).await
}

#[tokio::test]
async fn early_events_deleted_behind_a_moved_mark_are_found() {
    let db = db().await;
    six_events(&db).await;
    tamper(&db, &[&move_mark(3), "DELETE FROM audit_events WHERE seq <= 3"]).await;
    assert_eq!(check(&db).await, Err(Break::HeadSeal));
    // Re-sealed by a write after its seal was removed, the mark is still vouched for by no
    // audit.pruned event.
    assert_eq!(check_with_head_resealed(&db).await, Err(Break::Unvouched { pruned_seq: 3 }));
}

#[tokio::test]
async fn a_mark_moved_past_a_legitimate_pruning_is_found() {
    let db = db().await;
    six_events(&db).await;
    db.store.prune_audit_events(Timestamp::from_micros(2500), 1000).await.unwrap();
    // Event 3 and the vouching event stay; the mark is moved to 3 and event 3 deleted.
    tamper(&db, &[&move_mark(3), "DELETE FROM audit_events WHERE seq = 3"]).await;
    assert_eq!(check(&db).await, Err(Break::HeadSeal));
    assert_eq!(check_with_head_resealed(&db).await, Err(Break::Unvouched { pruned_seq: 3 }));
}

#[tokio::test]
async fn a_row_added_after_the_head_is_found() {
    let db = db().await;
    six_events(&db).await;
    tamper(
        &db,
        &["INSERT INTO audit_events (seq, id, at, actor_kind, actor_id, actor_user_id, action, subject_kind, \
           subject_id, changes, client_address, request_id, prev_hash, hash) \
           SELECT seq + 1, {uuid}, at, actor_kind, actor_id, actor_user_id, action, subject_kind, 'added', \
           changes, client_address, request_id, hash, hash FROM audit_events WHERE seq = 6"],
    )
    .await;
    assert_eq!(check(&db).await, Err(Break::AfterHead { seq: 7, head_seq: 6 }));
}

#[tokio::test]
async fn a_head_without_its_seal_is_reported_until_the_next_event_seals_it() {
    let db = db().await;
    six_events(&db).await;
    // As after an upgrade from before heads were sealed (docs/operations.md).
    tamper(&db, &["UPDATE audit_head SET seal = NULL WHERE id = 1"]).await;
    assert_eq!(check(&db).await, Err(Break::Unsealed { head_seq: 6 }));
    let subject = Subject { kind: "device".into(), id: Some("d7".into()) };
    db.store
        .append_audit_events(&[NewAuditEvent::new(Actor::cli(), "device.created", subject, Origin::default())])
        .await
        .unwrap();
    assert_eq!(check(&db).await, Ok(Verified { events: 7, first: Some(1), last: Some(7) }));
}

#[tokio::test]
async fn a_broken_seal_is_carried_forward_by_later_writes() {
    let db = db().await;
    six_events(&db).await;
    tamper(&db, &["UPDATE audit_head SET seal = (SELECT hash FROM audit_events WHERE seq = 1) WHERE id = 1"]).await;
    assert_eq!(check(&db).await, Err(Break::HeadSeal));
    let subject = Subject { kind: "device".into(), id: Some("d7".into()) };
    db.store
        .append_audit_events(&[NewAuditEvent::new(Actor::cli(), "device.created", subject, Origin::default())])
        .await
        .unwrap();
    assert_eq!(check(&db).await, Err(Break::HeadSeal), "a write does not vouch for a tampered head");
}
