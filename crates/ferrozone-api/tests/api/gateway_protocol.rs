//! What a gateway on another host asks of the control plane (docs/design/gateways.md, "The
//! desired state"): its state by long poll (a snapshot, then changes, else "unchanged"),
//! its session (one process per credential), its statistics, and the end of its session;
//! a revoked gateway's waiting poll ends with 401.

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use ferrozone_domain::audit::AuditQuery;
use ferrozone_domain::gateway::state::{Answer, DesiredState};
use ferrozone_domain::Timestamp;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::helpers::{TestApp, TestResponse};

/// A gateway created and enrolled: its id and credential.
async fn enrolled(app: &TestApp, name: &str) -> (String, String) {
    let res = app.post("/v0/gateways", &app.admin, json!({"gateway": {"name": name}})).await;
    let data = res.expect_status(StatusCode::CREATED).data().clone();
    let body = json!({"enrolment_token": data["enrolment_token"]});
    let res = app.request(Method::POST, "/gateway/v1/enrol", None, Some(body)).await;
    let credential = res.expect_status(StatusCode::CREATED).data()["credential"].as_str().unwrap().to_owned();
    (data["id"].as_str().unwrap().to_owned(), credential)
}

/// The state publisher `serve` runs, woken by this process's commits.
fn publish(app: &TestApp) -> tokio::task::JoinHandle<()> {
    let domain = app.domain.clone();
    tokio::spawn(async move { domain.publish_gateway_states(domain.data_plane_changes()).await })
}

async fn poll(app: &TestApp, credential: &str, session: Uuid, query: &str) -> TestResponse {
    let session = session.to_string();
    let headers = [("authorization", &*format!("Bearer {credential}")), ("ferrozone-gateway-session", &*session)];
    app.raw(Method::GET, &format!("/gateway/v1/state?{query}"), &headers, axum::body::Body::empty()).await
}

fn answer(res: &TestResponse) -> Answer {
    assert_eq!(res.status, StatusCode::OK, "{:?}", res.body);
    serde_json::from_value(res.data().clone()).expect("an answer")
}

fn snapshot(answer: Answer) -> (String, DesiredState) {
    match answer {
        Answer::Snapshot { version, state } => (version, state),
        other => panic!("not a snapshot: {other:?}"),
    }
}

#[tokio::test]
async fn a_gateway_gets_a_snapshot_then_only_the_changes_then_unchanged() {
    let app = Arc::new(TestApp::new().await);
    let publisher = publish(&app);
    let (_, credential) = enrolled(&app, "office").await;
    let session = Uuid::new_v4();
    let (user_id, _) = app.user("alice@example.com", "unprivileged").await;
    let first = app.device(&user_id).await;

    let (version, state) = snapshot(answer(&poll(&app, &credential, session, "wait=25").await));
    assert_eq!(version, state.version(), "the version is the state's");
    assert_eq!(state.interface.private_key.0, app.domain.server_private_key().as_str());
    assert_eq!(state.interface.addresses, ["10.3.2.1/24", "fd00::3:2:1/120"]);
    assert_eq!(state.peers.len(), 1);
    let peer = &state.peers[0];
    assert_eq!(
        (peer.public_key.as_str(), peer.preshared_key.0.as_str()),
        (first["public_key"].as_str().unwrap(), first["preshared_key"].as_str().unwrap())
    );
    assert_eq!(peer.session_expires_at_us, None, "sessions do not expire by default");

    // A poll holding the current version waits for the next change.
    let waiting = {
        let (app, credential, version) = (app.clone(), credential.clone(), version.clone());
        tokio::spawn(async move { poll(&app, &credential, session, &format!("since={version}&wait=25")).await })
    };
    let second = app.device(&user_id).await;
    let Answer::Changes { version: next, from, changes } = answer(&waiting.await.unwrap()) else {
        panic!("not changes")
    };
    assert_eq!(from, version);
    let keys: Vec<&str> = changes.upsert.iter().map(|p| p.public_key.as_str()).collect();
    assert_eq!(keys, [second["public_key"].as_str().unwrap()], "only the new device");
    assert!(changes.remove.is_empty());
    assert_eq!(state.apply(changes).version(), next, "the changes make the announced version");

    let unchanged = answer(&poll(&app, &credential, session, &format!("since={next}&wait=0")).await);
    assert_eq!(unchanged, Answer::Unchanged { version: next.clone() });
    let unknown = answer(&poll(&app, &credential, session, "since=0000&wait=0").await);
    assert!(matches!(unknown, Answer::Snapshot { .. }), "a version this process never had gets the whole state");
    publisher.abort();
}

