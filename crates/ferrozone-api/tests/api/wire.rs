//! docs/api.md section 2: envelopes, timestamps, content types, errors, routing.

mod body;
mod headers;
mod routing;

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::devices::DEVICE_FIELDS;
use crate::helpers::{assert_timestamp, key, keys, sorted, TestApp, JSON_UTF8};

const USER_FIELDS: &[&str] =
    &["id", "email", "role", "disabled_at", "last_signed_in_at", "last_signed_in_method", "inserted_at", "updated_at"];

/// One collection: its path, wrapper key, a valid create body and a valid change.
struct Collection {
    path: &'static str,
    fields: &'static [&'static str],
    create: Value,
    change: Value,
}

fn collections(app: &TestApp) -> [Collection; 2] {
    [
        Collection {
            path: "/v0/devices",
            fields: DEVICE_FIELDS,
            create: json!({"device": {"user_id": app.admin_id, "public_key": key()}}),
            change: json!({"device": {"name": "renamed"}}),
        },
        Collection {
            path: "/v0/users",
            fields: USER_FIELDS,
            create: json!({"user": {"email": "envelope@example.com"}}),
            change: json!({"user": {"role": "admin"}}),
        },
    ]
}

#[tokio::test]
async fn every_operation_uses_its_envelope_status_and_headers() {
    let app = TestApp::new().await;
    for c in collections(&app) {
        let created = app.post(c.path, &app.admin, c.create.clone()).await;
        created.expect_status(StatusCode::CREATED);
        assert_eq!(keys(&created.body), ["data"]);
        assert_eq!(keys(created.data()), sorted(c.fields));
        let id = created.id();
        let one = format!("{}/{id}", c.path);
        assert_eq!(created.header("location"), Some(one.as_str()));
        assert_eq!(created.header("content-type"), Some(JSON_UTF8));

        let list = app.get(c.path, &app.admin).await;
        list.expect_status(StatusCode::OK);
        assert_eq!(keys(&list.body), ["data"], "no metadata without paging");
        assert!(list.data().as_array().expect("an array").iter().any(|item| item["id"] == id));

        let shown = app.get(&one, &app.admin).await;
        shown.expect(StatusCode::OK, json!({"data": created.data()}));

        let updated = app.patch(&one, &app.admin, c.change.clone()).await;
        updated.expect_status(StatusCode::OK);
        assert_eq!(keys(&updated.body), ["data"]);
        assert_eq!(updated.id(), id);

        let deleted = app.delete(&one, &app.admin).await;
        deleted.expect_status(StatusCode::NO_CONTENT);
        assert!(deleted.raw.is_empty());
        app.get(&one, &app.admin).await.expect_not_found();
    }
}

#[tokio::test]
async fn timestamps_are_utc_with_microseconds_and_equal_on_create() {
    let app = TestApp::new().await;
    for c in collections(&app) {
        let created = app.post(c.path, &app.admin, c.create.clone()).await;
        let data = created.expect_status(StatusCode::CREATED).data();
        assert_timestamp(&data["inserted_at"]);
        assert_timestamp(&data["updated_at"]);
        assert_eq!(data["inserted_at"], data["updated_at"], "{}", c.path);
    }
    let admin = app.show_user(&app.admin_id).await;
    assert_timestamp(&admin["inserted_at"]);
    for nullable in ["disabled_at", "last_signed_in_at", "last_signed_in_method"] {
        assert_eq!(admin[nullable], Value::Null, "{nullable}");
    }
}

#[tokio::test]
async fn put_and_patch_are_the_same_partial_update() {
    let app = TestApp::new().await;
    let (owner_a, _) = app.user("a@example.com", "unprivileged").await;
    let (owner_b, _) = app.user("b@example.com", "unprivileged").await;
    let bodies = [
        json!({}),
        json!({"name": "same-name"}),
        json!({"description": "  trimmed  "}),
        json!({"use_default_mtu": false, "mtu": 1400}),
        json!({"mtu": 1000}),
        json!({"use_default_endpoint": false}),
        json!({"name": ""}),
    ];
    for attrs in bodies {
        let a = app.device(&owner_a).await;
        let b = app.device(&owner_b).await;
        let patched = app
            .patch(&format!("/v0/devices/{}", a["id"].as_str().unwrap()), &app.admin, json!({"device": attrs}))
            .await;
        let put =
            app.put(&format!("/v0/devices/{}", b["id"].as_str().unwrap()), &app.admin, json!({"device": attrs})).await;
        assert_eq!(patched.status, put.status, "{attrs}");
        assert_eq!(comparable(&patched.body), comparable(&put.body), "{attrs}");
    }
    for (i, attrs) in
        [json!({}), json!({"role": "admin"}), json!({"email": ""}), json!({"role": "root"})].into_iter().enumerate()
    {
        let (x, _) = app.user(&format!("x{i}@example.com"), "unprivileged").await;
        let (y, _) = app.user(&format!("y{i}@example.com"), "unprivileged").await;
        let patched = app.patch(&format!("/v0/users/{x}"), &app.admin, json!({"user": attrs})).await;
        let put = app.put(&format!("/v0/users/{y}"), &app.admin, json!({"user": attrs})).await;
        assert_eq!(patched.status, put.status, "{attrs}");
        assert_eq!(comparable(&patched.body), comparable(&put.body), "{attrs}");
    }
}

