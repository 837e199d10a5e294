//! Request bodies: JSON only, wrapped, at most 1 MiB.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{key, TestApp, TestResponse};

/// 1 MiB, the largest body accepted.
const LIMIT: usize = 1024 * 1024;

/// A write endpoint: method, path and wrapper key.
struct Write {
    method: Method,
    path: String,
    wrapper: &'static str,
}

/// Every write endpoint, on records that exist.
async fn writes(app: &TestApp) -> Vec<Write> {
    let device = app.device(&app.admin_id).await["id"].as_str().unwrap().to_owned();
    let device_path = format!("/v0/devices/{device}");
    let user_path = format!("/v0/users/{}", app.admin_id);
    let write = |method: Method, path: &str, wrapper| Write { method, path: path.to_owned(), wrapper };
    vec![
        write(Method::POST, "/v0/devices", "device"),
        write(Method::PATCH, &device_path, "device"),
        write(Method::PUT, &device_path, "device"),
        write(Method::POST, "/v0/users", "user"),
        write(Method::PATCH, &user_path, "user"),
        write(Method::PUT, &user_path, "user"),
    ]
}

impl Write {
    async fn send(&self, app: &TestApp, content_type: Option<&str>, body: Vec<u8>) -> TestResponse {
        let auth = format!("Bearer {}", app.admin);
        let mut headers = vec![("authorization", auth.as_str())];
        headers.extend(content_type.map(|ct| ("content-type", ct)));
        app.raw(self.method.clone(), &self.path, &headers, body).await
    }

    /// A valid body for this endpoint (an empty update, or a minimal create).
    fn valid(&self, app: &TestApp) -> Value {
        match (self.method.as_str(), self.wrapper) {
            ("POST", "device") => json!({"device": {"user_id": app.admin_id, "public_key": key()}}),
            ("POST", _) => json!({"user": {"email": format!("{}@example.com", uuid::Uuid::new_v4())}}),
            (_, wrapper) => json!({ wrapper: {} }),
        }
    }

    fn success(&self) -> StatusCode {
        if self.method == Method::POST {
            StatusCode::CREATED
        } else {
            StatusCode::OK
        }
    }
}

#[tokio::test]
async fn malformed_json_and_missing_or_non_object_wrappers_are_400() {
    let app = TestApp::new().await;
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    for w in writes(&app).await {
        let bodies = [
            String::new(),
            "{".into(),
            "{\"W\": }".into(),
            "{\"W\": {}} trailing".into(),
            "{'W': {}}".into(),
            "null".into(),
            "42".into(),
            "\"W\"".into(),
            "[]".into(),
            "[{\"W\": {}}]".into(),
            "{}".into(),
            "{\"other\": {}}".into(),
            "{\"W_\": {}}".into(),
            "{\"W\": null}".into(),
            "{\"W\": \"text\"}".into(),
            "{\"W\": 1}".into(),
            "{\"W\": true}".into(),
            "{\"W\": []}".into(),
            "{\"W\": [{}]}".into(),
            format!("{{\"W\": {deep}}}"),
            deep.clone(),
        ];
        let (devices, users) = app.counts().await;
        for body in bodies {
            let body = body.replace('W', w.wrapper);
            let res = w.send(&app, Some("application/json"), body.clone().into_bytes()).await;
            assert_eq!(res.status, StatusCode::BAD_REQUEST, "{} {} {body:.80}: {}", w.method, w.path, res.body);
            res.expect_bad_request();
        }
        assert_eq!(app.counts().await, (devices, users), "nothing written");
    }
}

#[tokio::test]
async fn invalid_utf8_is_400() {
    let app = TestApp::new().await;
    for w in writes(&app).await {
        let bytes = [format!("{{\"{}\": {{\"name\": \"", w.wrapper).as_bytes(), &[0xff, 0xfe, 0xc3], b"\"}}"].concat();
        assert!(std::str::from_utf8(&bytes).is_err());
        w.send(&app, Some("application/json"), bytes).await.expect_bad_request();
    }
}

/// `body` padded with an unknown top-level key to exactly `size` bytes.
fn padded(body: &Value, size: usize) -> Vec<u8> {
    let mut with_pad = body.clone();
    with_pad["pad"] = json!("");
    let base = serde_json::to_vec(&with_pad).unwrap().len();
    with_pad["pad"] = json!("x".repeat(size - base));
    let bytes = serde_json::to_vec(&with_pad).unwrap();
    assert_eq!(bytes.len(), size);
    bytes
}

#[tokio::test]
async fn bodies_over_1_mib_are_413_and_1_mib_is_accepted() {
    let app = TestApp::new().await;
    for w in writes(&app).await {
        let res = w.send(&app, Some("application/json"), padded(&w.valid(&app), LIMIT)).await;
        res.expect_status(w.success());
        for size in [LIMIT + 1, 10 * 1000 * 1000] {
            let (devices, users) = app.counts().await;
            let body = padded(&w.valid(&app), size);
            let res = w.send(&app, Some("application/json"), body.clone()).await;
            res.expect(StatusCode::PAYLOAD_TOO_LARGE, json!({"error": "payload_too_large"}));
            // Also when the size is declared up front.
            let length = body.len().to_string();
            let auth = format!("Bearer {}", app.admin);
            let headers = [
                ("authorization", auth.as_str()),
                ("content-type", "application/json"),
                ("content-length", length.as_str()),
            ];
            let res = app.raw(w.method.clone(), &w.path, &headers, body).await;
            res.expect(StatusCode::PAYLOAD_TOO_LARGE, json!({"error": "payload_too_large"}));
            assert_eq!(app.counts().await, (devices, users), "nothing written");
        }
    }
}

#[tokio::test]
async fn non_json_content_types_are_415() {
    let app = TestApp::new().await;
    for w in writes(&app).await {
        let (devices, users) = app.counts().await;
        for content_type in [
            "text/plain",
            "text/json",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/xml",
            "application/jsonx",
            "",
        ] {
            let body = serde_json::to_vec(&w.valid(&app)).unwrap();
            let res = w.send(&app, Some(content_type), body).await;
            assert_eq!(res.status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{} {content_type}", w.path);
            let send_json = "send the body as JSON, with the header `Content-Type: application/json`";
            res.expect(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                json!({"error": "unsupported_media_type", "message": send_json}),
            );
        }
        assert_eq!(app.counts().await, (devices, users), "nothing written");
    }
}

#[tokio::test]
async fn json_content_types_and_no_content_type_are_accepted() {
    let app = TestApp::new().await;
    for w in writes(&app).await {
        for content_type in [
            None,
            Some("application/json; charset=utf-8"),
            Some("Application/JSON"),
            Some("application/merge-patch+json"),
        ] {
            let body = serde_json::to_vec(&w.valid(&app)).unwrap();
            let res = w.send(&app, content_type, body).await;
            assert_eq!(res.status, w.success(), "{} {} {content_type:?}: {}", w.method, w.path, res.body);
        }
    }
}
