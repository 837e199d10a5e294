//! Device updates: partial, `user_id` fixed, `use_default_*` merged with the stored record.

use axum::http::StatusCode;
use serde_json::{json, Value};

use super::id_of;
use crate::helpers::{assert_changed, key, TestApp, TestResponse};

async fn update(app: &TestApp, device: &Value, attrs: Value) -> TestResponse {
    app.patch(&format!("/v0/devices/{}", id_of(device)), &app.admin, json!({ "device": attrs })).await
}

/// Applies each step to one device: `Ok(changed fields)` or `Err(errors)`, and checks
/// that the stored device follows (and is untouched by a rejected step).
async fn walk(app: &TestApp, device: &Value, steps: Vec<(Value, Result<Value, Value>)>) {
    for (attrs, outcome) in steps {
        let before = app.show_device(&id_of(device)).await;
        let res = update(app, device, attrs.clone()).await;
        match outcome {
            Ok(changed) => {
                assert_eq!(res.status, StatusCode::OK, "{attrs}: {}", res.body);
                let moved = !changed.as_object().unwrap().is_empty();
                assert_changed(&before, res.data(), &changed, moved);
            }
            Err(errors) => {
                assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY, "{attrs}: {}", res.body);
                assert_eq!(res.body, json!({ "errors": errors }), "{attrs}");
            }
        }
        let after = app.show_device(&id_of(device)).await;
        if res.status == StatusCode::OK {
            assert_eq!(&after, res.data(), "{attrs}: read back");
        } else {
            assert_eq!(after, before, "{attrs}: untouched");
        }
    }
}

#[tokio::test]
async fn name_description_and_keys_change_and_no_ops_do_not() {
    let app = TestApp::new().await;
    let d = app.device(&app.admin_id).await;
    app.device_with(&app.admin_id, json!({"name": "taken"})).await;
    let taken_key = app.device(&app.admin_id).await["public_key"].clone();
    let (new_key, psk) = (key(), key());
    walk(
        &app,
        &d,
        vec![
            (json!({}), Ok(json!({}))),
            (json!({"name": d["name"]}), Ok(json!({}))),
            (json!({"user_id": app.admin_id}), Ok(json!({}))),
            (json!({"user_id": null}), Ok(json!({}))),
            (
                json!({"name": " laptop ", "description": " mine "}),
                Ok(json!({"name": "laptop", "description": "mine"})),
            ),
            (json!({"description": "mine"}), Ok(json!({}))),
            (json!({"description": ""}), Ok(json!({"description": null}))),
            (json!({"description": "again"}), Ok(json!({"description": "again"}))),
            (json!({"description": null}), Ok(json!({"description": null}))),
            (json!({"public_key": new_key}), Ok(json!({"public_key": new_key}))),
            (json!({"preshared_key": psk}), Ok(json!({"preshared_key": psk}))),
            (
                json!({"id": "6f1c2b9e-3d4a-4c5b-9e8f-0a1b2c3d4e5f", "rx_bytes": 1, "server_public_key": "x"}),
                Ok(json!({})),
            ),
            (json!({"name": null}), Err(json!({"name": ["can't be blank"]}))),
            (json!({"name": "  "}), Err(json!({"name": ["can't be blank"]}))),
            (json!({"name": "n".repeat(256)}), Err(json!({"name": ["should be at most 255 character(s)"]}))),
            (json!({"name": "taken"}), Err(json!({"name": ["has already been taken"]}))),
            (
                json!({"description": "d".repeat(2049)}),
                Err(json!({"description": ["should be at most 2048 character(s)"]})),
            ),
            (json!({"public_key": taken_key}), Err(json!({"public_key": ["has already been taken"]}))),
            (json!({"public_key": null}), Err(json!({"public_key": ["can't be blank"]}))),
            (json!({"public_key": "short"}), Err(json!({"public_key": ["must be a base64-encoded 32-byte key"]}))),
            (
                json!({"preshared_key": "short"}),
                Err(json!({"preshared_key": ["must be a base64-encoded 32-byte key"]})),
            ),
            (json!({"name": "ok", "mtu": 1400}), Err(json!({"mtu": ["must not be present"]}))),
        ],
    )
    .await;
}

#[tokio::test]
async fn user_id_cannot_be_changed() {
    let app = TestApp::new().await;
    let (other, _) = app.user("other@example.com", "unprivileged").await;
    let d = app.device(&app.admin_id).await;
    let changed = json!({"user_id": ["cannot be changed"]});
    let cases = [
        json!(other),
        json!("6f1c2b9e-3d4a-4c5b-9e8f-0a1b2c3d4e5f"),
        json!("junk"),
        json!(5),
        json!(""),
        json!([app.admin_id]),
    ];
    walk(&app, &d, cases.into_iter().map(|user_id| (json!({ "user_id": user_id }), Err(changed.clone()))).collect())
        .await;
    assert!(app.list(&format!("/v0/devices?user_id={other}")).await.is_empty());
}