/// A response body without the fields that differ between two otherwise equal records.
fn comparable(body: &Value) -> Value {
    let mut body = body.clone();
    if let Some(data) = body.get_mut("data").and_then(Value::as_object_mut) {
        for field in
            ["id", "user_id", "email", "public_key", "preshared_key", "ipv4", "ipv6", "inserted_at", "updated_at"]
        {
            data.remove(field);
        }
        if !data.contains_key("role") {
            // Device names are generated unless set; only compare a set name.
            if data.get("name").and_then(Value::as_str) != Some("same-name") {
                data.remove("name");
            }
        }
    }
    body
}

#[tokio::test]
async fn unknown_keys_are_ignored() {
    let app = TestApp::new().await;
    let fake_id = "00000000-0000-4000-8000-000000000001";
    let ignored = json!({
        "id": fake_id, "server_public_key": key(), "inserted_at": "2000-01-01T00:00:00.000000Z",
        "updated_at": "2000-01-01T00:00:00.000000Z", "latest_handshake": "2000-01-01T00:00:00.000000Z",
        "remote_ip": "1.2.3.4", "rx_bytes": 5, "tx_bytes": 6, "colour": {"nested": [1, 2]},
    });
    let mut attrs = ignored.clone();
    attrs["user_id"] = json!(app.admin_id);
    attrs["public_key"] = json!(key());
    let res = app.post("/v0/devices", &app.admin, json!({"device": attrs, "user": {"email": "x"}, "extra": 1})).await;
    let data = res.expect_status(StatusCode::CREATED).data().clone();
    assert_ne!(data["id"], fake_id);
    assert_eq!(data["server_public_key"], app.domain.server_public_key());
    assert_ne!(data["inserted_at"], ignored["inserted_at"]);
    for stat in ["latest_handshake", "remote_ip", "rx_bytes", "tx_bytes"] {
        assert_eq!(data[stat], Value::Null, "{stat}");
    }
    assert_eq!(keys(&data), sorted(DEVICE_FIELDS));
    assert_eq!(app.list("/v0/users").await.len(), 1, "the `user` key next to `device` is ignored");

    let user = json!({"email": "u@example.com", "id": fake_id, "disabled_at": "2000-01-01T00:00:00.000000Z",
        "last_signed_in_at": "2000-01-01T00:00:00.000000Z", "last_signed_in_method": "email",
        "password_hash": "$argon2id$x", "inserted_at": "2000-01-01T00:00:00.000000Z", "unknown": [null]});
    let res = app.post("/v0/users", &app.admin, json!({"user": user})).await;
    let data = res.expect_status(StatusCode::CREATED).data().clone();
    assert_ne!(data["id"], fake_id);
    for field in ["disabled_at", "last_signed_in_at", "last_signed_in_method"] {
        assert_eq!(data[field], Value::Null, "{field}");
    }
    assert_eq!(keys(&data), sorted(USER_FIELDS));
}

#[tokio::test]
async fn every_response_has_a_request_id_and_a_given_one_is_kept() {
    let app = TestApp::new().await;
    let a = app.get("/v0/devices", &app.admin).await;
    let b = app.raw(Method::GET, "/v0/nope", &[], Vec::new()).await;
    let (a, b) = (a.header("x-request-id").unwrap(), b.header("x-request-id").unwrap());
    assert!(!a.is_empty() && a != b, "{a} {b}");
    let kept = app.raw(Method::GET, "/healthz", &[("x-request-id", "trace-42")], Vec::new()).await;
    assert_eq!(kept.header("x-request-id"), Some("trace-42"));
}
