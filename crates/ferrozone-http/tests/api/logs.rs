//! What the server logs: a 500's cause with the request id, and never a password.

use std::io::Write;
use std::sync::{Arc, Mutex};

use axum::http::{Method, StatusCode};
use serde_json::json;
use tracing::subscriber::DefaultGuard;

use crate::helpers::TestApp;
use crate::outage::{call, flaky_app, Failure};

/// Log lines written while the guard lives, on this thread (tests here run on the
/// current-thread runtime, so every handler runs on the test's thread).
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    fn start() -> (Self, DefaultGuard) {
        let captured = Self::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_max_level(tracing::Level::TRACE)
            .with_writer(move || writer.clone())
            .finish();
        (captured, tracing::subscriber::set_default(subscriber))
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn passwords_and_tokens_are_never_logged() {
    let app = TestApp::new().await;
    let (logs, _guard) = Captured::start();
    let password = "Never-Logged-Password-42";
    let attrs = json!({"email": "quiet@example.com", "password": password, "password_confirmation": password});
    let id = app.post("/v0/users", &app.admin, json!({"user": attrs})).await.expect_status(StatusCode::CREATED).id();
    let short = json!({"user": {"password": "Short-Logged", "password_confirmation": "Other-Logged"}});
    app.patch(&format!("/v0/users/{id}"), &app.admin, short).await.expect_status(StatusCode::UNPROCESSABLE_ENTITY);
    let text = logs.text();
    assert!(text.contains("user created"), "the capture works: {text}");
    for secret in [password, "Short-Logged", "Other-Logged", app.admin.as_str(), "quiet@example.com"] {
        assert!(!text.contains(secret), "{secret} logged: {text}");
    }
}

#[tokio::test]
async fn generated_private_keys_are_never_logged() {
    let app = TestApp::new().await;
    let (logs, _guard) = Captured::start();
    let res = app.create_device(json!({"user_id": app.admin_id})).await;
    let private_key = res.expect_status(StatusCode::CREATED).data()["private_key"].as_str().unwrap().to_owned();
    let text = logs.text();
    assert!(text.contains("device created") && text.contains("generated_key=true"), "the capture works: {text}");
    assert!(!text.contains(&private_key), "the private key logged: {text}");
}

#[tokio::test]
async fn a_500s_cause_is_logged_with_the_request_id() {
    let (app, failing) = flaky_app().await;
    let (logs, _guard) = Captured::start();
    *failing.lock().unwrap() = Some(("stream_devices", Failure::Internal));
    let res = call(&app, Method::GET, "/v0/devices", None).await;
    res.expect(StatusCode::INTERNAL_SERVER_ERROR, json!({"error": "internal_error"}));
    let request_id = res.header("x-request-id").unwrap();
    let text = logs.text();
    let line = text.lines().find(|l| l.contains("SECRET-DETAIL")).unwrap_or_else(|| panic!("cause not logged: {text}"));
    assert!(line.contains("ERROR") && line.contains(request_id), "{line}");
}
