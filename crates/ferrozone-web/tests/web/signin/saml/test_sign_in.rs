//! The console's Test sign-in for a SAML IdP (docs/web.md, "Console: identity providers"),
//! against the real IdP: an admin runs it from the provider's page; the IdP's answer is
//! verified as a sign-in's is, and the page shows the proved email and what signing in
//! would do, signing nobody in and recording no refused sign-in. A forged answer shows why
//! it failed.

use reqwest::StatusCode;
use serde_json::json;

use super::idp::{browser, serve_without_providers, Form, Idp};
use super::{post_answer, provider, sign_in_at_idp, PROVIDER};
use crate::helpers::TestApp;
use crate::signin::{attribute_after, password_user, PASSWORD};

const ADMIN: &str = "boss@example.com";

/// Ferrozone on a real port with `provider` (of `idp`) stored as the console stores one.
async fn serve(app: &TestApp, idp: &Idp, mut provider: serde_json::Value) -> String {
    let base = serve_without_providers(app).await;
    provider["metadata"] = json!(idp.metadata().await);
    let body = json!({"configuration": {"saml_identity_providers": [provider]}});
    app.patch("/v0/configuration", &app.admin, body).await.expect_status(axum::http::StatusCode::OK);
    base
}

/// A browser signed in to `base` as the admin.
async fn admin(base: &str) -> reqwest::Client {
    let browser = browser();
    let page = browser.get(format!("{base}/sign_in")).send().await.unwrap().text().await.unwrap();
    let token = attribute_after(&page, "name=\"csrf_token\" value=\"");
    let form = [("email", ADMIN), ("password", PASSWORD), ("return_to", "/"), ("csrf_token", &token)];
    let home = browser.post(format!("{base}/sign_in")).form(&form).send().await.unwrap();
    assert_eq!((home.status(), home.url().path()), (StatusCode::OK, "/"));
    browser
}

/// Runs the test (the provider page's link) as `email` at the IdP: the final status and page.
async fn run_test(browser: &reqwest::Client, base: &str, email: &str) -> (StatusCode, String, String) {
    let url = format!("{base}/admin/providers/saml/{PROVIDER}/test");
    let at_idp = browser.get(url).send().await.unwrap();
    let form: Form = sign_in_at_idp(browser, base, at_idp, email).await;
    post_answer(browser, &form).await
}

#[tokio::test]
async fn a_test_shows_the_proved_email_and_signs_nobody_in() {
    let app = TestApp::new().await;
    let Some(idp) = Idp::start(json!({})) else { return };
    password_user(&app, ADMIN, "admin").await;
    let base = serve(&app, &idp, provider(false)).await;
    let browser = admin(&base).await;
    let provider_page = browser.get(format!("{base}/admin/providers/saml/{PROVIDER}")).send().await.unwrap();
    let provider_page = provider_page.text().await.unwrap();
    assert!(provider_page.contains(&format!("href=\"/admin/providers/saml/{PROVIDER}/test\"")), "{provider_page}");
    let (users_before, admin_before) = (app.counts().await.1, app.show_user(ADMIN).await["last_signed_in_at"].clone());

    let (status, path, page) = run_test(&browser, &base, "nobody@example.com").await;
    assert_eq!((status, path.as_str()), (StatusCode::OK, format!("/auth/saml/finish/{PROVIDER}").as_str()), "{page}");
    assert!(page.contains("Test sign-in: Test IdP") && page.contains("Nobody was signed in by this test."), "{page}");
    assert!(page.contains("<code>nobody@example.com</code>"), "{page}");
    assert!(
        page.contains("no user has the email nobody@example.com, and this provider does not create users"),
        "{page}"
    );
    assert_eq!(app.counts().await.1, users_before, "nobody was created");
    assert_eq!(app.show_user(ADMIN).await["last_signed_in_at"], admin_before, "the admin's sign-in is unchanged");
    assert!(crate::audit::refused_sign_ins(&app).await.is_empty(), "a test refuses nobody");

    app.user("pat@example.com", "unprivileged").await;
    let (status, _, page) = run_test(&browser, &base, "pat@example.com").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(page.contains("Signing in would sign pat@example.com in, a user."), "{page}");
    assert!(app.show_user("pat@example.com").await["last_signed_in_at"].is_null());

    let stranger = super::idp::browser();
    let refused = stranger.get(format!("{base}/admin/providers/saml/{PROVIDER}/test")).send().await.unwrap();
    assert_eq!(refused.url().path(), "/sign_in", "no test without an admin session");
}

#[tokio::test]
async fn a_forged_answer_is_shown_as_failing_verification() {
    let app = TestApp::new().await;
    let config = json!({"keyFile": "keys/other.key", "certFile": "keys/other.crt", "metadataCertFile": "keys/idp.crt"});
    let Some(idp) = Idp::start(config) else { return };
    password_user(&app, ADMIN, "admin").await;
    let base = serve(&app, &idp, provider(true)).await;
    let browser = admin(&base).await;
    let users_before = app.counts().await.1;
    let (status, _, page) = run_test(&browser, &base, "mallory@example.com").await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{page}");
    assert!(page.contains("The identity provider&#39;s answer failed verification: "), "{page}");
    assert!(!page.contains("mallory@example.com"), "an answer that failed proves no email: {page}");
    assert_eq!(app.counts().await.1, users_before, "nobody was created");
    assert!(crate::audit::refused_sign_ins(&app).await.is_empty(), "a test refuses nobody");
}
