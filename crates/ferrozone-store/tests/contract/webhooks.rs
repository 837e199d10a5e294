//! Webhook endpoints and their delivery state: edits with their audit events, secrets
//! sealed at rest, leases that let processes on one database share the delivery, and the
//! attempts each endpoint keeps. Two stores opened on one database stand for two processes;
//! lease expiry is tested through the `now` the store is given, never by waiting.

use std::sync::Arc;

use ferrozone_domain::audit::{Actor, AuditQuery, NewAuditEvent, Origin, Subject};
use ferrozone_domain::webhook::validate::{NewWebhook, WebhookChanges};
use ferrozone_domain::webhook::{Attempt, Outcome, Progress, Webhook, WebhookInsert, WebhookUpdate, KEPT_ATTEMPTS};
use ferrozone_domain::{Domain, DomainError, Principal, Settings, Store, Timestamp};
use ferrozone_store::testing::{test_options, TestDb};
use uuid::Uuid;

use crate::support::{assert_invalid, assert_not_found, cipher, db};

/// How long the leases of these tests last.
const LEASE_SECS: i64 = 30;

fn new_webhook(url: &str, now: Timestamp) -> WebhookInsert {
    WebhookInsert {
        id: Uuid::new_v4(),
        url: url.to_owned(),
        events: vec!["device.".to_owned()],
        secret: cipher().seal(b"whsec_a-secret-for-the-tests"),
        enabled: true,
        now,
    }
}

/// A second store on the same database: another process.
async fn other_process(db: &TestDb) -> Arc<dyn Store> {
    ferrozone_store::open(&db.url, &test_options()).await.unwrap().into_store()
}

/// Appends `count` events, so that endpoints have something to deliver.
async fn append_events(store: &dyn Store, count: usize) {
    let event = |i: usize| {
        let subject = Subject { kind: "device".to_owned(), id: Some(format!("d{i}")) };
        NewAuditEvent::new(Actor::cli(), "device.created", subject, Origin::default())
    };
    let events: Vec<_> = (0..count).map(event).collect();
    store.append_audit_events(&events).await.unwrap();
}

async fn head(store: &dyn Store) -> i64 {
    store.audit_head().await.unwrap().last_seq
}

async fn cursor(store: &dyn Store, id: Uuid) -> i64 {
    store.webhook_by_id(id).await.unwrap().unwrap().delivered_seq
}

/// The actions of the events after `seq`, oldest first.
async fn actions_after(store: &dyn Store, seq: i64) -> Vec<String> {
    let query = AuditQuery { after_seq: Some(seq), limit: 100, ..AuditQuery::default() };
    store.audit_records(&query).await.unwrap().into_iter().map(|r| r.action).collect()
}

fn attempt(seq: i64, at: Timestamp, outcome: Outcome) -> Attempt {
    let status = (outcome == Outcome::Delivered).then_some(204).or(Some(503));
    Attempt { seq, at, outcome, status, error: None, duration_ms: 12 }
}

/// A delivered event: the cursor moves to `seq`.
fn delivered(seq: i64, now: Timestamp) -> Progress {
    Progress {
        attempt: Some(attempt(seq, now, Outcome::Delivered)),
        delivered_seq: seq,
        next_attempt_at: now,
        failing_since: None,
        attempts: 0,
    }
}

/// A failed attempt at the event after `cursor`: the cursor stays, a retry is scheduled.
fn failed(cursor: i64, now: Timestamp, attempts: i64) -> Progress {
    Progress {
        attempt: Some(attempt(cursor + 1, now, Outcome::Failed)),
        delivered_seq: cursor,
        next_attempt_at: now.plus_secs(60),
        failing_since: Some(now),
        attempts,
    }
}

// Edits.

