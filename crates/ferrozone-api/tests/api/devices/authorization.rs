//! Authorization before validation (issue 16): a caller who may not act on a device gets
//! 403 (creating one for another user) or 404 (another user's device), whatever its request
//! body holds; only an authorized request is validated.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use super::id_of;
use crate::helpers::{key, TestApp};

const UNKNOWN_ID: &str = "6f1c2b9e-3d4a-4c5b-9e8f-0a1b2c3d4e5f";

/// Attributes that fail validation in every way they can at once.
fn invalid_attrs() -> Value {
    json!({
        "name": "", "public_key": "short", "preshared_key": 7, "ipv4": "10.9.9.9", "ipv6": "x",
        "allowed_ips": "all", "dns": [1], "mtu": "big", "persistent_keepalive": -1,
        "use_default_mtu": "no", "description": "d".repeat(3000),
    })
}

#[tokio::test]
async fn creating_a_device_for_another_user_is_403_whatever_the_body_holds() {
    let app = TestApp::new().await;
    let (me, token) = app.user("me@example.com", "unprivileged").await;
    let (other, _) = app.user("other@example.com", "unprivileged").await;
    let owners =
        [json!(other), json!(app.admin_id), json!(UNKNOWN_ID), json!("not a uuid"), json!(7), json!([me]), json!({})];
    for owner in owners {
        for attrs in [invalid_attrs(), json!({"public_key": key()}), json!({})] {
            let mut attrs = attrs;
            attrs["user_id"] = owner.clone();
            let res = app.post("/v0/devices", &token, json!({"device": attrs})).await;
            assert_eq!(res.status, StatusCode::FORBIDDEN, "user_id {owner}: {}", String::from_utf8_lossy(&res.raw));
            res.expect_forbidden();
        }
    }
    assert!(app.list("/v0/devices").await.is_empty(), "nothing created");
}

#[tokio::test]
async fn a_users_own_create_is_still_validated() {
    let app = TestApp::new().await;
    let (me, token) = app.user("me@example.com", "unprivileged").await;
    for owner in [Value::Null, json!(""), json!("  "), json!(me), json!(format!(" {me} "))] {
        let mut attrs = json!({"public_key": "short"});
        attrs["user_id"] = owner.clone();
        let res = app.post("/v0/devices", &token, json!({"device": attrs})).await;
        assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY, "user_id {owner}");
        res.expect_errors(json!({"public_key": ["must be a base64-encoded 32-byte key"]}));
    }
    // A body that is no device at all is malformed (400) before anything can be authorized.
    app.post("/v0/devices", &token, json!({"device": 5})).await.expect_bad_request();
}

#[tokio::test]
async fn updating_another_users_device_is_404_whatever_the_body_holds() {
    let app = TestApp::new().await;
    let (_, token) = app.user("me@example.com", "unprivileged").await;
    let (other, _) = app.user("other@example.com", "unprivileged").await;
    let device = app.device(&other).await;
    let path = format!("/v0/devices/{}", id_of(&device));
    let bearer = format!("Bearer {token}");
    let json = [("content-type", "application/json"), ("authorization", bearer.as_str())];
    let text = [("content-type", "text/plain"), ("authorization", bearer.as_str())];
    for method in [Method::PATCH, Method::PUT] {
        for body in ["{", "[]", "5", "{}", r#"{"device": 5}"#, r#"{"device": null}"#] {
            let res = app.raw(method.clone(), &path, &json, body).await;
            assert_eq!(res.status, StatusCode::NOT_FOUND, "{method} {body}");
            res.expect_not_found();
        }
        app.raw(method.clone(), &path, &text, r#"{"device": {}}"#).await.expect_not_found();
        let res = app.request(method.clone(), &path, Some(&token), Some(json!({"device": invalid_attrs()}))).await;
        res.expect_not_found();
    }
    app.delete(&path, &token).await.expect_not_found();
    assert_eq!(app.show_device(&id_of(&device)).await, device, "unchanged");
}

#[tokio::test]
async fn an_own_devices_malformed_update_is_still_400() {
    let app = TestApp::new().await;
    let (me, token) = app.user("me@example.com", "unprivileged").await;
    let device = app.device(&me).await;
    let path = format!("/v0/devices/{}", id_of(&device));
    let bearer = format!("Bearer {token}");
    let headers = [("content-type", "application/json"), ("authorization", bearer.as_str())];
    app.raw(Method::PATCH, &path, &headers, "{").await.expect_bad_request();
    app.raw(Method::PATCH, &path, &headers, r#"{"device": 5}"#).await.expect_bad_request();
    let text = [("content-type", "text/plain"), ("authorization", bearer.as_str())];
    let res = app.raw(Method::PATCH, &path, &text, r#"{"device": {}}"#).await;
    assert_eq!(res.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    // An admin's malformed update of anyone's device, and of an unknown one.
    let admin_bearer = format!("Bearer {}", app.admin);
    let admin = [("content-type", "application/json"), ("authorization", admin_bearer.as_str())];
    app.raw(Method::PATCH, &path, &admin, "{").await.expect_bad_request();
    app.raw(Method::PATCH, &format!("/v0/devices/{UNKNOWN_ID}"), &admin, "{").await.expect_not_found();
}
