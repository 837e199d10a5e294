//! What every provider sign-in shares (docs/design/identity-providers.md, "Provider sign-in"): the
//! allow-list and auto-create rules, disabled users, the one-time flows, and the sign-in
//! page's provider links. The protocols themselves are tested against real providers.

use axum::http::StatusCode;
use ferrozone_domain::providers::{ProviderPolicy, Providers};
use ferrozone_domain::service::providers::{ProviderIdentity, ProviderSignIn};
use ferrozone_domain::Principal;
use ferrozone_http::{AppState, WebSettings};
use serde_json::json;

use super::{text, Browser};
use crate::helpers::TestApp;

fn signed_in(outcome: ProviderSignIn) -> ferrozone_domain::service::sessions::NewSession {
    match outcome {
        ProviderSignIn::SignedIn(session) => session,
        ProviderSignIn::NotAllowed => panic!("refused: not allowed"),
        ProviderSignIn::Disabled => panic!("refused: disabled"),
        ProviderSignIn::AdminNotAllowed => panic!("refused: an admin"),
        ProviderSignIn::UnusableEmail => panic!("refused: the email"),
    }
}

#[tokio::test]
async fn an_unknown_email_is_created_unprivileged_only_when_the_provider_may() {
    let app = TestApp::new().await;
    let refused = app.domain.sign_in_with_provider("okta", "new@example.com", false).await.unwrap();
    assert!(matches!(refused, ProviderSignIn::NotAllowed));
    assert!(app.domain.find_user("new@example.com").await.is_err(), "nothing was created");

    let session = signed_in(app.domain.sign_in_with_provider("okta", " New@Example.com ", true).await.unwrap());
    let user = app.show_user(&session.user.id.to_string()).await;
    assert_eq!(user["email"], "New@Example.com");
    assert_eq!(user["role"], "unprivileged");
    assert_eq!(user["last_signed_in_method"], "okta");
    assert!(user["last_signed_in_at"].is_string());
    assert!(app.domain.authenticate_session(&session.secret).await.unwrap().is_ok(), "the session works");

    let again = signed_in(app.domain.sign_in_with_provider("google", "new@example.com", true).await.unwrap());
    assert_eq!(again.user.id, session.user.id, "the same user, matched case-insensitively");
    assert_eq!(app.show_user(&session.user.id.to_string()).await["last_signed_in_method"], "google");
}

#[tokio::test]
async fn a_provider_sign_in_keeps_the_refresh_token_only_of_a_user_it_signed_in() {
    let app = TestApp::new().await;
    let closed = ProviderPolicy { auto_create_users: false, allow_admins: true };
    let token = |t: &str| Some(zeroize::Zeroizing::new(t.to_owned()));
    let stranger =
        ProviderIdentity { email: "stranger@example.com".into(), refresh_token: token("refresh-1"), groups: None };
    let refused = app.domain.sign_in_with_identity("google", &stranger, closed).await.unwrap();
    assert!(matches!(refused, ProviderSignIn::NotAllowed));
    assert!(app.domain.oidc_connections().await.unwrap().is_empty(), "no user, no connection");

    let (id, _) = app.user("kate@example.com", "unprivileged").await;
    let kate = ProviderIdentity { email: "Kate@example.com".into(), refresh_token: token("refresh-2"), groups: None };
    let session = signed_in(app.domain.sign_in_with_identity("google", &kate, closed).await.unwrap());
    assert_eq!(session.user.id.to_string(), id);
    assert_eq!(app.show_user(&id).await["last_signed_in_method"], "google");
    let connections = app.domain.oidc_connections().await.unwrap();
    assert_eq!(connections.len(), 1);
    assert_eq!((connections[0].user_id, connections[0].provider_id.as_str()), (session.user.id, "google"));
    assert_eq!(*app.domain.reveal_refresh_token(&connections[0]).unwrap(), "refresh-2");

    let without = ProviderIdentity { email: "kate@example.com".into(), refresh_token: None, groups: None };
    signed_in(app.domain.sign_in_with_identity("saml-idp", &without, closed).await.unwrap());
    assert_eq!(app.domain.oidc_connections().await.unwrap().len(), 1, "a sign-in without a token adds none");
}

