//! The configuration's device switches (issue 18): with `allow_unprivileged_device_management`
//! off an unprivileged user may read its devices but not create, change or delete them; with
//! `allow_unprivileged_device_configuration` off it may not set their addresses or tunnel
//! settings. Admins are never held back; each switch applies from the PATCH that sets it, in
//! every process.

use axum::http::{Method, StatusCode};
use ferrozone_domain::service::device_rights::{CONFIGURATION_OFF, MANAGEMENT_OFF};
use serde_json::{json, Value};

use super::id_of;
use crate::helpers::{json_request, key, send, TestApp, TestResponse};

async fn set(app: &TestApp, switch: &str, on: bool) {
    let body = json!({"configuration": {switch: on}});
    app.patch("/v0/configuration", &app.admin, body).await.expect_status(StatusCode::OK);
}

#[track_caller]
fn expect_refused(res: &TestResponse, why: &str) {
    res.expect(StatusCode::FORBIDDEN, json!({"error": "forbidden", "message": why}));
}

async fn own_create(app: &TestApp, token: &str, attrs: Value) -> TestResponse {
    let mut attrs = attrs;
    attrs["public_key"] = json!(key());
    app.post("/v0/devices", token, json!({"device": attrs})).await
}

#[tokio::test]
async fn with_management_off_an_unprivileged_user_only_reads_its_devices() {
    let app = TestApp::new().await;
    let (me, token) = app.user("me@example.com", "unprivileged").await;
    let mine = app.device(&me).await;
    let path = format!("/v0/devices/{}", id_of(&mine));
    set(&app, "allow_unprivileged_device_management", false).await;

    expect_refused(&own_create(&app, &token, json!({})).await, MANAGEMENT_OFF);
    let rename = json!({"device": {"name": "renamed"}});
    expect_refused(&app.patch(&path, &token, rename.clone()).await, MANAGEMENT_OFF);
    expect_refused(&app.put(&path, &token, rename).await, MANAGEMENT_OFF);
    expect_refused(&app.delete(&path, &token).await, MANAGEMENT_OFF);
    assert_eq!(app.get(&path, &token).await.expect_status(StatusCode::OK).data(), &mine, "reads stay");
    assert_eq!(app.get("/v0/devices", &token).await.data().as_array().unwrap().len(), 1);
    app.get(&format!("{path}/config"), &token).await.expect_status(StatusCode::OK);
    // Another user's device is still "not found", not "forbidden".
    let (other, _) = app.user("other@example.com", "unprivileged").await;
    let theirs = app.device(&other).await;
    app.delete(&format!("/v0/devices/{}", id_of(&theirs)), &token).await.expect_not_found();

    // Admins are not held back, for their own devices or anyone's.
    let created = app.device(&me).await;
    app.patch(&path, &app.admin, json!({"device": {"name": "by-admin"}})).await.expect_status(StatusCode::OK);
    app.delete(&format!("/v0/devices/{}", id_of(&created)), &app.admin).await.expect_status(StatusCode::NO_CONTENT);

    set(&app, "allow_unprivileged_device_management", true).await;
    own_create(&app, &token, json!({})).await.expect_status(StatusCode::CREATED);
    app.delete(&path, &token).await.expect_status(StatusCode::NO_CONTENT);
}

#[tokio::test]
async fn with_configuration_off_an_unprivileged_user_gets_the_defaults_only() {
    let app = TestApp::new().await;
    let (_, token) = app.user("me@example.com", "unprivileged").await;
    set(&app, "allow_unprivileged_device_configuration", false).await;

    let configuring = [
        json!({"ipv4": "10.3.2.50"}),
        json!({"ipv6": "fd00::3:2:50"}),
        json!({"use_default_allowed_ips": false, "allowed_ips": ["10.0.0.0/8"]}),
        json!({"use_default_dns": false, "dns": ["9.9.9.9"]}),
        json!({"use_default_endpoint": false, "endpoint": "vpn.example.com:51820"}),
        json!({"use_default_mtu": false, "mtu": 1400}),
        json!({"use_default_persistent_keepalive": false, "persistent_keepalive": 10}),
        json!({"use_default_mtu": false}),
    ];
    for attrs in &configuring {
        expect_refused(&own_create(&app, &token, attrs.clone()).await, CONFIGURATION_OFF);
    }
    assert!(app.list("/v0/devices").await.is_empty(), "nothing created");
    // Asking for what a device gets anyway is not configuring it; bad input is still 422.
    let defaults = json!({"use_default_mtu": true, "use_default_dns": true, "ipv4": "", "mtu": null});
    let device = own_create(&app, &token, defaults).await.expect_status(StatusCode::CREATED).data().clone();
    let too_long = json!({"description": "d".repeat(3000)});
    own_create(&app, &token, too_long).await.expect_status(StatusCode::UNPROCESSABLE_ENTITY);

    let path = format!("/v0/devices/{}", id_of(&device));
    app.patch(&path, &token, json!({"device": {"name": "laptop"}})).await.expect_status(StatusCode::OK);
    for attrs in &configuring {
        expect_refused(&app.patch(&path, &token, json!({"device": attrs})).await, CONFIGURATION_OFF);
    }
    // What an admin set stays; sent back unchanged it is no change, switched back it is one.
    let custom = json!({"use_default_mtu": false, "mtu": 1400});
    app.patch(&path, &app.admin, json!({"device": custom.clone()})).await.expect_status(StatusCode::OK);
    let same = app.patch(&path, &token, json!({"device": custom})).await;
    assert_eq!(same.expect_status(StatusCode::OK).data()["mtu"], 1400);
    let back = json!({"device": {"use_default_mtu": true}});
    expect_refused(&app.patch(&path, &token, back).await, CONFIGURATION_OFF);

    // Admins configure as always; switched on, the user does too.
    let admin_made = app.device_with(device["user_id"].as_str().unwrap(), configuring[5].clone()).await;
    assert_eq!(admin_made["mtu"], 1400);
    set(&app, "allow_unprivileged_device_configuration", true).await;
    own_create(&app, &token, configuring[5].clone()).await.expect_status(StatusCode::CREATED);
}

/// The switches are read per use: a change another process stores applies here once this
/// process reads the configuration again (what its reload task does every second).
#[tokio::test]
async fn a_switch_stored_by_another_process_applies_after_its_reload() {
    let app = TestApp::new().await;
    let (_, token) = app.user("me@example.com", "unprivileged").await;
    let (other, other_domain) = app.second_instance().await;
    set(&app, "allow_unprivileged_device_management", false).await;
    other_domain.reload_configuration().await.unwrap();
    let body = json!({"device": {"public_key": key()}});
    let res = send(other, json_request(Method::POST, "/v0/devices", Some(&token), Some(&body))).await;
    expect_refused(&res, MANAGEMENT_OFF);
}