#[tokio::test]
async fn endpoints_are_created_read_listed_updated_and_deleted() {
    let db = db().await;
    let store = db.store.as_ref();
    let now = Timestamp::now();
    append_events(store, 2).await;

    let first = store.insert_webhook(&new_webhook("https://a.example.com/hook", now)).await.unwrap();
    assert_eq!((first.url.as_str(), first.enabled), ("https://a.example.com/hook", true));
    assert_eq!(first.events, ["device."]);
    assert_eq!(first.delivered_seq, 2, "starts at the audit head: the events before it are not its own");
    assert_eq!((first.inserted_at, first.updated_at), (now, now));
    assert_eq!((first.failing_since, first.last_attempt.clone()), (None, None));
    assert_eq!(actions_after(store, 2).await, ["webhook.created"]);
    // Read after the audit read above: on PostgreSQL an event counts once it is sealed.
    let read = store.webhook_by_id(first.id).await.unwrap().unwrap();
    assert_eq!(read.pending, 1, "its own creation is after its cursor");

    let second = store.insert_webhook(&new_webhook("https://b.example.com/hook", now.plus_secs(1))).await.unwrap();
    assert_eq!(store.webhook_by_id(first.id).await.unwrap().unwrap().url, first.url);
    let listed: Vec<Uuid> = store.list_webhooks().await.unwrap().iter().map(|w| w.id).collect();
    assert_eq!(listed, [first.id, second.id], "oldest first");

    let later = now.plus_secs(10);
    let change =
        WebhookUpdate { url: Some("https://c.example.com/".into()), enabled: Some(false), ..Default::default() };
    let changed = store.update_webhook(first.id, &change, later).await.unwrap();
    assert_eq!((changed.url.as_str(), changed.enabled), ("https://c.example.com/", false));
    assert_eq!(changed.events, first.events, "a field left out is kept");
    assert_eq!((changed.inserted_at, changed.updated_at), (now, later));
    let stored = store.webhook_by_id(first.id).await.unwrap().unwrap();
    // `pending` is a rough count: the answer is read before the change's own event.
    assert_eq!(Webhook { pending: changed.pending, ..stored }, changed);
    let seq = head(store).await;
    assert_eq!(actions_after(store, seq - 1).await, ["webhook.updated"]);

    let unchanged = store.update_webhook(first.id, &WebhookUpdate::default(), later).await.unwrap();
    assert_eq!(unchanged.url, changed.url);
    assert_eq!(head(store).await, seq, "a change of nothing records no event");

    assert!(store.delete_webhook(first.id).await.unwrap());
    assert_eq!(store.webhook_by_id(first.id).await.unwrap(), None);
    let listed: Vec<Uuid> = store.list_webhooks().await.unwrap().iter().map(|w| w.id).collect();
    assert_eq!(listed, [second.id]);
    assert_eq!(actions_after(store, seq).await, ["webhook.deleted"]);
    assert!(!store.delete_webhook(first.id).await.unwrap(), "already gone");
}

#[tokio::test]
async fn failed_edits_write_nothing() {
    let db = db().await;
    let store = db.store.as_ref();
    let kept = store.insert_webhook(&new_webhook("https://a.example.com/", Timestamp::now())).await.unwrap();
    let seq = head(store).await;

    let mut again = new_webhook("https://again.example.com/", Timestamp::now());
    again.id = kept.id;
    assert!(store.insert_webhook(&again).await.is_err(), "an id already taken");
    let missing = Uuid::new_v4();
    let change = WebhookUpdate { url: Some("https://b.example.com/".into()), ..Default::default() };
    assert_not_found(store.update_webhook(missing, &change, Timestamp::now()).await);
    assert!(!store.delete_webhook(missing).await.unwrap());

    assert_eq!(store.list_webhooks().await.unwrap().into_iter().map(settled).collect::<Vec<_>>(), [settled(kept)]);
    assert_eq!(head(store).await, seq, "no audit event for an edit that did not happen");
}

/// `webhook` without its `pending` count, which moves as events are appended and (on
/// PostgreSQL) sealed: a rough count by design (docs/api.md, "Webhooks").
fn settled(webhook: Webhook) -> Webhook {
    Webhook { pending: 0, ..webhook }
}

async fn domain(db: &TestDb) -> Domain {
    Domain::open(db.store.clone(), Arc::new(Settings::standard()), cipher().clone()).await.unwrap()
}

