//! A signed-in session calling `/v0`: roles, CSRF on writes, sign-out, disabled users.

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use serde_json::json;

use super::{password_user, Browser, PASSWORD};
use crate::helpers::{key, TestApp};

/// A JSON request through `browser`, with `x-csrf-token` when given.
async fn call(
    browser: &mut Browser,
    method: Method,
    path: &str,
    csrf: Option<&str>,
    body: Option<serde_json::Value>,
) -> crate::helpers::TestResponse {
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

async fn signed_in(app: &TestApp, email: &str, role: &str) -> (String, Browser) {
    let id = password_user(app, email, role).await;
    let mut browser = Browser::new(app);
    browser.sign_in(email, PASSWORD, "/").await.expect_status(StatusCode::SEE_OTHER);
    (id, browser)
}

#[tokio::test]
async fn an_unprivileged_session_sees_its_own_devices_and_writes_with_its_csrf_token() {
    let app = TestApp::new().await;
    let (id, mut browser) = signed_in(&app, "pat@example.com", "unprivileged").await;
    let own = app.device(&id).await;
    app.device(&app.admin_id).await;

    let list = call(&mut browser, Method::GET, "/v0/devices", None, None).await;
    list.expect_status(StatusCode::OK);
    assert_eq!(list.data().as_array().unwrap().len(), 1);
    let path = format!("/v0/devices/{}", own["id"].as_str().unwrap());
    call(&mut browser, Method::GET, &path, None, None).await.expect_status(StatusCode::OK);
    call(&mut browser, Method::GET, "/v0/users", None, None).await.expect_forbidden();

    let create = json!({"device": {"public_key": key()}});
    let refused = call(&mut browser, Method::POST, "/v0/devices", None, Some(create.clone())).await;
    refused.expect(StatusCode::FORBIDDEN, json!({"error": "forbidden", "message": "missing or invalid CSRF token"}));
    let wrong = call(&mut browser, Method::DELETE, &path, Some("not-the-token"), None).await;
    wrong.expect_status(StatusCode::FORBIDDEN);

    let token = browser.csrf_token().await;
    let created = call(&mut browser, Method::POST, "/v0/devices", Some(&token), Some(create)).await;
    created.expect_status(StatusCode::CREATED);
    assert_eq!(created.data()["user_id"], id.as_str());
    call(&mut browser, Method::DELETE, &path, Some(&token), None).await.expect_status(StatusCode::NO_CONTENT);
}

#[tokio::test]
async fn an_authorization_header_wins_over_the_session_cookie() {
    let app = TestApp::new().await;
    let (_, mut browser) = signed_in(&app, "pat@example.com", "admin").await;
    let req = Request::builder().method(Method::GET).uri("/v0/users").header("authorization", "Bearer fz_nope");
    browser.send(req, Body::empty()).await.expect_auth_error("invalid_token");
}

#[tokio::test]
async fn signing_out_ends_the_session() {
    let app = TestApp::new().await;
    let (_, mut browser) = signed_in(&app, "pat@example.com", "admin").await;
    let secret = browser.session.clone().unwrap();
    browser.post_form("/sign_out", &[("csrf_token", "forged")]).await.expect_status(StatusCode::FORBIDDEN);
    call(&mut browser, Method::GET, "/v0/users", None, None).await.expect_status(StatusCode::OK);

    let token = browser.csrf_token().await;
    let res = browser.post_form("/sign_out", &[("csrf_token", &token)]).await;
    res.expect_status(StatusCode::SEE_OTHER);
    assert_eq!(res.header("location"), Some("/sign_in"));
    assert!(browser.session.is_none(), "the cookie is cleared");
    browser.session = Some(secret);
    call(&mut browser, Method::GET, "/v0/users", None, None).await.expect_auth_error("unauthenticated");
    assert_eq!(browser.get("/").await.header("location"), Some("/sign_in"));
}

#[tokio::test]
async fn a_disabled_or_deleted_user_s_session_stops_working() {
    let app = TestApp::new().await;
    let (_, mut browser) = signed_in(&app, "pat@example.com", "admin").await;
    // Disabling ends the user's sessions: enabling it again does not bring them back.
    app.domain.set_user_disabled(&ferrozone_domain::Principal::operator(), "pat@example.com", true).await.unwrap();
    call(&mut browser, Method::GET, "/v0/devices", None, None).await.expect_auth_error("unauthenticated");
    app.domain.set_user_disabled(&ferrozone_domain::Principal::operator(), "pat@example.com", false).await.unwrap();
    call(&mut browser, Method::GET, "/v0/devices", None, None).await.expect_auth_error("unauthenticated");
    browser.sign_in("pat@example.com", PASSWORD, "/").await.expect_status(StatusCode::SEE_OTHER);
    call(&mut browser, Method::GET, "/v0/devices", None, None).await.expect_status(StatusCode::OK);

    // Through the API too, and only that user's sessions end.
    let (kim, mut kim_browser) = signed_in(&app, "kim@example.com", "unprivileged").await;
    let disable = format!("/v0/users/{kim}/disable");
    app.request(Method::POST, &disable, Some(&app.admin), None).await.expect_status(StatusCode::OK);
    call(&mut kim_browser, Method::GET, "/v0/devices", None, None).await.expect_auth_error("unauthenticated");
    let enable = format!("/v0/users/{kim}/enable");
    app.request(Method::POST, &enable, Some(&app.admin), None).await.expect_status(StatusCode::OK);
    call(&mut kim_browser, Method::GET, "/v0/devices", None, None).await.expect_auth_error("unauthenticated");
    call(&mut browser, Method::GET, "/v0/devices", None, None).await.expect_status(StatusCode::OK);

    let (id, mut other) = signed_in(&app, "sam@example.com", "unprivileged").await;
    app.delete(&format!("/v0/users/{id}"), &app.admin).await.expect_status(StatusCode::NO_CONTENT);
    call(&mut other, Method::GET, "/v0/devices", None, None).await.expect_auth_error("unauthenticated");
}

#[tokio::test]
async fn a_new_password_or_the_operator_signs_a_user_out_everywhere() {
    let app = TestApp::new().await;
    let (id, mut first) = signed_in(&app, "pat@example.com", "unprivileged").await;
    let (_, mut kept) = signed_in(&app, "kim@example.com", "unprivileged").await;

    let email_only = json!({"user": {"email": "pat@example.org"}});
    app.patch(&format!("/v0/users/{id}"), &app.admin, email_only).await.expect_status(StatusCode::OK);
    call(&mut first, Method::GET, "/v0/devices", None, None).await.expect_status(StatusCode::OK);

    let password =
        json!({"user": {"password": "another long password", "password_confirmation": "another long password"}});
    app.patch(&format!("/v0/users/{id}"), &app.admin, password).await.expect_status(StatusCode::OK);
    call(&mut first, Method::GET, "/v0/devices", None, None).await.expect_auth_error("unauthenticated");
    call(&mut kept, Method::GET, "/v0/devices", None, None).await.expect_status(StatusCode::OK);

    let (user, ended) = app.domain.sign_out_everywhere("KIM@example.com").await.unwrap();
    assert_eq!((user.email.as_str(), ended), ("kim@example.com", 1));
    call(&mut kept, Method::GET, "/v0/devices", None, None).await.expect_auth_error("unauthenticated");
    assert!(app.domain.sign_out_everywhere("nobody@example.com").await.is_err());
}

#[tokio::test]
async fn deleting_expired_sessions_keeps_live_ones() {
    let app = TestApp::with_settings(|s| s.session_hours = 1).await;
    let (_, mut browser) = signed_in(&app, "pat@example.com", "unprivileged").await;
    assert_eq!(app.domain.delete_expired_sessions().await.unwrap(), 0, "a live session stays");
    call(&mut browser, Method::GET, "/v0/devices", None, None).await.expect_status(StatusCode::OK);
}
