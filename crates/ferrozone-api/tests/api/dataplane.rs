//! The API and the data plane in one process: a device created through the router reaches
//! the interface through the adapter `ferrozone serve` runs (`DomainPeers`) and the
//! reconciler, woken by the domain's change signal alone (its timed pass is an hour away);
//! disabling its owner takes it off, enabling puts it back.

use std::sync::Arc;
use std::time::Duration;

use axum::http::{Method, StatusCode};
use ferrozone_domain::vpn_session::ONCE;
use ferrozone_domain::Timestamp;
use ferrozone_gateway::domain::DomainPeers;
use ferrozone_gateway::memory::MemoryInterface;
use ferrozone_gateway::reconciler::Reconciler;
use ferrozone_gateway::{Key, ObservedPeer, Peer};
use serde_json::{json, Value};

use crate::helpers::{json_request, key, send, TestApp};
use ferrozone_http::{AppState, DataPlaneHealth, DataPlaneProbe, RoutingHealth};

/// Far longer than a pass takes on a loaded machine: only a pass that never comes (a lost
/// wake-up) runs into it, and the test then fails instead of hanging.
const PATIENCE: Duration = Duration::from_secs(30);

/// Waits for the interface to hold exactly `expected`.
async fn until_peers(interface: &MemoryInterface, expected: &[Peer], what: &str) {
    let matches = |peers: &[ObservedPeer]| peers.iter().map(|o| &o.peer).eq(expected.iter());
    let waited = tokio::time::timeout(PATIENCE, interface.wait_until(matches)).await;
    let now = interface.peers_now();
    waited.unwrap_or_else(|_| panic!("{what}: after {PATIENCE:?} the interface holds {now:?}, not {expected:?}"));
}

/// The peer a device's JSON says should be on the interface.
fn peer_of(device: &Value) -> Peer {
    let key = |field: &str| Key::from_base64(device[field].as_str().unwrap()).unwrap();
    let ipv4 = device["ipv4"].as_str().map(|a| a.parse().unwrap());
    let ipv6 = device["ipv6"].as_str().map(|a| a.parse().unwrap());
    Peer::for_device(key("public_key"), Some(key("preshared_key")), ipv4, ipv6)
}

#[tokio::test]
async fn a_device_reaches_the_interface_and_leaves_with_its_disabled_owner() {
    let app = TestApp::new().await;
    let interface = Arc::new(MemoryInterface::default());
    let source = Arc::new(DomainPeers::new(app.domain.clone()));
    let reconciler = Reconciler::new(source, interface.clone());
    let task = tokio::spawn(reconciler.run(app.domain.peer_changes(), Duration::from_secs(3600)));
    until_peers(&interface, &[], "the first pass").await;

    let (user_id, _) = app.user("roams@example.com", "unprivileged").await;
    let device = app.device(&user_id).await;
    let peer = peer_of(&device);
    assert!(!peer.allowed_ips.is_empty() && peer.preshared_key.is_some(), "{device}");
    until_peers(&interface, std::slice::from_ref(&peer), "after the create").await;

    app.domain.set_user_disabled(&ferrozone_domain::Principal::operator(), "roams@example.com", true).await.unwrap();
    until_peers(&interface, &[], "after disabling the owner").await;

    app.domain.set_user_disabled(&ferrozone_domain::Principal::operator(), "roams@example.com", false).await.unwrap();
    until_peers(&interface, &[peer], "after enabling the owner").await;
    task.abort();
}