#[tokio::test]
async fn invalid_input_writes_nothing() {
    let db = db().await;
    let domain = domain(&db).await;
    let operator = Principal::operator();
    let seq = head(db.store.as_ref()).await;

    let bad_url = NewWebhook { url: Some("ftp://example.com/".into()), ..Default::default() };
    assert_invalid(
        domain.create_webhook(&operator, &bad_url).await.map(|created| created.webhook),
        "url",
        "must be an http or https URL",
    );
    let short_secret = NewWebhook {
        url: Some("https://example.com/".into()),
        secret: Some("short".to_owned().into()),
        ..Default::default()
    };
    assert_invalid(
        domain.create_webhook(&operator, &short_secret).await.map(|created| created.webhook),
        "secret",
        "is too short (minimum is 16 characters)",
    );
    assert_eq!(db.store.list_webhooks().await.unwrap(), []);

    let good = NewWebhook { url: Some("https://example.com/".into()), ..Default::default() };
    let created = domain.create_webhook(&operator, &good).await.unwrap().webhook;
    let seq_created = head(db.store.as_ref()).await;
    assert_eq!(seq_created, seq + 1);
    let bad = WebhookChanges {
        url: Some("https://elsewhere.example.com/".into()),
        events: Some(vec!["nothing.created".into()]),
        ..Default::default()
    };
    let refused = domain.update_webhook(&operator, created.id, &bad).await;
    assert!(matches!(refused, Err(DomainError::Invalid(ref errors)) if errors.has("events")), "{:?}", refused.err());
    let stored = db.store.webhook_by_id(created.id).await.unwrap().map(settled);
    assert_eq!(stored, Some(settled(created)), "the valid url is not applied either");
    assert_eq!(head(db.store.as_ref()).await, seq_created);
}

/// The secret as stored, read past the store.
async fn stored_secret(db: &TestDb, id: Uuid) -> Vec<u8> {
    let select = "SELECT secret FROM webhooks WHERE id = $1";
    match db.url.strip_prefix("sqlite://") {
        Some(path) => {
            let conn = rusqlite::Connection::open(path).unwrap();
            conn.query_row(select, [id], |row| row.get(0)).unwrap()
        }
        None => {
            use sqlx::Connection;
            let mut conn = sqlx::PgConnection::connect(&db.url).await.unwrap();
            let secret = sqlx::query_scalar(select).bind(id).fetch_one(&mut conn).await.unwrap();
            conn.close().await.unwrap();
            secret
        }
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|window| window == needle)
}

#[tokio::test]
async fn secrets_are_sealed_at_rest_and_never_in_the_audit_log() {
    let db = db().await;
    let domain = domain(&db).await;
    let operator = Principal::operator();
    let given = "given-secret-0123456789";
    let input = NewWebhook {
        url: Some("https://example.com/".into()),
        secret: Some(given.to_owned().into()),
        ..Default::default()
    };
    let id = domain.create_webhook(&operator, &input).await.unwrap().webhook.id;
    let stored = stored_secret(&db, id).await;
    assert!(!contains(&stored, given.as_bytes()), "the secret is stored sealed, not in clear");
    let sealed = ferrozone_domain::crypto::Sealed(stored.clone());
    assert_eq!(cipher().open(&sealed).unwrap().as_slice(), given.as_bytes(), "and can be opened to sign");

    let rotate = WebhookChanges { rotate_secret: true, ..Default::default() };
    let rotated = domain.update_webhook(&operator, id, &rotate).await.unwrap().secret.unwrap();
    let stored_again = stored_secret(&db, id).await;
    assert_ne!(stored_again, stored);
    assert!(!contains(&stored_again, rotated.as_bytes()));
    let sealed = ferrozone_domain::crypto::Sealed(stored_again);
    assert_eq!(cipher().open(&sealed).unwrap().as_slice(), rotated.as_bytes());

    let query = AuditQuery { after_seq: Some(0), limit: 100, ..AuditQuery::default() };
    for record in db.store.audit_records(&query).await.unwrap() {
        assert!(!record.changes.contains(given) && !record.changes.contains(rotated.as_str()), "{}", record.changes);
    }
}

// Leases.

