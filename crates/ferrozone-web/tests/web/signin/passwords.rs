//! The bound on password hashing (docs/design/sign-in.md, "Password work at capacity"): past the running and waiting
//! operations it allows, a password sign-in or change is refused at once with a 503.

use std::sync::mpsc;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Method, Request, StatusCode};
use serde_json::json;

use super::{password_user, set_cookies, text, Browser, PASSWORD};
use crate::helpers::{json_request, send_any, TestApp, TestResponse};

/// `POST /sign_in` with the form token `browser` holds, a 5xx allowed.
async fn post_sign_in(app: &TestApp, browser: &Browser, password: &str) -> TestResponse {
    let token = browser.form_cookie.clone().unwrap();
    let fields = [("email", "pat@example.com"), ("password", password), ("csrf_token", &token)];
    let body = form_urlencoded::Serializer::new(String::new()).extend_pairs(fields).finish();
    let req = Request::builder()
        .method(Method::POST)
        .uri("/sign_in")
        .header("content-type", "application/x-www-form-urlencoded")
        .header("cookie", format!("ferrozone_sign_in={token}"))
        .extension(ConnectInfo(browser.address));
    send_any(app.router.clone(), req.body(Body::from(body)).unwrap()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn password_work_past_the_queue_is_refused_with_503_and_retry_after() {
    let app = TestApp::with_settings(|s| {
        s.passwords.hash_concurrency = 1;
        s.passwords.hash_queue = 0;
    })
    .await;
    let id = password_user(&app, "pat@example.com", "admin").await;
    let (release, held) = mpsc::channel::<()>();
    let domain = app.domain.clone();
    let holder = tokio::spawn(async move { domain.password_gate().run(move || held.recv()).await });
    while app.domain.password_gate().admitted() == 0 {
        tokio::task::yield_now().await;
    }

    let mut browser = Browser::new(&app);
    browser.get("/sign_in").await.expect_status(StatusCode::OK);
    let res = post_sign_in(&app, &browser, PASSWORD).await;
    res.expect_status(StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(res.header("retry-after"), Some("5"));
    assert!(text(&res).contains("The server is busy"), "an HTML page");
    assert!(set_cookies(&res).iter().all(|(name, _)| name != "ferrozone_session"), "no session");

    let change =
        json!({"user": {"password": "another long password", "password_confirmation": "another long password"}});
    let path = format!("/v0/users/{id}");
    let res = send_any(app.router.clone(), json_request(Method::PATCH, &path, Some(&app.admin), Some(&change))).await;
    res.expect(
        StatusCode::SERVICE_UNAVAILABLE,
        json!({"error": "service_unavailable", "message": "too many password sign-ins or changes are in progress"}),
    );
    assert_eq!(res.header("retry-after"), Some("5"));

    release.send(()).unwrap();
    holder.await.unwrap().unwrap().unwrap();
    for _ in 0..4 {
        let res = browser.sign_in("pat@example.com", "wrong password entirely", "").await;
        res.expect_status(StatusCode::UNAUTHORIZED);
    }
    // The refused attempt was not counted: this is the fifth.
    browser.sign_in("pat@example.com", PASSWORD, "").await.expect_status(StatusCode::SEE_OTHER);
}