#[tokio::test]
async fn a_session_expiry_travels_with_the_peer() {
    let app = TestApp::new().await;
    let publisher = publish(&app);
    let (_, credential) = enrolled(&app, "office").await;
    let (user_id, _) = app.user("roams@example.com", "unprivileged").await;
    app.device(&user_id).await;
    let res = app.patch("/v0/configuration", &app.admin, json!({"configuration": {"vpn_session_duration": 3600}}));
    res.await.expect_status(StatusCode::OK);
    let signed_in = Timestamp::now().plus_secs(-60);
    app.store.record_sign_in(user_id.parse().unwrap(), "password", signed_in).await.unwrap();
    app.domain.peer_changes().notify_one();
    let (_, state) = snapshot(answer(&poll(&app, &credential, Uuid::new_v4(), "wait=25").await));
    let expires = state.peers[0].session_expires_at_us;
    assert_eq!(expires, Some(signed_in.plus_secs(3600).micros()));
    assert_eq!(state.next_expiry(Timestamp::now()), Some(signed_in.plus_secs(3600)));
    publisher.abort();
}

#[tokio::test]
async fn one_process_holds_a_credential_until_it_stops_or_its_session_lapses() {
    let app = TestApp::new().await;
    let publisher = publish(&app);
    let (id, credential) = enrolled(&app, "office").await;
    let (first, second) = (Uuid::new_v4(), Uuid::new_v4());
    answer(&poll(&app, &credential, first, "wait=25").await);
    let refused = poll(&app, &credential, second, "wait=0").await;
    assert_eq!(refused.status, StatusCode::CONFLICT, "{:?}", refused.body);
    assert_eq!(refused.body["error"], json!("conflict"));
    let shown = app.get(&format!("/v0/gateways/{id}"), &app.admin).await.data().clone();
    assert!(shown["connected_since"].is_string() && shown["last_seen_at"].is_string(), "{shown}");
    assert_eq!((&shown["connected"], &shown["data_plane"]), (&json!(true), &Value::Null), "it said nothing yet");

    // A poll says how its data plane is; a statistics request leaves that as it was.
    let report = "wait=0&backend=userspace&applied=70000&refused=4464&failing=false&version=0.2.0";
    answer(&poll(&app, &credential, first, report).await);
    let said =
        json!({"backend": "userspace", "peers_applied": 70000, "peers_refused": 4464, "reconcile_failed": false});
    let shown = app.get(&format!("/v0/gateways/{id}"), &app.admin).await.data().clone();
    assert_eq!((&shown["data_plane"], &shown["version"]), (&said, &json!("0.2.0")));
    answer(&poll(&app, &credential, first, "wait=0").await);
    assert_eq!(app.get(&format!("/v0/gateways/{id}"), &app.admin).await.data()["data_plane"], said);
    let wrong = poll(&app, &credential, first, "wait=0&backend=quantum").await;
    assert_eq!(wrong.body["errors"], json!({"backend": ["must be kernel, userspace or none"]}));

    let session = first.to_string();
    let headers = [("authorization", &*format!("Bearer {credential}")), ("ferrozone-gateway-session", &*session)];
    let ended = app.raw(Method::DELETE, "/gateway/v1/session", &headers, axum::body::Body::empty()).await;
    assert_eq!(ended.status, StatusCode::NO_CONTENT);
    answer(&poll(&app, &credential, second, "wait=25").await);
    assert_eq!(poll(&app, &credential, first, "wait=0").await.status, StatusCode::CONFLICT, "the first stopped");

    // The second stops polling: a minute later its session has lapsed, once.
    let later = Timestamp::now().plus_secs(1);
    let ended = app.store.end_lapsed_gateway_sessions(later).await.unwrap();
    assert_eq!(ended.len(), 1);
    assert!(app.store.end_lapsed_gateway_sessions(later).await.unwrap().is_empty(), "ended once");
    answer(&poll(&app, &credential, first, "wait=25").await);

    let query = AuditQuery { after_seq: Some(0), action: Some("gateway.".into()), limit: 20, ..AuditQuery::default() };
    let records = app.store.audit_records(&query).await.unwrap();
    let actions: Vec<&str> = records.iter().map(|r| r.action.as_str()).collect();
    assert_eq!(
        actions,
        [
            "gateway.created",
            "gateway.enrolled",
            "gateway.connected",
            "gateway.disconnected",
            "gateway.connected",
            "gateway.disconnected",
            "gateway.connected"
        ]
    );
    let reasons: Vec<&str> = records
        .iter()
        .filter(|r| r.action == "gateway.disconnected")
        .map(|r| if r.changes.contains("stopped") { "stopped" } else { "lost" })
        .collect();
    assert_eq!(reasons, ["stopped", "lost"]);
    assert!(records.iter().all(|r| !r.changes.contains(&credential)));
    publisher.abort();
}