#[tokio::test]
async fn pre_provisioned_users_are_the_allow_list_and_disabled_ones_stay_out() {
    let app = TestApp::new().await;
    let (id, _) = app.user("listed@example.com", "admin").await;
    let session = signed_in(app.domain.sign_in_with_provider("okta", "LISTED@example.com", false).await.unwrap());
    assert_eq!(session.user.id.to_string(), id);
    assert_eq!(app.show_user(&id).await["role"], "admin", "a provider never changes the role");

    app.domain.set_user_disabled(&ferrozone_domain::Principal::operator(), "listed@example.com", true).await.unwrap();
    let refused = app.domain.sign_in_with_provider("okta", "listed@example.com", true).await.unwrap();
    assert!(matches!(refused, ProviderSignIn::Disabled));
}

#[tokio::test]
async fn an_email_that_is_not_a_valid_user_email_is_refused() {
    let app = TestApp::new().await;
    for email in ["", "no-at-sign", "a\u{0}@example.com"] {
        let refused = app.domain.sign_in_with_provider("okta", email, true).await.unwrap();
        assert!(matches!(refused, ProviderSignIn::NotAllowed), "{email:?}");
    }
    let users = app.domain.list_users(&Principal::operator()).await.unwrap();
    assert!(users.iter().all(|u| u.email.contains("admin")), "nothing was created: {users:?}");
}

#[tokio::test]
async fn a_flow_returns_its_secrets_once_and_only_to_its_provider() {
    let app = TestApp::new().await;
    let state = app.domain.begin_sign_in_flow("google", b"nonce and verifier", "/devices").await.unwrap();
    assert!(app.domain.take_sign_in_flow("okta", &state).await.unwrap().is_none(), "another provider's");
    assert!(app.domain.take_sign_in_flow("google", &state).await.unwrap().is_none(), "ended by the wrong try");

    let state = app.domain.begin_sign_in_flow("google", b"nonce and verifier", "/devices").await.unwrap();
    let flow = app.domain.take_sign_in_flow("google", &state).await.unwrap().expect("pending");
    assert_eq!(flow.secrets.as_slice(), b"nonce and verifier");
    assert_eq!(flow.return_to, "/devices");
    assert!(app.domain.take_sign_in_flow("google", &state).await.unwrap().is_none(), "used once");
    assert!(app.domain.take_sign_in_flow("google", "").await.unwrap().is_none());
}

#[tokio::test]
async fn the_sign_in_page_links_every_provider_with_the_return_path() {
    let app = TestApp::new().await;
    let oidc = json!([{"id": "corp", "label": "Corp <SSO>", "client_id": "c", "client_secret": "s",
                       "discovery_document_uri": "https://idp.example/.well-known/openid-configuration",
                       "auto_create_users": false}]);
    let saml = json!([{"id": "okta", "label": "Okta", "metadata": "<md/>", "auto_create_users": true}]);
    let providers = Providers::parse(Some(&oidc.to_string()), "O", Some(&saml.to_string()), "S").unwrap();
    let web = WebSettings {
        external_url: "https://vpn.example/".into(),
        secure_cookies: true,
        providers,
        saml: Default::default(),
    };
    let mut browser = Browser::on(crate::helpers::app(AppState::with_web(app.domain.clone(), web)), "192.0.2.1:1");

    let html = text(browser.get("/sign_in?return_to=/devices%3Fa%3D1").await.expect_status(StatusCode::OK));
    assert!(
        html.contains(r#"<a class="button secondary" href="/auth/oidc/corp?return_to=%2Fdevices%3Fa%3D1">Sign in with Corp &#60;SSO&#62;</a>"#),
        "{html}"
    );
    assert!(
        html.contains(
            r#"<a class="button secondary" href="/auth/saml/okta?return_to=%2Fdevices%3Fa%3D1">Sign in with Okta</a>"#
        ),
        "{html}"
    );

    let html = text(browser.get("/sign_in?return_to=//evil.example").await.expect_status(StatusCode::OK));
    assert!(
        html.contains(r#"<a class="button secondary" href="/auth/oidc/corp">"#),
        "a foreign return_to is dropped: {html}"
    );
    assert!(!html.contains("evil.example"), "{html}");
}
