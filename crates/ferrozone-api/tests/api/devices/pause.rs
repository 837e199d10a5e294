//! Issue 35: pausing a device (docs/design/devices.md, "Paused devices"). Off the peers and
//! the rules' sources, keys and address kept; `paused_at` only while paused, so a Firezone
//! client reads an active device as before; the owner or an admin; audited once per change.

use axum::http::StatusCode;
use serde_json::json;

use crate::helpers::TestApp;

async fn peers(app: &TestApp) -> Vec<String> {
    app.domain.active_peers().await.unwrap().into_iter().map(|p| p.public_key).collect()
}

#[tokio::test]
async fn a_paused_device_leaves_the_peers_and_the_rules_sources_and_comes_back_as_it_was() {
    let app = TestApp::new().await;
    let (alice, token) = app.user("alice@example.com", "unprivileged").await;
    let device = app.device(&alice).await;
    let (id, key) = (device["id"].as_str().unwrap(), device["public_key"].as_str().unwrap().to_owned());
    app.post("/v0/rules", &app.admin, json!({"rule": {"destination": "10.0.0.0/8", "user_id": alice}})).await;
    assert!(device.get("paused_at").is_none(), "an active device's JSON has no paused_at");
    assert_eq!(peers(&app).await, std::slice::from_ref(&key));

    let changes = app.domain.peer_changes();
    let _ = tokio::time::timeout(std::time::Duration::ZERO, changes.notified()).await;
    let woken = changes.notified();
    let paused = app.post(&format!("/v0/devices/{id}/pause"), &token, json!({})).await;
    let paused = paused.expect_status(StatusCode::OK).data().clone();
    tokio::time::timeout(std::time::Duration::from_secs(5), woken).await.expect("the data plane was not woken");
    assert!(paused["paused_at"].is_string());
    assert_eq!(peers(&app).await, Vec::<String>::new(), "off the interface");
    assert!(app.domain.egress_policy().await.unwrap().sources.is_empty(), "out of the rules' sources");
    let mut kept = paused.clone();
    kept.as_object_mut().unwrap().remove("paused_at");
    let mut before = device.clone();
    before.as_object_mut().unwrap().remove("private_key");
    assert_eq!(kept, before, "keys, address, settings and updated_at kept");
    let again = app.post(&format!("/v0/devices/{id}/pause"), &app.admin, json!({})).await;
    assert_eq!(again.expect_status(StatusCode::OK).data()["paused_at"], paused["paused_at"], "the first time stays");
    assert_eq!(app.get(&format!("/v0/devices/{id}"), &token).await.data()["paused_at"], paused["paused_at"]);

    let resumed = app.post(&format!("/v0/devices/{id}/resume"), &app.admin, json!({})).await;
    let resumed = resumed.expect_status(StatusCode::OK).data().clone();
    assert!(resumed.get("paused_at").is_none());
    assert_eq!(resumed, before, "back as it was");
    assert_eq!(peers(&app).await, [key]);
    assert_eq!(app.domain.egress_policy().await.unwrap().sources.len(), 1);

    let events = app.get("/v0/audit_events?subject_kind=device", &app.admin).await.data().clone();
    let actions: Vec<&str> = events.as_array().unwrap().iter().filter_map(|e| e["action"].as_str()).collect();
    assert_eq!(actions, ["device.resumed", "device.paused", "device.created"], "one event per change, newest first");
}

#[tokio::test]
async fn only_the_owner_or_an_admin_pauses_and_unknown_devices_are_404() {
    let app = TestApp::new().await;
    let (alice, _) = app.user("alice@example.com", "unprivileged").await;
    let (_, bob) = app.user("bob@example.com", "unprivileged").await;
    let id = app.device(&alice).await["id"].as_str().unwrap().to_owned();
    app.post(&format!("/v0/devices/{id}/pause"), &bob, json!({})).await.expect_not_found();
    app.post(&format!("/v0/devices/{id}/resume"), &bob, json!({})).await.expect_not_found();
    let unknown = uuid::Uuid::now_v7();
    app.post(&format!("/v0/devices/{unknown}/pause"), &app.admin, json!({})).await.expect_not_found();
    app.post("/v0/devices/not-a-uuid/pause", &app.admin, json!({})).await.expect_not_found();
    assert!(app.get(&format!("/v0/devices/{id}"), &app.admin).await.data().get("paused_at").is_none());
    // Pausing is not managing: the owner may while unprivileged users may not add or delete.
    let switched_off = TestApp::with_settings(|s| s.configuration.allow_unprivileged_device_management = false).await;
    let (carol, carol_token) = switched_off.user("carol@example.com", "unprivileged").await;
    let id = switched_off.device(&carol).await["id"].as_str().unwrap().to_owned();
    let paused = switched_off.post(&format!("/v0/devices/{id}/pause"), &carol_token, json!({})).await;
    paused.expect_status(StatusCode::OK);
}