#[tokio::test]
async fn revoking_a_gateway_ends_its_waiting_poll_with_401() {
    let app = Arc::new(TestApp::new().await);
    let publisher = publish(&app);
    let (id, credential) = enrolled(&app, "office").await;
    let session = Uuid::new_v4();
    let version = answer(&poll(&app, &credential, session, "wait=25").await).version().to_owned();
    let waiting = {
        let (app, credential) = (app.clone(), credential.clone());
        tokio::spawn(async move { poll(&app, &credential, session, &format!("since={version}&wait=25")).await })
    };
    // Once the poll waits for a change, the gateway is revoked.
    while app.domain.gateway_states().waiting() == 0 {
        tokio::task::yield_now().await;
    }
    assert_eq!(app.delete(&format!("/v0/gateways/{id}"), &app.admin).await.status, StatusCode::NO_CONTENT);
    // Had the poll run to its end, it would answer 200 "unchanged".
    assert_eq!(waiting.await.unwrap().status, StatusCode::UNAUTHORIZED);
    assert_eq!(poll(&app, &credential, session, "wait=0").await.status, StatusCode::UNAUTHORIZED);
    publisher.abort();
}

async fn post_stats(app: &TestApp, credential: &str, session: &str, body: Value) -> TestResponse {
    let auth = format!("Bearer {credential}");
    let headers = [
        ("authorization", auth.as_str()),
        ("ferrozone-gateway-session", session),
        ("content-type", "application/json"),
    ];
    app.raw(Method::POST, "/gateway/v1/stats", &headers, body.to_string()).await
}

