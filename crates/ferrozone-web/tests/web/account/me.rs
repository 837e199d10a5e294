//! `/v0/me`: the caller's own user, its password, its sessions; through a token and
//! through a session (with its CSRF token on writes).

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use serde_json::{json, Value};

use super::{browser_of, signed_in, signed_in_still, NEW_PASSWORD};
use crate::helpers::{TestApp, TestResponse};
use crate::signin::{password_user, set_cookies, Browser, PASSWORD};

/// A JSON request through `browser`'s session, with `x-csrf-token` when given.
async fn call(
    browser: &mut Browser,
    method: Method,
    path: &str,
    csrf: Option<&str>,
    body: Option<Value>,
) -> TestResponse {
    let mut req = Request::builder().method(method).uri(path);
    if let Some(token) = csrf {
        req = req.header("x-csrf-token", token);
    }
    let body = match body {
        Some(v) => {
            req = req.header("content-type", "application/json");
            Body::from(v.to_string())
        }
        None => Body::empty(),
    };
    browser.send(req, body).await
}

fn change(current: &str, new: &str) -> Value {
    json!({"current_password": current, "password": new, "password_confirmation": new})
}

#[tokio::test]
async fn me_is_the_callers_user_in_the_users_shape() {
    let app = TestApp::new().await;
    let (id, token) = app.user("pat@example.com", "unprivileged").await;
    let me = app.get("/v0/me", &token).await;
    me.expect_status(StatusCode::OK);
    assert_eq!(me.body, app.get(&format!("/v0/users/{id}"), &app.admin).await.body);
    assert_eq!(me.data()["email"], "pat@example.com");
    app.request(Method::GET, "/v0/me", None, None).await.expect_auth_error("unauthenticated");

    let (_, mut browser) = signed_in(&app, "sam@example.com", "admin").await;
    let me = call(&mut browser, Method::GET, "/v0/me", None, None).await;
    assert_eq!((me.status, &me.data()["role"]), (StatusCode::OK, &json!("admin")));
    assert_eq!(me.data()["last_signed_in_method"], "password");
}

#[tokio::test]
async fn a_token_changes_its_users_password_and_every_session_ends() {
    let app = TestApp::new().await;
    password_user(&app, "pat@example.com", "unprivileged").await;
    let token = app.token("pat@example.com").await;
    let mut browser = browser_of(&app, "pat@example.com", PASSWORD).await;

    let res = app.post("/v0/me/password", &token, json!({})).await;
    res.expect_errors(json!({"current_password": ["can't be blank"], "password": ["can't be blank"]}));
    let res = app
        .post("/v0/me/password", &token, json!({"current_password": 1, "password": "x", "password_confirmation": "y"}))
        .await;
    res.expect_errors(json!({
        "current_password": ["is invalid"],
        "password": ["should be at least 12 character(s)"],
        "password_confirmation": ["does not match confirmation"],
    }));
    let res = app.post("/v0/me/password", &token, change("not my password", NEW_PASSWORD)).await;
    res.expect_errors(json!({"current_password": ["is not correct"]}));
    app.post("/v0/me/password", &token, json!([])).await.expect_bad_request();
    assert!(signed_in_still(&mut browser).await, "nothing changed yet");

    app.post("/v0/me/password", &token, change(PASSWORD, NEW_PASSWORD)).await.expect_status(StatusCode::NO_CONTENT);
    assert!(!signed_in_still(&mut browser).await, "a token keeps no session");
    app.get("/v0/me", &token).await.expect_status(StatusCode::OK);
    browser_of(&app, "pat@example.com", NEW_PASSWORD).await;
}

