//! Signing in through the provider: auto-create, the allow-list, disabled users, emails
//! the provider does not vouch for, the session on `/v0`, and a provider that is down.

use ferrozone_domain::Role;
use reqwest::StatusCode;
use serde_json::json;

use super::Env;
use crate::helpers::key;

#[tokio::test]
async fn auto_create_makes_an_unprivileged_user_signed_in_with_the_provider() {
    let Some(env) = Env::start().await else { return };
    let browser = env.signed_in("auto", "newcomer@example.com").await;
    let home = browser.get("/").await.body;
    assert!(home.contains("<h1>My devices</h1>") && home.contains("newcomer@example.com"), "{home}");

    let user = env.app.domain.find_user("newcomer@example.com").await.unwrap();
    assert_eq!(user.role, Role::Unprivileged);
    assert_eq!(user.password_hash, None);
    assert_eq!(user.last_signed_in_method.as_deref(), Some("auto"));
    assert!(user.last_signed_in_at.is_some());
    let connections = env.app.domain.oidc_connections().await.unwrap();
    assert_eq!(connections.len(), 1, "the refresh token is kept");
    assert_eq!((connections[0].user_id, connections[0].provider_id.as_str()), (user.id, "auto"));
}

#[tokio::test]
async fn the_sign_in_page_links_each_provider() {
    let Some(env) = Env::start().await else { return };
    let page = env.browser().get("/sign_in").await;
    assert!(page.body.contains("href=\"/auth/oidc/idp\"") && page.body.contains("Test IdP (open)"), "{}", page.body);
}

#[tokio::test]
async fn without_auto_create_an_unknown_email_is_refused_and_nothing_is_created() {
    let Some(env) = Env::start().await else { return };
    let before = env.app.counts().await;
    let browser = env.browser();
    let page = browser.sign_in("idp", "stranger@example.com", "/").await;
    assert_eq!(page.status, StatusCode::FORBIDDEN, "{}", page.body);
    assert!(page.body.contains("stranger@example.com has no account here"), "{}", page.body);
    assert_eq!(env.app.counts().await, before);
    assert!(env.app.domain.oidc_connections().await.unwrap().is_empty());
    assert_eq!(browser.get("/").await.url.path(), "/sign_in", "no session");
}

#[tokio::test]
async fn a_pre_provisioned_user_signs_in_and_its_session_works_on_v0_for_its_own_devices() {
    let Some(env) = Env::start().await else { return };
    let (alice_id, _) = env.app.user("alice@example.com", "unprivileged").await;
    let own = env.app.device(&alice_id).await;
    env.app.device(&env.app.admin_id).await;

    let browser = env.signed_in("idp", "Alice@Example.com").await;
    let user = env.app.domain.find_user("alice@example.com").await.unwrap();
    assert_eq!(user.last_signed_in_method.as_deref(), Some("idp"));

    let list: serde_json::Value =
        browser.client.get(browser.url("/v0/devices")).send().await.unwrap().json().await.unwrap();
    assert_eq!(list["data"].as_array().unwrap().iter().map(|d| &d["id"]).collect::<Vec<_>>(), vec![&own["id"]]);

    let create = json!({"device": {"public_key": key()}});
    let url = browser.url("/v0/devices");
    let refused = browser.client.post(&url).json(&create).send().await.unwrap();
    assert_eq!(refused.status(), StatusCode::FORBIDDEN, "a write without the CSRF token");
    let csrf = browser.csrf_token().await;
    let created = browser.client.post(&url).header("x-csrf-token", csrf).json(&create).send().await.unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let body: serde_json::Value = created.json().await.unwrap();
    assert_eq!(body["data"]["user_id"], alice_id.as_str());
    let users = browser.client.get(browser.url("/v0/users")).send().await.unwrap();
    assert_eq!(users.status(), StatusCode::FORBIDDEN, "unprivileged");
}

#[tokio::test]
async fn a_disabled_user_is_refused() {
    let Some(env) = Env::start().await else { return };
    env.app.user("bob@example.com", "unprivileged").await;
    env.app.domain.set_user_disabled(&ferrozone_domain::Principal::operator(), "bob@example.com", true).await.unwrap();
    for provider in ["idp", "auto"] {
        let browser = env.browser();
        let page = browser.sign_in(provider, "bob@example.com", "/").await;
        assert_eq!(page.status, StatusCode::FORBIDDEN, "{}", page.body);
        assert!(page.body.contains("disabled"), "{}", page.body);
        assert_eq!(browser.get("/").await.url.path(), "/sign_in", "no session");
    }
    let bob = env.app.domain.find_user("bob@example.com").await.unwrap();
    assert_eq!(bob.last_signed_in_at, None);
}