#[tokio::test]
async fn disabling_through_the_api_takes_the_device_off_the_interface_and_back() {
    let app = TestApp::new().await;
    let interface = Arc::new(MemoryInterface::default());
    let reconciler = Reconciler::new(Arc::new(DomainPeers::new(app.domain.clone())), interface.clone());
    let task = tokio::spawn(reconciler.run(app.domain.peer_changes(), Duration::from_secs(3600)));
    let (user_id, _) = app.user("switched@example.com", "unprivileged").await;
    let peer = peer_of(&app.device(&user_id).await);
    until_peers(&interface, std::slice::from_ref(&peer), "after the create").await;

    let path = |action: &str| format!("/v0/users/{user_id}/{action}");
    app.request(Method::POST, &path("disable"), Some(&app.admin), None).await.expect_status(StatusCode::OK);
    until_peers(&interface, &[], "after disabling the owner through the API").await;
    app.request(Method::POST, &path("enable"), Some(&app.admin), None).await.expect_status(StatusCode::OK);
    until_peers(&interface, &[peer], "after enabling the owner through the API").await;
    task.abort();
}

/// How long one attempt of the test below waits for the interface. Only an attempt whose
/// change the watch could not hear (it was made before the watch started listening) runs
/// into it; the next attempt makes another change.
const ATTEMPT_PATIENCE: Duration = Duration::from_secs(3);

/// A device another instance creates (a second process on the database) reaches this
/// instance's interface: the only wake-up its reconciler gets is the domain's watch on the
/// database (`Domain::watch_peer_changes`, what `serve` runs), its timed pass is an hour away.
#[tokio::test]
async fn a_device_created_by_another_instance_reaches_the_interface_through_the_watch() {
    let app = TestApp::new().await;
    let (other, _) = app.second_instance().await;
    let (user_id, _) = app.user("elsewhere@example.com", "unprivileged").await;
    let changes = app.domain.peer_changes();
    // This process's own changes so far left a wake-up: taken, so that none is left over.
    let _ = tokio::time::timeout(Duration::ZERO, changes.notified()).await;
    let interface = Arc::new(MemoryInterface::default());
    let reconciler = Reconciler::new(Arc::new(DomainPeers::new(app.domain.clone())), interface.clone());
    let mut status = reconciler.status();
    let task = tokio::spawn(reconciler.run(changes, Duration::from_secs(3600)));
    let first_pass = tokio::time::timeout(PATIENCE, status.wait_for(|s| s.last_success.is_some())).await;
    first_pass.expect("the first pass").expect("the reconciler runs");
    let domain = app.domain.clone();
    let watch = tokio::spawn(async move { domain.watch_peer_changes().await });

    let mut expected = Vec::new();
    for _ in 0..10 {
        let body = json!({"device": {"user_id": user_id, "public_key": key()}});
        let res = send(other.clone(), json_request(Method::POST, "/v0/devices", Some(&app.admin), Some(&body))).await;
        expected.push(peer_of(res.expect_status(StatusCode::CREATED).data()));
        let all_there = |peers: &[ObservedPeer]| {
            peers.len() == expected.len() && expected.iter().all(|e| peers.iter().any(|o| o.peer == *e))
        };
        if tokio::time::timeout(ATTEMPT_PATIENCE, interface.wait_until(all_there)).await.is_ok() {
            task.abort();
            watch.abort();
            return;
        }
    }
    panic!("no change of the other instance woke the reconciler: the interface holds {:?}", interface.peers_now());
}