#[tokio::test]
async fn a_session_changes_its_password_with_its_csrf_token_and_stays() {
    let app = TestApp::new().await;
    let (_, mut here) = signed_in(&app, "pat@example.com", "unprivileged").await;
    let mut elsewhere = browser_of(&app, "pat@example.com", PASSWORD).await;
    let body = change(PASSWORD, NEW_PASSWORD);
    let refused = call(&mut here, Method::POST, "/v0/me/password", None, Some(body.clone())).await;
    refused.expect(StatusCode::FORBIDDEN, json!({"error": "forbidden", "message": "missing or invalid CSRF token"}));
    let csrf = here.csrf_token().await;
    let res = call(&mut here, Method::POST, "/v0/me/password", Some(&csrf), Some(body)).await;
    res.expect_status(StatusCode::NO_CONTENT);
    assert!(signed_in_still(&mut here).await, "the session that changed it stays");
    assert!(!signed_in_still(&mut elsewhere).await, "the other one ended");
}

#[tokio::test]
async fn wrong_current_passwords_are_throttled_as_sign_ins() {
    let app = TestApp::new().await;
    password_user(&app, "pat@example.com", "unprivileged").await;
    let token = app.token("pat@example.com").await;
    for _ in 0..5 {
        let res = app.post("/v0/me/password", &token, change("a wrong guess", NEW_PASSWORD)).await;
        res.expect_status(StatusCode::UNPROCESSABLE_ENTITY);
    }
    let res = app.post("/v0/me/password", &token, change(PASSWORD, NEW_PASSWORD)).await;
    assert_eq!(res.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(res.body["error"], "too_many_requests");
    assert!(res.header("retry-after").is_some_and(|secs| secs.parse::<u64>().is_ok_and(|s| s >= 1)));
    // Blank fields are no guess: they are refused without being counted.
    let app = TestApp::new().await;
    password_user(&app, "pat@example.com", "unprivileged").await;
    let token = app.token("pat@example.com").await;
    for _ in 0..8 {
        app.post("/v0/me/password", &token, json!({})).await.expect_status(StatusCode::UNPROCESSABLE_ENTITY);
    }
    app.post("/v0/me/password", &token, change(PASSWORD, NEW_PASSWORD)).await.expect_status(StatusCode::NO_CONTENT);
}

#[tokio::test]
async fn a_user_without_a_password_cannot_set_one_here() {
    let app = TestApp::new().await;
    let (_, token) = app.user("pat@example.com", "unprivileged").await;
    let res = app.post("/v0/me/password", &token, change("anything at all", NEW_PASSWORD)).await;
    res.expect_status(StatusCode::FORBIDDEN);
    assert!(res.body["message"].as_str().unwrap().contains("identity provider"), "{:?}", res.body);
}

#[tokio::test]
async fn signing_out_everywhere_ends_every_session_and_keeps_the_tokens() {
    let app = TestApp::new().await;
    let (_, mut here) = signed_in(&app, "pat@example.com", "unprivileged").await;
    let mut elsewhere = browser_of(&app, "pat@example.com", PASSWORD).await;
    let token = app.token("pat@example.com").await;

    app.delete("/v0/me/sessions", &token).await.expect_status(StatusCode::NO_CONTENT);
    assert!(!signed_in_still(&mut here).await && !signed_in_still(&mut elsewhere).await);
    app.get("/v0/me", &token).await.expect_status(StatusCode::OK);

    let mut browser = browser_of(&app, "pat@example.com", PASSWORD).await;
    let secret = browser.session.clone();
    call(&mut browser, Method::DELETE, "/v0/me/sessions", None, None).await.expect_status(StatusCode::FORBIDDEN);
    let csrf = browser.csrf_token().await;
    let res = call(&mut browser, Method::DELETE, "/v0/me/sessions", Some(&csrf), None).await;
    res.expect_status(StatusCode::NO_CONTENT);
    assert!(set_cookies(&res).contains(&("ferrozone_session".to_owned(), String::new())), "the cookie is cleared");
    browser.session = secret;
    call(&mut browser, Method::GET, "/v0/me", None, None).await.expect_auth_error("unauthenticated");
}
