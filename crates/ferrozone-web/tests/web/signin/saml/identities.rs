//! The provider sign-in rules the SAML handler shares with OpenID Connect (docs/design/identity-providers.md,
//! "Provider sign-in"): the per-address cap on started flows, emails matched in
//! ASCII case only, and `allow_admins`.

use reqwest::StatusCode;

use super::idp::{browser, serve, Idp};
use super::{provider, sign_in, PROVIDER};
use crate::helpers::TestApp;

#[tokio::test]
async fn starts_past_the_per_address_cap_are_refused_with_429() {
    let app = TestApp::with_settings(|s| s.sign_in_flows_per_address = 2).await;
    let Some(idp) = Idp::start(serde_json::json!({})) else { return };
    let base = serve(&app, &idp, provider(true), false).await;
    let start = || async { browser().get(format!("{base}/auth/saml/{PROVIDER}")).send().await.unwrap().status() };
    assert_eq!(start().await, StatusCode::OK, "the IdP's sign-in page");
    assert_eq!(start().await, StatusCode::OK);
    assert_eq!(start().await, StatusCode::TOO_MANY_REQUESTS);
}

#[tokio::test]
async fn a_kelvin_sign_email_does_not_sign_in_as_the_admin_kate() {
    let app = TestApp::new().await;
    app.user("kate@example.com", "admin").await;
    let Some(idp) = Idp::start(serde_json::json!({})) else { return };
    let base = serve(&app, &idp, provider(true), false).await;
    let (status, _, page) = sign_in(&browser(), &base, "\u{212A}ate@example.com").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{page}");
    assert!(page.contains("Email not usable"), "{page}");
    let (status, path, page) = sign_in(&browser(), &base, "kate@example.com").await;
    assert_eq!((status, path.as_str()), (StatusCode::OK, "/"), "{page}");
}

#[tokio::test]
async fn a_provider_with_allow_admins_false_signs_in_everyone_but_admins() {
    let app = TestApp::new().await;
    app.user("boss@example.com", "admin").await;
    let Some(idp) = Idp::start(serde_json::json!({})) else { return };
    let mut strict = provider(true);
    strict["allow_admins"] = serde_json::Value::Bool(false);
    let base = serve(&app, &idp, strict, false).await;
    let (status, _, page) = sign_in(&browser(), &base, "boss@example.com").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{page}");
    assert!(page.contains("Administrators cannot sign in with this sign-in provider"), "{page}");
    let (status, path, page) = sign_in(&browser(), &base, "someone@example.com").await;
    assert_eq!((status, path.as_str()), (StatusCode::OK, "/"), "{page}");
}