/// `vpn_session_duration` (issue 18, Firezone's B4): a PATCH that makes a user's last
/// sign-in too old takes its devices off the interface at once (the PATCH wakes the
/// reconciler, whose timed pass is an hour away), and signing in again brings them back.
#[tokio::test]
async fn a_vpn_session_duration_takes_expired_users_off_and_a_sign_in_brings_them_back() {
    let app = TestApp::new().await;
    let interface = Arc::new(MemoryInterface::default());
    let reconciler = Reconciler::new(Arc::new(DomainPeers::new(app.domain.clone())), interface.clone());
    let task = tokio::spawn(reconciler.run(app.domain.peer_changes(), Duration::from_secs(3600)));
    let user_id = crate::helpers::password_user(&app, "roams@example.com", "unprivileged").await;
    let (fresh_id, _) = app.user("fresh@example.com", "unprivileged").await;
    let stale = app.device(&user_id).await;
    let never_signed_in = peer_of(&app.device(&fresh_id).await);
    let two_hours_ago = Timestamp::now().plus_secs(-7200);
    app.store.record_sign_in(user_id.parse().unwrap(), "password", two_hours_ago).await.unwrap();
    let both = [peer_of(&stale), never_signed_in.clone()];
    until_peers_in_any_order(&interface, &both, "sessions never expire").await;

    configure(&app, json!({"vpn_session_duration": 3600})).await;
    until_peers(&interface, std::slice::from_ref(&never_signed_in), "after the PATCH").await;

    let session = app.domain.sign_in_with_password("roams@example.com", crate::helpers::PASSWORD).await.unwrap();
    assert!(session.is_some(), "signed in");
    until_peers_in_any_order(&interface, &both, "after signing in again").await;

    app.store.record_sign_in(user_id.parse().unwrap(), "password", two_hours_ago).await.unwrap();
    configure(&app, json!({"vpn_session_duration": 3601})).await;
    until_peers(&interface, std::slice::from_ref(&never_signed_in), "expired again").await;
    configure(&app, json!({"vpn_session_duration": ONCE})).await;
    until_peers_in_any_order(&interface, &both, "\"Once\" never expires").await;
    task.abort();
}

/// A session that runs out takes its devices off with no write at all: the reconciler's
/// timed pass (here every 100 ms, with nothing else to wake it) asks again as of its time.
#[tokio::test]
async fn a_session_running_out_leaves_at_the_next_timed_pass() {
    let app = TestApp::new().await;
    let (user_id, _) = app.user("brief@example.com", "unprivileged").await;
    let peer = peer_of(&app.device(&user_id).await);
    configure(&app, json!({"vpn_session_duration": 3600})).await;
    // Signed in so that the session has a few seconds left.
    let signed_in = Timestamp::now().plus_secs(-3600 + 5);
    app.store.record_sign_in(user_id.parse().unwrap(), "password", signed_in).await.unwrap();
    let interface = Arc::new(MemoryInterface::default());
    let reconciler = Reconciler::new(Arc::new(DomainPeers::new(app.domain.clone())), interface.clone());
    let no_wake_ups = Arc::new(tokio::sync::Notify::new());
    let task = tokio::spawn(reconciler.run(no_wake_ups, Duration::from_millis(100)));
    until_peers(&interface, std::slice::from_ref(&peer), "while the session lasts").await;
    until_peers(&interface, &[], "once it ran out").await;
    assert!(Timestamp::now() >= signed_in.plus_secs(3600), "not before the session's end");
    task.abort();
}

/// A new duration read by another process (its reload task) wakes that process's
/// reconciler: the write did not touch the devices or users it watches.
#[tokio::test]
async fn a_duration_stored_by_another_process_wakes_this_ones_reconcile() {
    let app = TestApp::new().await;
    let (_, other) = app.second_instance().await;
    let changes = other.peer_changes();
    let _ = tokio::time::timeout(Duration::ZERO, changes.notified()).await;
    configure(&app, json!({"vpn_session_duration": 86_400})).await;
    other.reload_configuration().await.unwrap();
    let woken = tokio::time::timeout(Duration::ZERO, changes.notified()).await;
    assert!(woken.is_ok(), "the reload left a wake-up");
    other.reload_configuration().await.unwrap();
    let again = tokio::time::timeout(Duration::ZERO, changes.notified()).await;
    assert!(again.is_err(), "an unchanged duration wakes nothing");
}

async fn configure(app: &TestApp, values: Value) {
    let res = app.patch("/v0/configuration", &app.admin, json!({ "configuration": values })).await;
    res.expect_status(StatusCode::OK);
}

