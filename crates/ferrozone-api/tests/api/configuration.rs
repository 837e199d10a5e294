//! `/v0/configuration` (issue 18): the effective values with Firezone's keys, PATCH of the
//! stored keys with Firezone's messages, the environment-override guard, admins only.

use std::time::Duration;

use axum::http::{Method, StatusCode};
use ferrozone_domain::configuration::Fixed;
use ferrozone_domain::egress::RuleAction;
use serde_json::{json, Value};
use tokio::time::Instant;

use crate::helpers::flaky::{flaky_app, Failure};
use crate::helpers::{json_request, send, TestApp};

const PATH: &str = "/v0/configuration";

fn values(data: &Value) -> Value {
    let mut data = data.clone();
    for key in ["id", "inserted_at", "updated_at"] {
        data.as_object_mut().unwrap().remove(key);
    }
    data
}

#[tokio::test]
async fn a_fresh_install_shows_the_defaults_with_firezones_keys() {
    let app = TestApp::new().await;
    let res = app.get(PATH, &app.admin).await;
    res.expect_status(StatusCode::OK);
    assert_eq!(
        values(res.data()),
        json!({
            "local_auth_enabled": true,
            "allow_unprivileged_device_management": true,
            "allow_unprivileged_device_configuration": true,
            "disable_vpn_on_oidc_error": true,
            "vpn_session_duration": 0,
            "default_client_persistent_keepalive": 25,
            "default_client_mtu": 1280,
            "default_client_endpoint": "localhost:51820",
            "default_client_dns": ["1.1.1.1", "1.0.0.1"],
            "default_client_allowed_ips": ["0.0.0.0/0", "::/0"],
            "require_totp": "off",
            "egress_default_action": "accept",
            "openid_connect_providers": [],
            "saml_identity_providers": [],
            "logo": {},
        })
    );
    let again = app.get(PATH, &app.admin).await;
    assert_eq!(again.data()["id"], res.data()["id"], "one singleton");
    assert_eq!(again.data()["inserted_at"], res.data()["inserted_at"]);
}

#[tokio::test]
async fn patch_changes_only_the_keys_sent_and_ignores_others() {
    let app = TestApp::new().await;
    let before = app.get(PATH, &app.admin).await.data().clone();
    let body = json!({"configuration": {"default_client_mtu": 1400, "local_auth_enabled": false,
        "default_client_dns": ["9.9.9.9"], "id": "00000000-0000-0000-0000-000000000000", "bogus": 1}});
    let res = app.patch(PATH, &app.admin, body).await;
    res.expect_status(StatusCode::OK);
    let after = res.data().clone();
    assert_eq!(after["default_client_mtu"], 1400);
    assert_eq!(after["local_auth_enabled"], false);
    assert_eq!(after["default_client_dns"], json!(["9.9.9.9"]));
    assert_eq!(after["default_client_persistent_keepalive"], 25);
    assert_eq!(after["id"], before["id"]);
    assert_ne!(after["updated_at"], before["updated_at"]);
    assert_eq!(app.get(PATH, &app.admin).await.data(), &after, "stored");
    let unchanged = app.put(PATH, &app.admin, json!({"configuration": {}})).await;
    assert_eq!(unchanged.expect_status(StatusCode::OK).data(), &after);
}

#[tokio::test]
async fn a_stored_change_is_seen_by_another_process_without_restart() {
    let app = TestApp::new().await;
    let (other, _) = app.second_instance().await;
    app.patch(PATH, &app.admin, json!({"configuration": {"vpn_session_duration": 3600}}))
        .await
        .expect_status(StatusCode::OK);
    let res = send(other, json_request(Method::GET, PATH, Some(&app.admin), None)).await;
    assert_eq!(res.expect_status(StatusCode::OK).data()["vpn_session_duration"], 3600);
}

