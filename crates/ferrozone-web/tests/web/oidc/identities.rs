//! Which identities a provider may sign in: emails compared in ASCII case only, the
//! `allow_admins` and `require_verified_email` options, and the refresh token that an
//! `offline_access` scope asks for (docs/design/identity-providers.md, "Provider sign-in").

use ferrozone_domain::providers::ProviderPolicy;
use ferrozone_domain::service::providers::ProviderSignIn;
use reqwest::StatusCode;

use super::Env;
use crate::helpers::TestApp;

/// `kate@example.com` with the Kelvin sign (U+212A) for its `k`: its Unicode lower case is
/// `kate@example.com`.
const KELVIN_KATE: &str = "\u{212A}ate@example.com";

#[tokio::test]
async fn a_kelvin_sign_email_does_not_sign_in_as_the_admin_kate() {
    let Some(env) = Env::start().await else { return };
    env.app.user("kate@example.com", "admin").await;
    let before = env.app.counts().await;
    for provider in ["idp", "auto"] {
        let browser = env.browser();
        let page = browser.sign_in(provider, KELVIN_KATE, "/").await;
        assert_eq!(page.status, StatusCode::FORBIDDEN, "{provider}: {}", page.body);
        assert!(page.body.contains("Email not usable"), "{}", page.body);
        assert_eq!(browser.get("/").await.url.path(), "/sign_in", "no session");
    }
    assert_eq!(env.app.counts().await, before, "nobody created");
    env.signed_in("idp", "Kate@Example.COM").await;
}

#[tokio::test]
async fn provider_emails_match_users_in_ascii_case_only() {
    let app = TestApp::new().await;
    let open = ProviderPolicy { auto_create_users: true, allow_admins: true };
    let sign_in = |email: &'static str| {
        let domain = app.domain.clone();
        async move { domain.sign_in_through_provider("saml-or-oidc", email, open).await.unwrap() }
    };
    app.user("kate@example.com", "admin").await;
    assert!(matches!(sign_in(KELVIN_KATE).await, ProviderSignIn::UnusableEmail));
    assert!(matches!(sign_in("\u{C9}lodie@example.com").await, ProviderSignIn::UnusableEmail), "É folds to é");
    assert!(matches!(sign_in(" KATE@example.com ").await, ProviderSignIn::SignedIn(_)));
    assert!(matches!(sign_in("\u{E9}lodie@example.com").await, ProviderSignIn::SignedIn(_)), "é is its own case");
}

#[tokio::test]
async fn a_provider_with_allow_admins_false_signs_in_everyone_but_admins() {
    let Some(env) = Env::custom(false, TestApp::new().await, |p| p.allow_admins = false).await else { return };
    env.app.user("boss@example.com", "admin").await;
    let browser = env.browser();
    let page = browser.sign_in("idp", "boss@example.com", "/").await;
    assert_eq!(page.status, StatusCode::FORBIDDEN, "{}", page.body);
    assert!(page.body.contains("Administrators cannot sign in with this sign-in provider"), "{}", page.body);
    assert_eq!(browser.get("/").await.url.path(), "/sign_in", "no session");
    assert!(env.app.domain.oidc_connections().await.unwrap().is_empty(), "no refresh token kept");

    env.app.user("alice@example.com", "unprivileged").await;
    env.signed_in("idp", "alice@example.com").await;
    env.signed_in("auto", "newcomer@example.com").await;
}

#[tokio::test]
async fn require_verified_email_refuses_an_email_without_email_verified() {
    let Some(strict) = Env::custom(false, TestApp::new().await, |p| p.require_verified_email = p.id == "auto").await
    else {
        return;
    };
    let page = strict.browser().sign_in("auto", "unstated+a@example.com", "/").await;
    assert_eq!(page.status, StatusCode::FORBIDDEN, "{}", page.body);
    assert!(page.body.contains("Email not verified"), "{}", page.body);
    assert!(strict.app.domain.find_user("unstated+a@example.com").await.is_err(), "not created");
    strict.signed_in("auto", "verified@example.com").await;
    // Without the option, only an explicit `email_verified: false` refuses.
    strict.app.user("unstated+b@example.com", "unprivileged").await;
    strict.signed_in("idp", "unstated+b@example.com").await;
}

#[tokio::test]
async fn offline_access_is_asked_with_a_consent_prompt_and_brings_a_refresh_token() {
    let Some(env) = Env::start().await else { return };
    env.signed_in("auto", "first@example.com").await;
    assert_eq!(env.app.domain.oidc_connections().await.unwrap().len(), 1, "the refresh token is kept");

    let Some(without) = Env::custom(false, TestApp::new().await, |p| p.consent_prompt = false).await else { return };
    without.signed_in("auto", "first@example.com").await;
    without.signed_in("auto", "second@example.com").await;
    assert!(without.app.domain.oidc_connections().await.unwrap().is_empty(), "a strict provider issued none");
}