#[tokio::test]
async fn only_enabled_due_endpoints_with_events_are_leased() {
    let db = db().await;
    let store = db.store.as_ref();
    let now = Timestamp::now();
    let until = now.plus_secs(LEASE_SECS);
    let owner = Uuid::new_v4();
    let caught_up = store.insert_webhook(&new_webhook("https://a.example.com/", now)).await.unwrap();
    let leased = store.claim_webhooks(owner, now, until, 10).await.unwrap();
    assert_eq!(leased.iter().map(|l| l.id).collect::<Vec<_>>(), [caught_up.id], "its own creation is to deliver");
    assert!(store.record_webhook_progress(caught_up.id, owner, &delivered(head(store).await, now)).await.unwrap());
    store.release_webhook_lease(caught_up.id, owner).await.unwrap();
    assert_eq!(store.claim_webhooks(owner, now, until, 10).await.unwrap(), [], "nothing to deliver");

    let mut disabled = new_webhook("https://b.example.com/", now);
    disabled.enabled = false;
    store.insert_webhook(&disabled).await.unwrap();
    let [first, second] = [0, 1].map(|_| new_webhook("https://c.example.com/", now));
    for endpoint in [&first, &second] {
        store.insert_webhook(endpoint).await.unwrap();
    }
    append_events(store, 1).await;
    let leased = store.claim_webhooks(owner, now, until, 1).await.unwrap();
    assert_eq!(leased.len(), 1, "no more than asked for");
    let rest = store.claim_webhooks(owner, now, until, 10).await.unwrap();
    let mut ids: Vec<Uuid> = leased.iter().chain(&rest).map(|l| l.id).collect();
    ids.sort();
    let mut expected = vec![caught_up.id, first.id, second.id];
    expected.sort();
    assert_eq!(ids, expected, "the disabled endpoint is left out");

    // A failure schedules the next attempt: not due before it, due again after an edit.
    let cursor_now = cursor(store, first.id).await;
    assert!(store.record_webhook_progress(first.id, owner, &failed(cursor_now, now, 1)).await.unwrap());
    store.release_webhook_lease(first.id, owner).await.unwrap();
    let before_retry = now.plus_secs(LEASE_SECS - 1);
    assert_eq!(store.claim_webhooks(owner, before_retry, now.plus_secs(90), 10).await.unwrap(), []);
    store.update_webhook(first.id, &WebhookUpdate::default(), now.plus_secs(1)).await.unwrap();
    let due = store.claim_webhooks(owner, now.plus_secs(2), now.plus_secs(90), 10).await.unwrap();
    assert_eq!(due.iter().map(|l| l.id).collect::<Vec<_>>(), [first.id]);
    assert_eq!((due[0].attempts, due[0].failing_since), (1, Some(now)), "the lease carries the failure so far");
    assert_eq!(due[0].secret, first.secret);
}

#[tokio::test]
async fn while_one_process_holds_a_lease_the_other_cannot_take_or_use_it() {
    let db = db().await;
    let (this, other) = (db.store.clone(), other_process(&db).await);
    let now = Timestamp::now();
    let endpoint = this.insert_webhook(&new_webhook("https://a.example.com/", now)).await.unwrap();
    append_events(this.as_ref(), 3).await;
    let (holder, rival) = (Uuid::new_v4(), Uuid::new_v4());

    let leased = this.claim_webhooks(holder, now, now.plus_secs(LEASE_SECS), 10).await.unwrap();
    assert_eq!(leased.iter().map(|l| (l.id, l.delivered_seq)).collect::<Vec<_>>(), [(endpoint.id, 0)]);
    let during = now.plus_secs(LEASE_SECS - 1);
    assert_eq!(other.claim_webhooks(rival, during, during.plus_secs(LEASE_SECS), 10).await.unwrap(), []);
    assert!(!other.renew_webhook_lease(endpoint.id, rival, during.plus_secs(LEASE_SECS)).await.unwrap());
    assert!(!other.record_webhook_progress(endpoint.id, rival, &delivered(2, during)).await.unwrap());
    other.release_webhook_lease(endpoint.id, rival).await.unwrap();
    assert_eq!(cursor(other.as_ref(), endpoint.id).await, 0, "the rival moved nothing");
    assert_eq!(other.webhook_attempts(endpoint.id, 10).await.unwrap(), [], "nor recorded an attempt");

    // The holder renews past the first expiry, and still holds the lease after it.
    assert!(this.renew_webhook_lease(endpoint.id, holder, now.plus_secs(2 * LEASE_SECS)).await.unwrap());
    let after_first_expiry = now.plus_secs(LEASE_SECS + 1);
    assert_eq!(other.claim_webhooks(rival, after_first_expiry, after_first_expiry.plus_secs(5), 10).await.unwrap(), []);
    assert!(this.record_webhook_progress(endpoint.id, holder, &delivered(2, during)).await.unwrap());
    assert_eq!(cursor(other.as_ref(), endpoint.id).await, 2, "the other process sees the cursor move");

    // Released, it is the other's to take, from the cursor.
    this.release_webhook_lease(endpoint.id, holder).await.unwrap();
    let taken = other.claim_webhooks(rival, during, during.plus_secs(LEASE_SECS), 10).await.unwrap();
    assert_eq!(taken.iter().map(|l| (l.id, l.delivered_seq)).collect::<Vec<_>>(), [(endpoint.id, 2)]);
    assert!(!this.record_webhook_progress(endpoint.id, holder, &delivered(3, during)).await.unwrap());
    assert_eq!(cursor(this.as_ref(), endpoint.id).await, 2);
}

