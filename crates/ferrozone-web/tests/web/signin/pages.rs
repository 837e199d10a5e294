//! Browsers get HTML pages, never the API's JSON: a failing store, a bad form or a wrong
//! method on the web routes answers a page with the status (and `Retry-After`) the API
//! would give; and every value a page shows is escaped.

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use ferrozone_domain::providers::Providers;
use ferrozone_http::{AppState, WebSettings};
use serde_json::json;

use super::{attribute_after, password_user, text, Browser, PASSWORD};
use crate::helpers::flaky::{flaky_app, Failure};
use crate::helpers::{TestResponse, HTML_UTF8};

/// `res` is an HTML page with `status` (and a `Retry-After` when `retry`) that names no cause.
fn expect_page(res: &TestResponse, status: StatusCode, retry: bool, what: &str) {
    assert_eq!(res.status, status, "{what}");
    assert_eq!(res.header("content-type"), Some(HTML_UTF8), "{what}");
    let html = text(res);
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("<h1>"), "{what}: {html}");
    assert!(!html.contains("SECRET-DETAIL") && !html.contains("connection refused"), "{what}: {html}");
    let retry_after = res.header("retry-after").and_then(|v| v.parse::<u32>().ok());
    assert_eq!(retry_after.is_some_and(|s| s > 0), retry, "{what}: Retry-After {retry_after:?}");
}

/// The router of `app` with an OpenID Connect provider `corp` (never reached: its callback
/// takes the flow from the store first).
fn with_oidc_provider(app: &crate::helpers::TestApp) -> axum::Router {
    let oidc = json!([{"id": "corp", "label": "Corp", "client_id": "c", "client_secret": "s",
                       "discovery_document_uri": "http://127.0.0.1:9/.well-known/openid-configuration",
                       "auto_create_users": false}]);
    let providers = Providers::parse(Some(&oidc.to_string()), "O", None, "S").unwrap();
    let web = WebSettings {
        external_url: "http://localhost:13000".into(),
        secure_cookies: false,
        providers,
        saml: Default::default(),
    };
    crate::helpers::app(AppState::with_web(app.domain.clone(), web))
}

#[tokio::test]
async fn a_failing_store_answers_every_web_route_with_a_page() {
    let (app, failing) = flaky_app().await;
    password_user(&app, "pat@example.com", "unprivileged").await;
    let mut signed_in = Browser::new(&app);
    signed_in.sign_in("pat@example.com", PASSWORD, "/").await.expect_status(StatusCode::SEE_OTHER);
    let csrf = signed_in.csrf_token().await;
    signed_in.allow_5xx = true;
    let mut signing_in = Browser::new(&app);
    signing_in.allow_5xx = true;
    signing_in.get("/sign_in").await.expect_status(StatusCode::OK);
    let token = signing_in.form_cookie.clone().unwrap();
    let mut provider = Browser::on(with_oidc_provider(&app), "192.0.2.11:1");
    provider.allow_5xx = true;
    // A callback whose flow cookie matches its state: the flow is taken from the store.
    let callback = || {
        Request::builder()
            .method(Method::GET)
            .uri("/auth/oidc/corp/callback?state=abc&code=x")
            .header("cookie", "ferrozone_flow=abc")
    };

    for (failure, status, retry) in [
        (Failure::Unavailable, StatusCode::SERVICE_UNAVAILABLE, true),
        (Failure::Internal, StatusCode::INTERNAL_SERVER_ERROR, false),
    ] {
        *failing.lock().unwrap() = Some(("*", failure));
        expect_page(&signed_in.get("/").await, status, retry, "GET /");
        let res = signed_in.post_form("/sign_out", &[("csrf_token", &csrf)]).await;
        expect_page(&res, status, retry, "POST /sign_out");
        let fields = [("email", "pat@example.com"), ("password", PASSWORD), ("csrf_token", &token)];
        expect_page(&signing_in.post_form("/sign_in", &fields).await, status, retry, "POST /sign_in");
        let res = provider.send(callback(), Body::empty()).await;
        expect_page(&res, status, retry, "GET /auth/oidc/corp/callback");
    }
    *failing.lock().unwrap() = None;
    signed_in.get("/").await.expect_status(StatusCode::OK);
}

#[tokio::test]
async fn bad_forms_and_wrong_methods_on_web_routes_answer_pages() {
    let app = crate::helpers::TestApp::new().await;
    let mut browser = Browser::new(&app);
    let json = Request::builder().method(Method::POST).uri("/sign_in").header("content-type", "application/json");
    let res = browser.send(json, Body::from("{}")).await;
    expect_page(&res, StatusCode::UNSUPPORTED_MEDIA_TYPE, false, "a JSON sign-in");
    let big = format!("email={}", "a".repeat(1024 * 1024 + 1));
    let form = Request::builder()
        .method(Method::POST)
        .uri("/sign_out")
        .header("content-type", "application/x-www-form-urlencoded");
    let res = browser.send(form, Body::from(big)).await;
    expect_page(&res, StatusCode::PAYLOAD_TOO_LARGE, false, "an oversized sign-out form");
    for (method, path) in [(Method::PUT, "/sign_in"), (Method::GET, "/sign_out"), (Method::POST, "/")] {
        let res = browser.send(Request::builder().method(method.clone()).uri(path), Body::empty()).await;
        expect_page(&res, StatusCode::METHOD_NOT_ALLOWED, false, &format!("{method} {path}"));
    }
}

#[tokio::test]
async fn an_email_with_markup_is_shown_escaped_on_the_sign_in_page() {
    let app = crate::helpers::TestApp::new().await;
    let mut browser = Browser::new(&app);
    let email = "\"><script>alert(1)</script>@example.com";
    let res = browser.sign_in(email, "wrong", "/").await;
    res.expect_status(StatusCode::UNAUTHORIZED);
    let html = text(&res);
    assert!(!html.contains("<script") && !html.contains(email), "{html}");
    let shown = attribute_after(&html, "name=\"email\" value=\"");
    assert_eq!(decode(&shown), email, "the field holds the email as typed: {html}");
}

/// `html` with the entities a page's escaping makes decoded.
fn decode(html: &str) -> String {
    let entities = [("&#34;", "\""), ("&quot;", "\""), ("&#39;", "'"), ("&#x27;", "'"), ("&#60;", "<"), ("&lt;", "<")];
    let decoded = entities.iter().fold(html.to_owned(), |text, (entity, c)| text.replace(entity, c));
    [("&#62;", ">"), ("&gt;", ">"), ("&#38;", "&"), ("&amp;", "&")]
        .iter()
        .fold(decoded, |text, (e, c)| text.replace(e, c))
}
