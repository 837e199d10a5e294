//! Malformed input to every write endpoint: wrong JSON types, huge and odd strings,
//! extreme numbers, nested garbage. Each must be answered with a 2xx or a 4xx carrying a
//! JSON body (never a 5xx: `send` checks that on every response), and a rejected write
//! must leave nothing behind.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{key, merge, TestApp, TestResponse};

const DEVICE_FIELDS: &[&str] = &[
    "user_id",
    "name",
    "description",
    "public_key",
    "preshared_key",
    "ipv4",
    "ipv6",
    "allowed_ips",
    "dns",
    "endpoint",
    "mtu",
    "persistent_keepalive",
    "use_default_allowed_ips",
    "use_default_dns",
    "use_default_endpoint",
    "use_default_mtu",
    "use_default_persistent_keepalive",
];
const USER_FIELDS: &[&str] = &["email", "role", "password", "password_confirmation"];

/// Values of every JSON type and of every awkward shape.
fn garbage() -> Vec<Value> {
    let number = |text: &str| serde_json::from_str::<Value>(text).expect("a JSON number");
    let nested = (0..100).fold(json!("deep"), |inner, _| json!([inner]));
    vec![
        json!(0),
        json!(-1),
        json!(1.5),
        json!(1e300),
        json!(-1e300),
        number("18446744073709551616"),
        number("-9223372036854775809"),
        json!(u64::MAX),
        json!(i64::MIN),
        json!(true),
        json!(false),
        json!(null),
        json!([]),
        json!([1, "a", null, {}]),
        json!({}),
        json!({"a": {"b": [null, {"c": 1}]}}),
        nested,
        json!(""),
        json!("   "),
        json!("x".repeat(100_000)),
        json!("é".repeat(50_000)),
        json!("\u{0}"),
        json!("a\u{0}b"),
        json!("\u{1}\u{7f}\u{1b}[31m"),
        json!("🦀💥"),
        json!("\u{202e}evil\u{feff}"),
        json!("\u{fffd}\u{10ffff}"),
        json!("'; DROP TABLE users; --"),
        json!("../../etc/passwd"),
        json!("%00"),
        json!("10.3.2.5\n"),
        json!(["\u{0}"]),
        json!(["x".repeat(100_000)]),
    ]
}

/// The outcome must be a success or a 4xx; on a 422, `field` or the attribute it governs
/// (the setting of a `use_default_*` switch, the confirmation of a password) is among the
/// reported keys. Returns whether the write succeeded.
#[track_caller]
fn check(res: &TestResponse, field: &str, value: &Value) -> bool {
    let shown = value.to_string().chars().take(60).collect::<String>();
    assert!(res.status.is_success() || res.status.is_client_error(), "{field} = {shown}: {}", res.status);
    assert!(res.status.is_success() || res.body.is_object(), "{field} = {shown}: a 4xx without a JSON body");
    if res.status == StatusCode::UNPROCESSABLE_ENTITY {
        let governed =
            if field == "password" { "password_confirmation" } else { field.trim_start_matches("use_default_") };
        let errors = &res.body["errors"];
        assert!(errors.get(field).is_some() || errors.get(governed).is_some(), "{field} = {shown}: {}", res.body);
    }
    res.status.is_success()
}

/// One collection's write endpoints.
struct Target {
    collection: &'static str,
    wrapper: &'static str,
    fields: &'static [&'static str],
}

const DEVICES: Target = Target { collection: "/v0/devices", wrapper: "device", fields: DEVICE_FIELDS };
const USERS: Target = Target { collection: "/v0/users", wrapper: "user", fields: USER_FIELDS };

impl Target {
    /// A valid create body's attributes, different for each `i`.
    fn valid(&self, app: &TestApp, i: usize) -> Value {
        match self.wrapper {
            "device" => json!({"user_id": app.admin_id, "public_key": key()}),
            _ => json!({"email": format!("g{i}@example.com")}),
        }
    }

    /// Every field with every garbage value on create; a rejected one writes nothing,
    /// an accepted one is deleted again.
    async fn creates(&self, app: &TestApp) {
        for field in self.fields {
            for (i, value) in garbage().into_iter().enumerate() {
                let attrs = merge(self.valid(app, i), json!({ *field: value }));
                let before = app.counts().await;
                let res = app.post(self.collection, &app.admin, json!({ self.wrapper: attrs })).await;
                if check(&res, field, &value) {
                    assert_eq!(res.status, StatusCode::CREATED);
                    let created = format!("{}/{}", self.collection, res.id());
                    app.delete(&created, &app.admin).await.expect_status(StatusCode::NO_CONTENT);
                }
                assert_eq!(app.counts().await, before, "{field}: no partial write");
            }
        }
    }

    /// Every field with every garbage value on update (PATCH and PUT); a rejected one
    /// leaves the record as it was.
    async fn updates(&self, app: &TestApp, id: &str) {
        let path = format!("{}/{id}", self.collection);
        for (i, field) in self.fields.iter().enumerate() {
            for value in garbage() {
                let before = app.get(&path, &app.admin).await.body;
                let method = if i % 2 == 0 { Method::PATCH } else { Method::PUT };
                let res =
                    app.request(method, &path, Some(&app.admin), Some(json!({ self.wrapper: { *field: value } })));
                let res = res.await;
                if !check(&res, field, &value) {
                    assert_eq!(app.get(&path, &app.admin).await.body, before, "{field}: untouched");
                }
            }
        }
    }
}

#[tokio::test]
async fn device_creates_with_garbage_fields() {
    let app = TestApp::new().await;
    DEVICES.creates(&app).await;
}

#[tokio::test]
async fn device_updates_with_garbage_fields() {
    let app = TestApp::new().await;
    let device = app.device(&app.admin_id).await;
    DEVICES.updates(&app, device["id"].as_str().unwrap()).await;
    assert_eq!(app.list("/v0/devices").await.len(), 1);
}

#[tokio::test]
async fn user_creates_with_garbage_fields() {
    let app = TestApp::new().await;
    USERS.creates(&app).await;
}

#[tokio::test]
async fn user_updates_with_garbage_fields() {
    let app = TestApp::new().await;
    let (id, _) = app.user("target@example.com", "unprivileged").await;
    USERS.updates(&app, &id).await;
    assert_eq!(app.list("/v0/users").await.len(), 2);
}

#[tokio::test]
async fn garbage_in_paths_and_queries_is_4xx() {
    let app = TestApp::new().await;
    let long = "x".repeat(20_000);
    for segment in ["%00", "%FF%FE", "%F0%9F%A6%80", "..%2F..%2Fetc", long.as_str(), "%20", "%25"] {
        for collection in ["devices", "users"] {
            let path = format!("/v0/{collection}/{segment}");
            app.get(&path, &app.admin).await.expect_not_found();
            app.delete(&path, &app.admin).await.expect_not_found();
        }
        let res =
            app.get(&format!("/v0/devices?user_id={segment}&limit={segment}&page_cursor={segment}"), &app.admin).await;
        res.expect_bad_request();
    }
}