#[tokio::test]
async fn an_expired_lease_is_taken_over_and_its_old_holder_refused() {
    let db = db().await;
    let (this, other) = (db.store.clone(), other_process(&db).await);
    let now = Timestamp::now();
    let endpoint = this.insert_webhook(&new_webhook("https://a.example.com/", now)).await.unwrap();
    append_events(this.as_ref(), 3).await;
    let (gone, successor) = (Uuid::new_v4(), Uuid::new_v4());
    assert_eq!(this.claim_webhooks(gone, now, now.plus_secs(LEASE_SECS), 10).await.unwrap().len(), 1);

    let expired = now.plus_secs(LEASE_SECS + 1);
    let taken = other.claim_webhooks(successor, expired, expired.plus_secs(LEASE_SECS), 10).await.unwrap();
    assert_eq!(taken.iter().map(|l| l.id).collect::<Vec<_>>(), [endpoint.id]);

    assert!(!this.renew_webhook_lease(endpoint.id, gone, expired.plus_secs(LEASE_SECS)).await.unwrap());
    assert!(!this.record_webhook_progress(endpoint.id, gone, &delivered(3, expired)).await.unwrap());
    assert_eq!(cursor(this.as_ref(), endpoint.id).await, 0, "the old holder's step is refused");
    assert_eq!(this.webhook_attempts(endpoint.id, 10).await.unwrap(), []);
    this.release_webhook_lease(endpoint.id, gone).await.unwrap();

    assert!(other.record_webhook_progress(endpoint.id, successor, &delivered(1, expired)).await.unwrap());
    assert!(other.renew_webhook_lease(endpoint.id, successor, expired.plus_secs(2 * LEASE_SECS)).await.unwrap());
    assert_eq!(cursor(this.as_ref(), endpoint.id).await, 1, "the old holder's release did not end the new lease");
}

#[tokio::test]
async fn of_processes_racing_for_an_endpoint_one_wins() {
    let db = db().await;
    let now = Timestamp::now();
    let endpoint = db.store.insert_webhook(&new_webhook("https://a.example.com/", now)).await.unwrap();
    let mut stores = vec![db.store.clone()];
    for _ in 0..3 {
        stores.push(other_process(&db).await);
    }
    let claims = stores.into_iter().map(|store| {
        tokio::spawn(async move { store.claim_webhooks(Uuid::new_v4(), now, now.plus_secs(LEASE_SECS), 10).await })
    });
    let mut winners = Vec::new();
    for claim in claims.collect::<Vec<_>>() {
        winners.extend(claim.await.unwrap().unwrap());
    }
    assert_eq!(winners.iter().map(|l| l.id).collect::<Vec<_>>(), [endpoint.id]);
}

