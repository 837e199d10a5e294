//! `GET /v0/audit_events`: the audit log, newest first, filtered and paged; admins only.
//! The events are appended here directly; the tests filter on their own `probe.` actions
//! so that events recorded by the requests themselves do not disturb them.

use axum::http::StatusCode;
use ferrozone_domain::audit::{Actor, ActorKind, Change, NewAuditEvent, Origin, Subject};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::helpers::{is_api_timestamp, TestApp};

fn probe(actor: Actor, verb: &str, subject_id: &str) -> NewAuditEvent {
    NewAuditEvent::new(
        actor,
        &format!("probe.{verb}"),
        Subject { kind: "probe".into(), id: Some(subject_id.into()) },
        Origin { client_address: Some("192.0.2.9".into()), request_id: Some("req-9".into()) },
    )
    .with_changes(vec![Change::value("name", Some(json!("old")), Some(json!("new"))), Change::secret("private_key")])
}

fn subjects(page: &Value) -> Vec<&str> {
    page["data"].as_array().unwrap().iter().map(|e| e["subject"]["id"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn admins_read_events_newest_first_page_by_page() {
    let app = TestApp::new().await;
    let events: Vec<_> = (1..=5).map(|i| probe(Actor::cli(), "made", &format!("p{i}"))).collect();
    app.store.append_audit_events(&events).await.unwrap();

    let first = app.get("/v0/audit_events?action=probe.&limit=2", &app.admin).await;
    let first = first.expect_status(StatusCode::OK).body.clone();
    assert_eq!(subjects(&first), ["p5", "p4"]);
    assert_eq!(first["metadata"]["limit"], 2);
    let event = &first["data"][0];
    assert_eq!(event["actor"], json!({"kind": "cli", "id": null, "user_id": null}));
    assert_eq!(event["action"], "probe.made");
    assert_eq!(event["origin"], json!({"client_address": "192.0.2.9", "request_id": "req-9"}));
    assert_eq!(event["changes"][1], json!({"field": "private_key", "secret": true}));
    assert!(is_api_timestamp(event["at"].as_str().unwrap()));
    assert_eq!(event["hash"].as_str().unwrap().len(), 64);
    assert_eq!(first["data"][1]["hash"], event["prev_hash"], "the newer event chains on the older");

    let mut seen = subjects(&first).into_iter().map(str::to_owned).collect::<Vec<_>>();
    let mut cursor = first["metadata"]["next_page_cursor"].as_str().unwrap().to_owned();
    loop {
        let page = app.get(&format!("/v0/audit_events?action=probe.&limit=2&page_cursor={cursor}"), &app.admin).await;
        let page = page.expect_status(StatusCode::OK).body.clone();
        seen.extend(subjects(&page).into_iter().map(str::to_owned));
        match page["metadata"]["next_page_cursor"].as_str() {
            Some(next) => cursor = next.to_owned(),
            None => break,
        }
    }
    assert_eq!(seen, ["p5", "p4", "p3", "p2", "p1"]);
}

#[tokio::test]
async fn filters_narrow_the_list() {
    let app = TestApp::new().await;
    let alice = Uuid::new_v4();
    let token = Actor { kind: ActorKind::Token, id: Some("t1".into()), user_id: Some(alice) };
    let mut old = probe(Actor::cli(), "made", "p0");
    old.at = ferrozone_domain::Timestamp::from_secs(1_700_000_000);
    app.store
        .append_audit_events(&[
            old,
            probe(token.clone(), "made", "p1"),
            probe(Actor::cli(), "changed", "p1"),
            probe(token, "removed", "p2"),
        ])
        .await
        .unwrap();
    let list = |query: String| {
        let app = &app;
        async move {
            let page = app.get(&format!("/v0/audit_events?action=probe.&{query}"), &app.admin).await;
            subjects(&page.expect_status(StatusCode::OK).body).into_iter().map(str::to_owned).collect::<Vec<_>>()
        }
    };
    assert_eq!(list(format!("user_id={alice}")).await, ["p2", "p1"]);
    assert_eq!(list("actor_kind=token&actor_id=t1".into()).await, ["p2", "p1"]);
    assert_eq!(list("subject_kind=probe&subject_id=p1".into()).await, ["p1", "p1"]);
    assert_eq!(list("until=2024-01-01T00:00:00Z".into()).await, ["p0"]);
    assert_eq!(list("since=2024-01-01T00:00:00Z&actor_kind=cli".into()).await, ["p1"]);
    let exact = app.get("/v0/audit_events?action=probe.removed", &app.admin).await;
    assert_eq!(subjects(&exact.expect_status(StatusCode::OK).body), ["p2"]);
}

#[tokio::test]
async fn others_are_refused_and_bad_parameters_are_400() {
    let app = TestApp::new().await;
    let (_, alice) = app.user("alice@example.com", "unprivileged").await;
    app.get("/v0/audit_events", &alice).await.expect_forbidden();
    app.get("/v0/audit_events?limit=nope", &alice).await.expect_forbidden();
    app.request(axum::http::Method::GET, "/v0/audit_events", None, None).await.expect_auth_error("unauthenticated");
    for query in ["limit=0", "limit=501", "user_id=x", "actor_kind=robot", "since=soon", "page_cursor=abc"] {
        app.get(&format!("/v0/audit_events?{query}"), &app.admin).await.expect_bad_request();
    }
    let page = app.get("/v0/audit_events?limit=500&action=nothing.", &app.admin).await;
    let page = page.expect_status(StatusCode::OK).body.clone();
    assert_eq!(page, json!({"data": [], "metadata": {"limit": 500, "next_page_cursor": null}}));
}

#[tokio::test]
async fn refused_password_sign_ins_are_recorded_until_the_throttle_refuses_them() {
    use crate::signin::{password_user, Browser};
    let app = TestApp::new().await;
    let pat = password_user(&app, "pat@example.com", "admin").await;
    let mut guesser = Browser::on(app.router.clone(), "192.0.2.44:1");
    for _ in 0..7 {
        guesser.sign_in("pat@example.com", "wrong password entirely", "").await;
    }
    guesser.sign_in("nobody@example.com", "wrong password entirely", "").await;

    let page = app.get("/v0/audit_events?action=user.sign_in_refused&limit=100", &app.admin).await;
    let events = page.expect_status(StatusCode::OK).body["data"].as_array().unwrap().clone();
    assert_eq!(events.len(), 5, "five guesses let through for pat; nobody is only counted: {events:?}");
    let known = &events[0];
    assert_eq!(known["subject"]["id"], json!(pat));
    assert_eq!(known["origin"]["client_address"], "192.0.2.44");
    let changes = known["changes"].as_array().unwrap();
    assert!(changes.contains(&json!({"field": "method", "after": "password"})));
    assert!(changes.contains(&json!({"field": "reason", "after": "bad_password"})));
}

#[tokio::test]
async fn refused_sign_ins_of_unknown_accounts_are_one_summary_per_network_and_window() {
    use crate::signin::Browser;
    let app = TestApp::new().await;
    let mut sprayer = Browser::on(app.router.clone(), "192.0.2.55:1");
    for i in 0..8 {
        let res = sprayer.sign_in(&format!("made-up-{}@example.com", i % 6), "wrong password entirely", "").await;
        res.expect_status(StatusCode::UNAUTHORIZED);
    }
    let mut elsewhere = Browser::on(app.router.clone(), "[2001:db8:5:5::1]:1");
    elsewhere
        .sign_in("nobody@example.com", "wrong password entirely", "")
        .await
        .expect_status(StatusCode::UNAUTHORIZED);
    assert_eq!(refused_sign_ins(&app).await, Vec::<Value>::new(), "no event per refusal");
    assert!(summaries(&app).await.is_empty(), "written when the window is over");

    app.domain.record_refused_sign_in_summaries(true).await;
    let summaries = summaries(&app).await;
    assert_eq!(summaries.len(), 2, "one per client network: {summaries:?}");
    let (v6, v4) = (&summaries[0], &summaries[1]);
    assert_eq!(v4["actor"]["kind"], "anonymous");
    assert_eq!(v4["subject"], json!({"kind": "user", "id": null}));
    assert_eq!(v4["origin"]["client_address"], "192.0.2.55");
    assert_eq!((recorded(v4, "method"), recorded(v4, "reason")), (json!("password"), json!("unknown_account")));
    assert_eq!(recorded(v4, "count"), json!(8));
    let kept: Vec<String> = (0..5).map(|i| format!("made-up-{i}@example.com")).collect();
    assert_eq!(recorded(v4, "accounts"), json!(kept), "the first five accounts typed");
    assert!(recorded(v4, "first_at").is_string() && recorded(v4, "last_at").is_string());
    assert_eq!(v6["origin"]["client_address"], "2001:db8:5:5::/64");
    assert_eq!((recorded(v6, "count"), recorded(v6, "accounts")), (json!(1), json!(["nobody@example.com"])));
    app.domain.record_refused_sign_in_summaries(true).await;
    assert_eq!(self::summaries(&app).await.len(), 2, "each window is written once");
}

/// The `user.sign_in_refused_summary` events, newest first.
async fn summaries(app: &TestApp) -> Vec<Value> {
    let page = app.get("/v0/audit_events?action=user.sign_in_refused_summary&limit=100", &app.admin).await;
    page.expect_status(StatusCode::OK).body["data"].as_array().unwrap().clone()
}

/// The `user.sign_in_refused` events, newest first.
pub async fn refused_sign_ins(app: &TestApp) -> Vec<Value> {
    let page = app.get("/v0/audit_events?action=user.sign_in_refused&limit=100", &app.admin).await;
    page.expect_status(StatusCode::OK).body["data"].as_array().unwrap().clone()
}

/// The value `event` recorded for `field` (`null` when it recorded none).
pub fn recorded(event: &Value, field: &str) -> Value {
    let changes = event["changes"].as_array().unwrap();
    changes.iter().find(|c| c["field"] == field).map_or(Value::Null, |c| c["after"].clone())
}

/// Asserts `event` is a refused sign-in by nobody known, of the user `subject` (or of no
/// user), by `method` for `reason`.
pub fn assert_refused(event: &Value, subject: Option<&str>, method: &str, reason: &str) {
    assert_eq!(event["actor"]["kind"], "anonymous", "{event}");
    assert_eq!(event["subject"], json!({"kind": "user", "id": subject}), "{event}");
    assert_eq!((recorded(event, "method"), recorded(event, "reason")), (json!(method), json!(reason)), "{event}");
}