#[tokio::test]
async fn switching_a_default_off_takes_a_value_and_on_clears_it() {
    let app = TestApp::new().await;
    let d = app.device(&app.admin_id).await;
    walk(
        &app,
        &d,
        vec![
            (json!({"mtu": 1400}), Err(json!({"mtu": ["must not be present"]}))),
            (json!({"use_default_mtu": false, "mtu": 1400}), Ok(json!({"use_default_mtu": false, "mtu": 1400}))),
            (json!({"mtu": 1300}), Ok(json!({"mtu": 1300}))),
            (json!({"mtu": 100}), Err(json!({"mtu": ["must be greater than or equal to 576"]}))),
            (json!({"use_default_mtu": true, "mtu": 1300}), Err(json!({"mtu": ["must not be present"]}))),
            (json!({"use_default_mtu": true}), Ok(json!({"use_default_mtu": true, "mtu": 1280}))),
            (json!({"use_default_mtu": false}), Ok(json!({"use_default_mtu": false, "mtu": null}))),
            (json!({"use_default_endpoint": false}), Err(json!({"endpoint": ["can't be blank"]}))),
            (
                json!({"use_default_endpoint": false, "endpoint": "vpn.example.com:443"}),
                Ok(json!({"use_default_endpoint": false, "endpoint": "vpn.example.com:443"})),
            ),
            (json!({"endpoint": "bad host"}), Err(json!({"endpoint": ["is invalid"]}))),
            (json!({"endpoint": null}), Err(json!({"endpoint": ["can't be blank"]}))),
            (
                json!({"use_default_endpoint": true}),
                Ok(json!({"use_default_endpoint": true, "endpoint": "localhost:51820"})),
            ),
            (json!({"use_default_endpoint": false}), Err(json!({"endpoint": ["can't be blank"]}))),
            (
                json!({"use_default_dns": false, "dns": ["9.9.9.9"]}),
                Ok(json!({"use_default_dns": false, "dns": ["9.9.9.9"]})),
            ),
            (json!({"dns": ["9.9.9.9", "9.9.9.9"]}), Err(json!({"dns": ["should not contain duplicates"]}))),
            (json!({"use_default_dns": true}), Ok(json!({"use_default_dns": true, "dns": ["1.1.1.1", "1.0.0.1"]}))),
            (json!({"use_default_dns": false}), Ok(json!({"use_default_dns": false, "dns": []}))),
            (
                json!({"use_default_allowed_ips": false, "allowed_ips": ["10.0.0.0/8"]}),
                Ok(json!({"use_default_allowed_ips": false, "allowed_ips": ["10.0.0.0/8"]})),
            ),
            (
                json!({"use_default_allowed_ips": true, "allowed_ips": []}),
                Ok(json!({"use_default_allowed_ips": true, "allowed_ips": ["0.0.0.0/0", "::/0"]})),
            ),
            (
                json!({"use_default_persistent_keepalive": false, "persistent_keepalive": 0}),
                Ok(json!({"use_default_persistent_keepalive": false, "persistent_keepalive": 0})),
            ),
            (
                json!({"use_default_persistent_keepalive": null}),
                Err(json!({"use_default_persistent_keepalive": ["is invalid"]})),
            ),
            (
                json!({"use_default_persistent_keepalive": true}),
                Ok(json!({"use_default_persistent_keepalive": true, "persistent_keepalive": 25})),
            ),
        ],
    )
    .await;
}

#[tokio::test]
async fn addresses_can_be_moved_within_the_network() {
    let app = TestApp::new().await;
    let d = app.device_with(&app.admin_id, json!({"ipv4": "10.3.2.10", "ipv6": "fd00::3:2:10"})).await;
    app.device_with(&app.admin_id, json!({"ipv4": "10.3.2.20", "ipv6": "fd00::3:2:20"})).await;
    walk(
        &app,
        &d,
        vec![
            (json!({"ipv4": "10.3.2.10", "ipv6": "fd00::3:2:10"}), Ok(json!({}))),
            (json!({"ipv4": null, "ipv6": ""}), Ok(json!({}))),
            (json!({"ipv4": "10.3.2.11"}), Ok(json!({"ipv4": "10.3.2.11"}))),
            (json!({"ipv6": "FD00::3:2:11"}), Ok(json!({"ipv6": "fd00::3:2:11"}))),
            (json!({"ipv4": "10.3.2.20"}), Err(json!({"ipv4": ["has already been taken"]}))),
            (json!({"ipv6": "fd00::3:2:20"}), Err(json!({"ipv6": ["has already been taken"]}))),
            (json!({"ipv4": "10.3.2.1"}), Err(json!({"ipv4": ["is reserved"]}))),
            (json!({"ipv4": "10.9.9.9"}), Err(json!({"ipv4": ["is not in the CIDR 10.3.2.0/24"]}))),
            (json!({"ipv6": "fd00::3:2:ff"}), Err(json!({"ipv6": ["is reserved"]}))),
            (json!({"ipv6": "10.3.2.5"}), Err(json!({"ipv6": ["is invalid"]}))),
        ],
    )
    .await;
    // The old address is free for another device.
    let moved_from = app.device_with(&app.admin_id, json!({"ipv4": "10.3.2.10", "ipv6": "fd00::3:2:10"})).await;
    assert_eq!(moved_from["ipv4"], "10.3.2.10");
}