#[tokio::test]
async fn the_cursor_never_moves_backwards() {
    let db = db().await;
    let store = db.store.as_ref();
    let now = Timestamp::now();
    let endpoint = store.insert_webhook(&new_webhook("https://a.example.com/", now)).await.unwrap();
    append_events(store, 5).await;
    let owner = Uuid::new_v4();
    store.claim_webhooks(owner, now, now.plus_secs(LEASE_SECS), 10).await.unwrap();
    assert!(store.record_webhook_progress(endpoint.id, owner, &delivered(4, now)).await.unwrap());

    // A step computed from an older cursor (a delivery overtaken by another of the same
    // process) is refused whole: neither the cursor nor the schedule moves back.
    assert!(!store.record_webhook_progress(endpoint.id, owner, &delivered(2, now)).await.unwrap());
    assert!(!store.record_webhook_progress(endpoint.id, owner, &failed(3, now, 1)).await.unwrap());
    let stored = store.webhook_by_id(endpoint.id).await.unwrap().unwrap();
    assert_eq!((stored.delivered_seq, stored.failing_since), (4, None));
    let seqs: Vec<i64> = store.webhook_attempts(endpoint.id, 10).await.unwrap().iter().map(|a| a.seq).collect();
    assert_eq!(seqs, [4]);

    // A failure at the cursor keeps it where it is.
    assert!(store.record_webhook_progress(endpoint.id, owner, &failed(4, now, 1)).await.unwrap());
    assert!(store.record_webhook_progress(endpoint.id, owner, &delivered(5, now)).await.unwrap());
    assert_eq!(cursor(store, endpoint.id).await, 5);
}

// Attempts.

#[tokio::test]
async fn attempts_are_kept_per_endpoint_newest_first_and_bounded() {
    let db = db().await;
    let store = db.store.as_ref();
    let now = Timestamp::now();
    let busy = store.insert_webhook(&new_webhook("https://a.example.com/", now)).await.unwrap();
    let quiet = store.insert_webhook(&new_webhook("https://b.example.com/", now)).await.unwrap();
    append_events(store, 1).await;
    let owner = Uuid::new_v4();
    assert_eq!(store.claim_webhooks(owner, now, now.plus_secs(LEASE_SECS), 10).await.unwrap().len(), 2);

    let start = cursor(store, busy.id).await;
    let made = KEPT_ATTEMPTS + 5;
    for n in 1..=made {
        let progress = failed(start, now.plus_secs(n), n);
        assert!(store.record_webhook_progress(busy.id, owner, &progress).await.unwrap());
    }
    let skipped = Progress { attempt: None, ..failed(cursor(store, quiet.id).await, now, 1) };
    assert!(store.record_webhook_progress(quiet.id, owner, &skipped).await.unwrap());
    assert_eq!(store.webhook_attempts(quiet.id, 10).await.unwrap(), [], "a step without a request records none");
    let only = failed(cursor(store, quiet.id).await, now, 1);
    assert!(store.record_webhook_progress(quiet.id, owner, &only).await.unwrap());

    let kept = store.webhook_attempts(busy.id, 1000).await.unwrap();
    let times: Vec<i64> = kept.iter().map(|a| a.at.micros()).collect();
    let newest_first: Vec<i64> = (6..=made).rev().map(|n| now.plus_secs(n).micros()).collect();
    assert_eq!(times, newest_first, "the last {KEPT_ATTEMPTS}, newest first");
    assert_eq!(kept[0], attempt(start + 1, now.plus_secs(made), Outcome::Failed));
    assert_eq!(store.webhook_attempts(busy.id, 3).await.unwrap(), kept[..3]);
    assert_eq!(store.webhook_attempts(quiet.id, 10).await.unwrap(), [only.attempt.unwrap()]);

    let last = store.webhook_by_id(busy.id).await.unwrap().unwrap().last_attempt.unwrap();
    assert_eq!((last.at, last.outcome, last.status), (now.plus_secs(made), Outcome::Failed, Some(503)));

    assert!(store.delete_webhook(busy.id).await.unwrap());
    assert_eq!(store.webhook_attempts(busy.id, 1000).await.unwrap(), [], "deleted with the endpoint");
    assert_eq!(store.webhook_attempts(quiet.id, 10).await.unwrap().len(), 1, "the other's are kept");
}
