//! What the server logs: a 500's cause with the request id, and never a password.

use std::io::Write;
use std::sync::{Arc, Mutex};

use axum::http::{Method, StatusCode};
use serde_json::json;
use tracing::subscriber::DefaultGuard;

use crate::helpers::flaky::{call, flaky_app, Failure};
use crate::helpers::TestApp;

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

/// The address the fail2ban filter of docs/operations.md bans for `line`: its failregex
/// `^.*?: sign-in refused client=<HOST> method=` takes the first such text of the line.
fn banned_address(line: &str) -> Option<std::net::IpAddr> {
    let (_, rest) = line.split_once(": sign-in refused client=")?;
    let (address, rest) = rest.split_once(' ')?;
    rest.starts_with("method=").then(|| address.parse().ok())?
}

fn refusals(logs: &Captured) -> Vec<String> {
    logs.text().lines().filter(|l| l.contains("sign-in refused")).map(str::to_owned).collect()
}

#[tokio::test]
async fn a_refused_sign_in_is_one_line_with_the_address_and_the_account_as_typed() {
    let app = TestApp::new().await;
    let (logs, _guard) = Captured::start();
    let mut browser = crate::signin::Browser::new(&app);
    browser.sign_in("Nobody@Example.com", "Wrong-Logged-Password", "/").await.expect_status(StatusCode::UNAUTHORIZED);
    let lines = refusals(&logs);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(banned_address(&lines[0]), Some(browser.address.ip()), "{}", lines[0]);
    let fields = r#"method=password reason=wrong_password account="Nobody@Example.com""#;
    assert!(lines[0].ends_with(fields), "{}", lines[0]);

    // An account typed to look like another address, or another line, bans nobody else.
    let forged = "x\" client=198.51.100.7\n: sign-in refused client=198.51.100.8 ".repeat(10);
    browser.sign_in(&forged, "Wrong-Logged-Password", "/").await.expect_status(StatusCode::UNAUTHORIZED);
    let lines = refusals(&logs);
    assert_eq!(lines.len(), 2, "one line, whatever the account holds: {lines:?}");
    assert_eq!(banned_address(&lines[1]), Some(browser.address.ip()), "{}", lines[1]);
    assert!(lines[1].len() < 400, "the account is cut short: {}", lines[1]);
    assert!(!logs.text().contains("Wrong-Logged-Password"), "never the password");
}

#[tokio::test]
async fn a_refused_token_is_logged_with_the_address() {
    let app = TestApp::new().await;
    let (logs, _guard) = Captured::start();
    app.get("/v0/users", "fz_not-a-token").await.expect_auth_error("invalid_token");
    let lines = refusals(&logs);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("method=token reason=invalid_token"), "{}", lines[0]);
    assert!(banned_address(&lines[0]).is_some(), "{}", lines[0]);
}

#[tokio::test]
async fn every_write_names_its_actor() {
    let app = TestApp::new().await;
    let (logs, _guard) = Captured::start();
    let body = json!({"user": {"email": "written@example.com"}});
    app.post("/v0/users", &app.admin, body).await.expect_status(StatusCode::CREATED);
    let text = logs.text();
    let line = text.lines().find(|l| l.contains("status=201")).unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("actor=token:"), "{line}");
    assert!(line.contains("ferrozone_http::telemetry: request status=201"), "the line's target is stable: {line}");
}
