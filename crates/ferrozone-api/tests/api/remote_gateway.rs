//! A gateway on another host against a real control plane over HTTP (docs/design/gateways.md):
//! the gateway's own code (`ferrozone_gateway::remote`) enrols, takes the state, follows its
//! changes onto an interface (in memory here; the WireGuard backends are tested on their
//! own), sends statistics back, and, with the control plane gone, still removes a peer whose
//! VPN session ends and starts again from the state it saved.

use std::future::IntoFuture;
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use ferrozone_domain::Timestamp;
use ferrozone_gateway::gateway::Wakes;
use ferrozone_gateway::memory::MemoryInterface;
use ferrozone_gateway::reconciler::Reconciler;
use ferrozone_gateway::remote::held::peers_at;
use ferrozone_gateway::remote::{sync, Client, RemoteState, StateDir};
use ferrozone_gateway::{Key, ObservedPeer, PeerSource, PeerStats};
use serde_json::json;

use crate::helpers::TestApp;

/// Far longer than any step takes: only a step that never happens runs into it.
const PATIENCE: Duration = Duration::from_secs(30);

/// The control plane on a TCP port, on a runtime of its own: dropping it ends every
/// connection at once, as a control plane going down does.
struct ControlPlane {
    runtime: Option<tokio::runtime::Runtime>,
    url: String,
}

impl ControlPlane {
    fn start(app: &TestApp) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let router = app.router.clone();
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            axum::serve(listener, router).into_future().await
        });
        let domain = app.domain.clone();
        runtime.spawn(async move { domain.publish_gateway_states(domain.data_plane_changes()).await });
        Self { runtime: Some(runtime), url }
    }

    fn stop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        self.stop();
    }
}

async fn until(interface: &MemoryInterface, what: &str, done: impl FnMut(&[ObservedPeer]) -> bool) {
    let waited = tokio::time::timeout(PATIENCE, interface.wait_until(done)).await;
    waited.unwrap_or_else(|_| panic!("{what}: the interface holds {:?}", interface.peers_now()));
}

fn holds(key: &str) -> impl Fn(&[ObservedPeer]) -> bool + '_ {
    move |peers| peers.iter().any(|p| p.peer.public_key.to_base64() == key)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_gateway_follows_the_control_plane_and_enforces_expiry_without_it() {
    let app = TestApp::new().await;
    let mut control_plane = ControlPlane::start(&app);
    let res = app.post("/v0/gateways", &app.admin, json!({"gateway": {"name": "office"}})).await;
    let token = res.expect_status(StatusCode::CREATED).data()["enrolment_token"].as_str().unwrap().to_owned();
    let (user_id, _) = app.user("alice@example.com", "unprivileged").await;
    let first = app.device(&user_id).await;
    let first_key = first["public_key"].as_str().unwrap().to_owned();

    let dir = tempfile::tempdir().unwrap();
    let state_dir = StateDir::open(dir.path()).unwrap();
    let http = Client::http(None).unwrap();
    let credential = Client::enrol(&http, &control_plane.url, &token).await.unwrap();
    state_dir.save_credential(&credential).unwrap();
    let client = Arc::new(Client::new(http, &control_plane.url, credential));
    let held = Arc::new(RemoteState::new(sync::first_state(&client, &state_dir).await.unwrap(), client.clone()));
    assert_eq!(held.current().state.interface.private_key.0, app.domain.server_private_key().as_str());

    let interface = Arc::new(MemoryInterface::default());
    let wakes = Wakes::default();
    let reconciler = Reconciler::new(held.clone(), interface.clone());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let reconciling = tokio::spawn(reconciler.run(wakes.peers.clone(), Duration::from_secs(3600)));
    let expiries = tokio::spawn(sync::wake_at_expiries(held.subscribe(), wakes.clone()));
    let stopping = async { stopped.await.unwrap_or(()) };
    let syncing = tokio::spawn(sync::run(client, state_dir, held.clone(), (wakes, None), stopping));
    until(&interface, "the first device", holds(&first_key)).await;

    // Changes reach the gateway's interface through the poll.
    let second = app.device(&user_id).await;
    let second_key = second["public_key"].as_str().unwrap().to_owned();
    until(&interface, "a device created after", holds(&second_key)).await;
    let path = format!("/v0/devices/{}", first["id"].as_str().unwrap());
    assert_eq!(app.delete(&path, &app.admin).await.status, StatusCode::NO_CONTENT);
    until(&interface, "a device deleted", |peers| !holds(&first_key)(peers)).await;

    // Statistics go back and show in the API.
    let handshake = std::time::SystemTime::now() - Duration::from_secs(5);
    let stats = PeerStats {
        latest_handshake: Some(handshake),
        endpoint: Some("198.51.100.9:4000".parse().unwrap()),
        rx_bytes: 10,
        tx_bytes: 20,
    };
    held.record_stats(&[(Key::from_base64(&second_key).unwrap(), stats)]).await.unwrap();
    let shown = app.get(&format!("/v0/devices/{}", second["id"].as_str().unwrap()), &app.admin).await;
    let shown = shown.data();
    assert_eq!((&shown["rx_bytes"], &shown["remote_ip"]), (&json!(10), &json!("198.51.100.9")));

    // A VPN session that ends a few seconds from now travels with the peer.
    let res = app.patch("/v0/configuration", &app.admin, json!({"configuration": {"vpn_session_duration": 3600}}));
    res.await.expect_status(StatusCode::OK);
    let signed_in = Timestamp::now().plus_secs(-3600 + 5);
    app.store.record_sign_in(user_id.parse().unwrap(), "password", signed_in).await.unwrap();
    app.domain.peer_changes().notify_one();
    let expiry = signed_in.plus_secs(3600).micros();
    let carries_expiry = |held: &Arc<ferrozone_gateway::remote::Held>| {
        held.state.peers.iter().any(|p| p.public_key == second_key && p.session_expires_at_us == Some(expiry))
    };
    let mut versions = held.subscribe();
    let waited = tokio::time::timeout(PATIENCE, versions.wait_for(carries_expiry)).await;
    drop(waited.expect("the expiry reached the gateway").unwrap());

    // The control plane goes down; the gateway removes the peer when its session ends.
    control_plane.stop();
    until(&interface, "the session's end", |peers| !holds(&second_key)(peers)).await;
    assert!(Timestamp::now().micros() >= expiry, "not before the session's end");
    assert!(carries_expiry(&held.current()), "the gateway did it from the state it holds, unchanged");

    stop.send(()).unwrap();
    syncing.await.unwrap().expect("stops cleanly, the control plane unreachable");

    // A restarted gateway starts from the state it saved, sealed in its directory.
    let reopened = StateDir::open(dir.path()).unwrap().load_state().expect("a saved state");
    assert_eq!(reopened.0, held.current().version);
    assert!(peers_at(&reopened.1, Timestamp::now()).is_empty(), "the expired peer stays off");
    reconciling.abort();
    expiries.abort();
}