#[tokio::test]
async fn the_email_may_come_in_the_id_token_itself() {
    let Some(env) = Env::with(true).await else { return };
    env.app.user("carol@example.com", "unprivileged").await;
    env.signed_in("idp", "carol@example.com").await;
}

#[tokio::test]
async fn an_email_the_provider_has_not_verified_or_no_email_is_refused() {
    for email_in_id_token in [false, true] {
        let Some(env) = Env::with(email_in_id_token).await else { return };
        let before = env.app.counts().await;
        for email in ["unverified+dave@example.com", "noemail+erin@example.com"] {
            let page = env.browser().sign_in("auto", email, "/").await;
            assert_eq!(page.status, StatusCode::FORBIDDEN, "{email}: {}", page.body);
        }
        assert_eq!(env.app.counts().await, before, "nobody created");
    }
}

#[tokio::test]
async fn return_to_is_followed_only_to_a_local_path() {
    let Some(env) = Env::start().await else { return };
    env.app.user("frank@example.com", "unprivileged").await;
    let local = env.browser().sign_in("idp", "frank@example.com", "/?tab=devices").await;
    assert_eq!((local.status, local.url.path(), local.url.query()), (StatusCode::OK, "/", Some("tab=devices")));
    for evil in ["//evil.example", "https://evil.example/", "/\\evil.example"] {
        let page = env.browser().sign_in("idp", "frank@example.com", evil).await;
        assert_eq!(page.status, StatusCode::OK, "{evil}");
        assert_eq!(page.url.as_str(), format!("{}/", env.base), "{evil}");
    }
}

#[tokio::test]
async fn a_provider_that_is_down_is_a_clear_503_and_an_unknown_one_is_404() {
    let Some(env) = Env::start().await else { return };
    env.idp.outage(true).await;
    let browser = env.browser();
    let page = browser.get("/auth/oidc/idp").await;
    assert_eq!(page.status, StatusCode::SERVICE_UNAVAILABLE, "{}", page.body);
    assert!(page.body.contains("cannot be reached"), "{}", page.body);
    env.idp.outage(false).await;
    env.app.user("grace@example.com", "unprivileged").await;
    // `idp`'s failure is kept for a few seconds (ferrozone_oidc::RETRY_AFTER_FAILURE);
    // `auto`, on the same provider, was not tried during the outage.
    env.signed_in("auto", "grace@example.com").await;

    assert_eq!(browser.get("/auth/oidc/nope").await.status, StatusCode::NOT_FOUND);
    assert_eq!(browser.get("/auth/oidc/nope/callback/?state=x&code=y").await.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn refused_sign_ins_are_recorded_once_the_provider_answered() {
    use crate::audit::{assert_refused, recorded, refused_sign_ins};
    let Some(env) = Env::start().await else { return };
    let (bob, _) = env.app.user("bob@example.com", "unprivileged").await;
    env.app.domain.set_user_disabled(&ferrozone_domain::Principal::operator(), "bob@example.com", true).await.unwrap();
    for (provider, email) in
        [("idp", "stranger@example.com"), ("idp", "bob@example.com"), ("auto", "unverified+dave@example.com")]
    {
        let page = env.browser().sign_in(provider, email, "/").await;
        assert_eq!(page.status, StatusCode::FORBIDDEN, "{email}: {}", page.body);
    }
    // A callback anyone can send, for no flow of this browser, is not recorded.
    let page = env.browser().get("/auth/oidc/idp/callback?error=access_denied&state=forged").await;
    assert_eq!(page.status, StatusCode::FORBIDDEN, "{}", page.body);

    let events = refused_sign_ins(&env.app).await;
    assert_eq!(events.len(), 3, "{events:?}");
    assert_refused(&events[2], None, "oidc", "unknown_account");
    assert_eq!(
        (recorded(&events[2], "account"), recorded(&events[2], "provider")),
        (json!("stranger@example.com"), json!("idp"))
    );
    assert_refused(&events[1], Some(&bob), "oidc", "disabled");
    assert_eq!(recorded(&events[1], "account"), serde_json::Value::Null);
    assert_refused(&events[0], None, "oidc", "email_not_verified");
    assert_eq!(
        (recorded(&events[0], "account"), recorded(&events[0], "provider")),
        (serde_json::Value::Null, json!("auto"))
    );
}