/// What `serve` runs (`Domain::watch_configuration`) applies another process's PATCH within
/// a second: the first one read when the watch starts or on its notification, the second
/// one certainly on a notification (the timed re-read is 30 s away).
#[tokio::test]
async fn a_patch_reaches_another_process_within_a_second() {
    let app = TestApp::new().await;
    let (_, other) = app.second_instance().await;
    let watcher = {
        let other = other.clone();
        tokio::spawn(async move { other.watch_configuration().await })
    };
    for mtu in [1400, 1300] {
        let body = json!({"configuration": {"default_client_mtu": mtu}});
        app.patch(PATH, &app.admin, body).await.expect_status(StatusCode::OK);
        let deadline = Instant::now() + Duration::from_secs(1);
        while other.current_values().default_client_mtu != Some(mtu) {
            assert!(Instant::now() < deadline, "MTU {mtu} did not reach the other process within 1 s");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    assert!(!watcher.is_finished());
    watcher.abort();
}

/// A watch that cannot be started (the database refuses it) does not stop the reloads:
/// each failed start counts as a change, and the watch is retried with backoff.
#[tokio::test]
async fn a_failing_watch_still_applies_another_process_s_patch() {
    let (app, failing) = flaky_app().await;
    *failing.lock().unwrap() = Some(("watch_configuration_changes", Failure::Unavailable));
    let (other, _) = app.second_instance().await;
    let watcher = {
        let domain = app.domain.clone();
        tokio::spawn(async move { domain.watch_configuration().await })
    };
    let body = json!({"configuration": {"vpn_session_duration": 60}});
    send(other, json_request(Method::PATCH, PATH, Some(&app.admin), Some(&body))).await.expect_status(StatusCode::OK);
    let deadline = Instant::now() + Duration::from_secs(10);
    while app.domain.current_values().vpn_session_duration != 60 {
        assert!(Instant::now() < deadline, "the change was not applied while the watch failed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    watcher.abort();
}

#[tokio::test]
async fn bad_values_get_firezones_messages_and_change_nothing() {
    let app = TestApp::new().await;
    let before = app.get(PATH, &app.admin).await.data().clone();
    let body = json!({"configuration": {
        "local_auth_enabled": "false", "default_client_mtu": 1501,
        "default_client_persistent_keepalive": -1, "vpn_session_duration": 2147483648_i64,
        "default_client_endpoint": "not an endpoint", "default_client_dns": "1.1.1.1",
        "default_client_allowed_ips": ["10.0.0.0/8", "10.0.0.0/8"],
        "allow_unprivileged_device_management": true}});
    app.patch(PATH, &app.admin, body).await.expect_errors(json!({
        "local_auth_enabled": ["is invalid"],
        "default_client_mtu": ["must be less than or equal to 1500"],
        "default_client_persistent_keepalive": ["must be greater than or equal to 0"],
        "vpn_session_duration": ["must be less than or equal to 2147483647"],
        "default_client_endpoint": ["is invalid"],
        "default_client_dns": ["must be an array"],
        "default_client_allowed_ips": ["should not contain duplicates"],
    }));
    assert_eq!(app.get(PATH, &app.admin).await.data(), &before);
}

#[tokio::test]
async fn a_key_the_environment_sets_is_422_and_shown_with_the_environments_value() {
    let app = TestApp::with_settings(|s| {
        s.configuration.default_client_mtu = Some(1420);
        s.fixed = Fixed::new([("default_client_mtu".to_owned(), "WIREGUARD_MTU".to_owned())]);
    })
    .await;
    let body = json!({"configuration": {"default_client_mtu": 1420, "local_auth_enabled": false}});
    app.patch(PATH, &app.admin, body).await.expect_errors(json!({
        "default_client_mtu": ["cannot be changed; it is overridden by WIREGUARD_MTU environment variable"],
    }));
    let now = app.get(PATH, &app.admin).await;
    assert_eq!(now.data()["default_client_mtu"], 1420);
    assert_eq!(now.data()["local_auth_enabled"], true, "the whole PATCH was refused");
}

#[tokio::test]
async fn only_admins_and_only_a_configuration_object() {
    let app = TestApp::new().await;
    let (_, token) = app.user("me@example.com", "unprivileged").await;
    app.get(PATH, &token).await.expect_forbidden();
    app.patch(PATH, &token, json!({"configuration": {"local_auth_enabled": false}})).await.expect_forbidden();
    app.patch(PATH, &token, json!({})).await.expect_forbidden();
    app.request(Method::GET, PATH, None, None).await.expect_status(StatusCode::UNAUTHORIZED);
    app.patch(PATH, &app.admin, json!({})).await.expect_bad_request();
    app.patch(PATH, &app.admin, json!({"configuration": [1]})).await.expect_bad_request();
    assert_eq!(app.get(PATH, &app.admin).await.data()["local_auth_enabled"], true);
}

#[tokio::test]
async fn stored_defaults_reach_devices_here_at_once_and_elsewhere_on_reload() {
    let app = TestApp::new().await;
    let device = app.device(&app.admin_id).await;
    let id = device["id"].as_str().unwrap().to_owned();
    let config_path = format!("/v0/devices/{id}/config");
    let body = json!({"configuration": {"default_client_dns": ["9.9.9.9"], "default_client_mtu": 1400}});
    app.patch(PATH, &app.admin, body).await.expect_status(StatusCode::OK);
    let text = String::from_utf8(app.get(&config_path, &app.admin).await.raw).unwrap();
    assert!(text.contains("DNS = 9.9.9.9\n") && text.contains("MTU = 1400\n"), "{text}");
    assert_eq!(app.get(&format!("/v0/devices/{id}"), &app.admin).await.data()["mtu"], 1400);

    let (other, other_domain) = app.second_instance().await;
    let seen = send(other.clone(), json_request(Method::GET, &config_path, Some(&app.admin), None)).await;
    assert!(String::from_utf8(seen.raw).unwrap().contains("MTU = 1400\n"), "read at start");
    app.patch(PATH, &app.admin, json!({"configuration": {"default_client_mtu": 1300}})).await;
    other_domain.reload_configuration().await.unwrap();
    let seen = send(other, json_request(Method::GET, &config_path, Some(&app.admin), None)).await;
    assert!(String::from_utf8(seen.raw).unwrap().contains("MTU = 1300\n"), "read again");
}

/// `null` for the MTU or keepalive default means "no such line" (Firezone): GET shows
/// null, devices using the default show null and get no line; a device's own value stays.
/// The endpoint has no such meaning (a file without one is useless): `null` is blank.
#[tokio::test]
async fn a_null_default_leaves_its_line_out_of_client_configurations() {
    let app = TestApp::new().await;
    let device = app.device(&app.admin_id).await;
    let own = app.device_with(&app.admin_id, json!({"use_default_mtu": false, "mtu": 1400})).await;
    let body = json!({"configuration": {"default_client_mtu": null, "default_client_persistent_keepalive": null}});
    let res = app.patch(PATH, &app.admin, body).await;
    res.expect_status(StatusCode::OK);
    assert_eq!(
        (&res.data()["default_client_mtu"], &res.data()["default_client_persistent_keepalive"]),
        (&Value::Null, &Value::Null)
    );
    assert_eq!(app.get(PATH, &app.admin).await.data(), res.data(), "stored");

    let config = |id: &Value| format!("/v0/devices/{}/config", id.as_str().unwrap());
    let text = String::from_utf8(app.get(&config(&device["id"]), &app.admin).await.raw).unwrap();
    assert!(!text.contains("MTU") && !text.contains("PersistentKeepalive"), "{text}");
    assert!(text.contains("\nEndpoint = "), "{text}");
    let shown = app.show_device(device["id"].as_str().unwrap()).await;
    assert_eq!((&shown["mtu"], &shown["persistent_keepalive"]), (&Value::Null, &Value::Null));
    let text = String::from_utf8(app.get(&config(&own["id"]), &app.admin).await.raw).unwrap();
    assert!(text.contains("MTU = 1400\n") && !text.contains("PersistentKeepalive"), "{text}");

    app.patch(PATH, &app.admin, json!({"configuration": {"default_client_endpoint": null}}))
        .await
        .expect_errors(json!({"default_client_endpoint": ["can't be blank"]}));
    app.patch(PATH, &app.admin, json!({"configuration": {"default_client_mtu": 1300}}))
        .await
        .expect_status(StatusCode::OK);
    let text = String::from_utf8(app.get(&config(&device["id"]), &app.admin).await.raw).unwrap();
    assert!(text.contains("MTU = 1300\n"), "a number again: {text}");
}

/// docs/design/egress-rules.md, "Default action": a runtime key, read by the table keeper
/// with the rules, unless the environment fixes it.
#[tokio::test]
async fn the_egress_default_action_is_a_key_the_policy_reads_unless_the_environment_sets_it() {
    let app = TestApp::new().await;
    let changes = app.domain.rule_changes();
    // A wake-up left by the set-up does not count.
    let _ = tokio::time::timeout(Duration::ZERO, changes.notified()).await;
    let woken = changes.notified();
    let body = json!({"configuration": {"egress_default_action": "drop"}});
    let res = app.patch(PATH, &app.admin, body).await;
    res.expect_status(StatusCode::OK);
    assert_eq!(res.data()["egress_default_action"], "drop");
    tokio::time::timeout(Duration::from_secs(5), woken).await.expect("the data plane was not woken");
    assert_eq!(app.domain.egress_policy().await.unwrap().default_action, RuleAction::Drop);
    let bad = json!({"configuration": {"egress_default_action": "reject"}});
    app.patch(PATH, &app.admin, bad)
        .await
        .expect_errors(json!({"egress_default_action": ["must be one of: accept, drop"]}));

    let fixed = TestApp::with_settings(|s| {
        s.configuration.egress_default_action = RuleAction::Drop;
        s.fixed = Fixed::new([("egress_default_action".to_owned(), "FERROZONE_EGRESS_DEFAULT_ACTION".to_owned())]);
    })
    .await;
    let accept = json!({"configuration": {"egress_default_action": "accept"}});
    fixed.patch(PATH, &fixed.admin, accept).await.expect_errors(json!({
        "egress_default_action": ["cannot be changed; it is overridden by FERROZONE_EGRESS_DEFAULT_ACTION environment variable"],
    }));
    assert_eq!(fixed.domain.egress_policy().await.unwrap().default_action, RuleAction::Drop);
}