#[tokio::test]
async fn statistics_are_recorded_for_known_peers_and_bad_batches_are_4xx() {
    let app = TestApp::new().await;
    let publisher = publish(&app);
    let (_, credential) = enrolled(&app, "office").await;
    let session = Uuid::new_v4().to_string();
    let (user_id, _) = app.user("alice@example.com", "unprivileged").await;
    let device = app.device(&user_id).await;
    answer(&poll(&app, &credential, session.parse().unwrap(), "wait=25").await);
    let auth = format!("Bearer {credential}");
    let send = |body: Value| post_stats(&app, &credential, &session, body);
    let handshake = Timestamp::now().plus_secs(-5);
    let peers = json!([
        {"public_key": device["public_key"], "latest_handshake_us": handshake.micros(),
         "endpoint": "198.51.100.7:51820", "rx_bytes": 100, "tx_bytes": 200},
        {"public_key": "unknownunknownunknownunknownunknownunknown=", "latest_handshake_us": handshake.micros(),
         "endpoint": null, "rx_bytes": 1, "tx_bytes": 1}
    ]);
    let res = send(json!({"peers": peers})).await;
    assert_eq!(res.status, StatusCode::OK, "{:?}", res.body);
    assert_eq!(res.data(), &json!({"recorded": 1, "ignored": 1}));
    let shown = app.get(&format!("/v0/devices/{}", device["id"].as_str().unwrap()), &app.admin).await.data().clone();
    assert_eq!(
        (&shown["rx_bytes"], &shown["tx_bytes"], &shown["remote_ip"]),
        (&json!(100), &json!(200), &json!("198.51.100.7"))
    );

    let entry = json!({"public_key": "k", "latest_handshake_us": 1, "endpoint": null, "rx_bytes": 0, "tx_bytes": 0});
    let too_many = send(json!({"peers": vec![entry; 4097]})).await;
    assert_eq!(too_many.body["errors"], json!({"peers": ["must be at most 4096 entries"]}));
    let malformed = send(json!({"peers": [{"public_key": 5}]})).await;
    assert_eq!(malformed.status, StatusCode::UNPROCESSABLE_ENTITY, "{:?}", malformed.body);
    let headers = [("authorization", auth.as_str()), ("ferrozone-gateway-session", session.as_str())];
    let not_json = app.raw(Method::POST, "/gateway/v1/stats", &headers, r#"{"peers": ["#).await;
    assert_eq!(not_json.status, StatusCode::BAD_REQUEST, "{:?}", not_json.body);
    let no_session = app.raw(Method::POST, "/gateway/v1/stats", &[("authorization", auth.as_str())], "{}").await;
    assert_eq!(no_session.status, StatusCode::BAD_REQUEST);
    let wrong = [("authorization", "Bearer fzgw_wrong"), ("ferrozone-gateway-session", session.as_str())];
    assert_eq!(app.raw(Method::POST, "/gateway/v1/stats", &wrong, "{}").await.status, StatusCode::UNAUTHORIZED);
    let admin = format!("Bearer {}", app.admin);
    let admin = [("authorization", admin.as_str()), ("ferrozone-gateway-session", session.as_str())];
    let res = app.raw(Method::GET, "/gateway/v1/state?wait=0", &admin, axum::body::Body::empty()).await;
    assert_eq!(res.status, StatusCode::UNAUTHORIZED, "an administrator's token is not a gateway's");
    publisher.abort();
}

#[tokio::test]
async fn a_gateway_that_cannot_enforce_group_rules_is_refused_their_state() {
    let app = Arc::new(TestApp::new().await);
    let publisher = publish(&app);
    let (_, credential) = enrolled(&app, "old").await;
    let session = Uuid::new_v4();
    let (user_id, _) = app.user("alice@example.com", "unprivileged").await;
    app.device(&user_id).await;
    let before = answer(&poll(&app, &credential, session, "wait=25").await);
    assert!(matches!(before, Answer::Snapshot { .. }), "without group rules, a gateway of revision 1 is served");

    let group = app.post("/v0/groups", &app.admin, json!({"group": {"name": "staff"}})).await.data()["id"].clone();
    let rule = json!({"rule": {"destination": "10.9.0.0/16", "action": "accept", "group_id": group}});
    app.post("/v0/rules", &app.admin, rule).await.expect_status(StatusCode::CREATED);
    let mut refused = poll(&app, &credential, session, "wait=25").await;
    for _ in 0..100 {
        if refused.status == StatusCode::CONFLICT {
            break;
        }
        // The publisher may not have built the state with the rule yet.
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        refused = poll(&app, &credential, session, "wait=0").await;
    }
    assert_eq!(refused.status, StatusCode::CONFLICT, "{}", refused.body);
    assert!(refused.body["message"].as_str().unwrap().contains("cannot enforce"), "{}", refused.body);
    let current = format!("wait=0&protocol={}", ferrozone_domain::gateway::state::PROTOCOL);
    let (_, state) = snapshot(answer(&poll(&app, &credential, session, &current).await));
    assert!(state.egress.rules.iter().any(|r| r.group_id.is_some()), "a gateway of this build gets the group's rule");
    publisher.abort();
}
