//! `local_auth_enabled` (issue 18): off, the sign-in page offers no password form and a
//! password sign-in is refused with 403 and a message, before any password is checked;
//! provider sign-in, existing sessions and API tokens go on working. Read per use.

use axum::http::StatusCode;
use ferrozone_domain::service::sessions::LOCAL_AUTH_OFF;
use ferrozone_domain::DomainError;
use ferrozone_http::{AppState, WebSettings};
use serde_json::json;

use super::{password_user, set_cookies, text, Browser, PASSWORD};
use crate::helpers::TestApp;

async fn set_local_auth(app: &TestApp, on: bool) {
    let body = json!({"configuration": {"local_auth_enabled": on}});
    app.patch("/v0/configuration", &app.admin, body).await.expect_status(StatusCode::OK);
}

#[tokio::test]
async fn with_local_auth_off_a_password_sign_in_is_refused_and_the_form_is_gone() {
    let app = TestApp::new().await;
    password_user(&app, "pat@example.com", "unprivileged").await;
    let mut signed_in = Browser::on(app.router.clone(), "192.0.2.20:1");
    signed_in.sign_in("pat@example.com", PASSWORD, "/").await.expect_status(StatusCode::SEE_OTHER);
    let mut browser = Browser::new(&app);
    browser.get("/sign_in").await.expect_status(StatusCode::OK);
    let token = browser.form_cookie.clone().unwrap();
    set_local_auth(&app, false).await;

    let page = text(browser.get("/sign_in").await.expect_status(StatusCode::OK));
    assert!(!page.contains("name=\"password\"") && !page.contains("<form"), "{page}");
    assert!(page.contains("Signing in with a password is turned off"), "{page}");
    // The form held from before is refused, the right password and a valid form token
    // notwithstanding, and no session is started.
    let fields = [("email", "pat@example.com"), ("password", PASSWORD), ("csrf_token", &token)];
    let res = browser.post_form("/sign_in", &fields).await;
    res.expect_status(StatusCode::FORBIDDEN);
    let html = text(&res);
    assert!(html.contains(LOCAL_AUTH_OFF) && !html.contains("<form"), "{html}");
    assert!(set_cookies(&res).iter().all(|(name, _)| name != "ferrozone_session"), "no session");
    let refused = app.domain.sign_in_with_password("pat@example.com", PASSWORD).await;
    assert!(matches!(refused, Err(DomainError::Disallowed(LOCAL_AUTH_OFF))), "the use case refuses too");

    // A session already open and API tokens are not password sign-ins.
    signed_in.get("/").await.expect_status(StatusCode::OK);
    app.get("/v0/users", &app.admin).await.expect_status(StatusCode::OK);

    set_local_auth(&app, true).await;
    browser.sign_in("pat@example.com", PASSWORD, "/").await.expect_status(StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn with_local_auth_off_providers_are_still_offered_and_sign_in() {
    let app = TestApp::new().await;
    set_local_auth(&app, false).await;
    let saml = json!([{"id": "okta", "label": "Okta", "metadata": "<md/>", "auto_create_users": true}]);
    let providers = ferrozone_domain::providers::Providers::parse(None, "O", Some(&saml.to_string()), "S").unwrap();
    let web = WebSettings {
        external_url: "https://vpn.example/".into(),
        secure_cookies: true,
        providers,
        saml: Default::default(),
    };
    let mut browser = Browser::on(crate::helpers::app(AppState::with_web(app.domain.clone(), web)), "192.0.2.1:1");

    let page = text(browser.get("/sign_in").await.expect_status(StatusCode::OK));
    assert!(page.contains(r#"<a class="button secondary" href="/auth/saml/okta">Sign in with Okta</a>"#), "{page}");
    assert!(!page.contains("<form") && !page.contains("turned off"), "{page}");
    let outcome = app.domain.sign_in_with_provider("okta", "new@example.com", true).await.unwrap();
    assert!(matches!(outcome, ferrozone_domain::service::providers::ProviderSignIn::SignedIn(_)));
}