/// Waits for the interface to hold exactly `expected`, in any order.
async fn until_peers_in_any_order(interface: &MemoryInterface, expected: &[Peer], what: &str) {
    let matches = |peers: &[ObservedPeer]| {
        peers.len() == expected.len() && expected.iter().all(|e| peers.iter().any(|o| o.peer == *e))
    };
    let waited = tokio::time::timeout(PATIENCE, interface.wait_until(matches)).await;
    let now = interface.peers_now();
    waited.unwrap_or_else(|_| panic!("{what}: after {PATIENCE:?} the interface holds {now:?}, not {expected:?}"));
}

/// Whether a wake-up is waiting (the permit a committed change left), taking it.
async fn woken(changes: &tokio::sync::Notify) -> bool {
    tokio::time::timeout(Duration::ZERO, changes.notified()).await.is_ok()
}

/// Creating, changing and deleting a rule each wake the data plane's table keeper, once
/// answered, and not the peers' reconciler (docs/design/groups.md, "Membership changes"); a
/// refused write wakes nothing.
#[tokio::test]
async fn every_rule_write_wakes_the_data_plane() {
    let app = TestApp::new().await;
    let (changes, peers) = (app.domain.rule_changes(), app.domain.peer_changes());
    woken(&changes).await;
    woken(&peers).await;
    let rule = json!({"rule": {"destination": "10.9.0.0/16", "action": "drop"}});
    let created = app.post("/v0/rules", &app.admin, rule.clone()).await;
    let id = created.expect_status(StatusCode::CREATED).id();
    assert!(woken(&changes).await, "after the create");
    app.post("/v0/rules", &app.admin, rule).await.expect_status(StatusCode::UNPROCESSABLE_ENTITY);
    assert!(!woken(&changes).await, "after an overlapping create");
    let path = format!("/v0/rules/{id}");
    app.patch(&path, &app.admin, json!({"rule": {"action": "accept"}})).await.expect_status(StatusCode::OK);
    assert!(woken(&changes).await, "after the update");
    app.delete(&path, &app.admin).await.expect_status(StatusCode::NO_CONTENT);
    assert!(woken(&changes).await, "after the delete");
    assert!(!woken(&peers).await, "no peer changed");
}

/// A data plane whose state the test sets: the HTTP layer is what is under test.
struct FakeProbe(DataPlaneHealth);

impl DataPlaneProbe for FakeProbe {
    fn health(&self) -> DataPlaneHealth {
        self.0.clone()
    }
}

async fn healthz_with(app: &TestApp, health: DataPlaneHealth) -> Value {
    let router =
        crate::helpers::app(AppState::new(app.domain.clone(), false).with_data_plane(Arc::new(FakeProbe(health))));
    let res = send(router, json_request(Method::GET, "/healthz", None, None)).await;
    res.expect_status(StatusCode::OK);
    res.body.clone()
}

#[tokio::test]
async fn healthz_reports_the_table_its_rules_and_a_failed_pass() {
    let app = TestApp::new().await;
    let at = std::time::UNIX_EPOCH + Duration::from_secs(1_764_068_400);
    let routing =
        RoutingHealth::Applied { rules: 12, default_action: "drop", last_apply: Some(at), last_pass_failed: false };
    let health = DataPlaneHealth {
        backend: "kernel",
        last_reconcile: Some(at),
        last_reconcile_failed: false,
        peers_refused: 0,
        routing,
    };
    let body = healthz_with(&app, health.clone()).await;
    assert_eq!(body["status"], "ok");
    let expected = json!({"nftables": "applied", "rules": 12, "default_action": "drop",
        "last_apply_at": "2025-11-25T11:00:00.000000Z", "last_pass_failed": false});
    assert_eq!(body["routing"], expected);

    let routing =
        RoutingHealth::Applied { rules: 12, default_action: "drop", last_apply: Some(at), last_pass_failed: true };
    let body = healthz_with(&app, DataPlaneHealth { routing, ..health }).await;
    assert_eq!((&body["status"], &body["routing"]["last_pass_failed"]), (&json!("degraded"), &json!(true)));
}
