//! The sign-in flows an unauthenticated browser makes Ferrozone store: capped per client
//! address, with a short `return_to` (docs/design/identity-providers.md, "Provider sign-in").

use std::sync::{Arc, Mutex};

use reqwest::StatusCode;

use super::Env;
use crate::helpers::flaky::{flaky, Failure, Switch};
use crate::helpers::TestApp;

/// Ferrozone with the test provider, at most `cap` flows per address, on a store that can
/// be made to fail; `None` when the test is skipped (see [`Env::start`]).
async fn env_with_cap(cap: u32) -> Option<(Env, Switch)> {
    let failing: Switch = Arc::new(Mutex::new(None));
    let switch = failing.clone();
    let app = TestApp::build(|s| s.sign_in_flows_per_address = cap, move |inner| flaky(inner, failing)).await;
    Some((Env::custom(false, app, |_| {}).await?, switch))
}

async fn start(env: &Env, provider: &str) -> reqwest::Response {
    let browser = env.browser();
    browser.client.get(browser.url(&format!("/auth/oidc/{provider}?return_to=/"))).send().await.unwrap()
}

#[tokio::test]
async fn starts_past_the_per_address_cap_store_nothing_and_answer_429() {
    let Some((env, failing)) = env_with_cap(3).await else { return };
    for _ in 0..3 {
        let res = start(&env, "idp").await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "to the provider");
        assert!(res.headers()["location"].to_str().unwrap().starts_with(&env.idp.issuer));
    }
    // From here on, storing a flow would be a 500: a 429 shows that nothing was written.
    *failing.lock().unwrap() = Some(("insert_sign_in_flow", Failure::Internal));
    for provider in ["idp", "auto", "idp"] {
        let res = start(&env, provider).await;
        assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS, "{provider}");
        assert_eq!(res.headers()["retry-after"], "600");
        assert!(res.headers().get("set-cookie").is_none(), "no flow cookie");
        assert!(res.text().await.unwrap().contains("Too many sign-ins"));
    }
}

#[tokio::test]
async fn sign_ins_under_the_cap_still_work() {
    let Some((env, _)) = env_with_cap(2).await else { return };
    env.app.user("alice@example.com", "unprivileged").await;
    env.signed_in("idp", "alice@example.com").await;
    env.signed_in("idp", "alice@example.com").await;
    let page = env.browser().sign_in("idp", "alice@example.com", "/").await;
    assert_eq!(page.status, StatusCode::TOO_MANY_REQUESTS, "the third in the window: {}", page.body);
}

#[tokio::test]
async fn a_return_to_longer_than_512_bytes_is_not_kept() {
    let Some(env) = Env::start().await else { return };
    env.app.user("alice@example.com", "unprivileged").await;
    let kept = format!("/?{}", "a".repeat(510));
    let page = env.browser().sign_in("idp", "alice@example.com", &kept).await;
    assert_eq!(page.url.as_str().strip_prefix(&env.base), Some(kept.as_str()), "512 bytes are kept");
    let long = format!("/?{}", "a".repeat(511));
    let page = env.browser().sign_in("idp", "alice@example.com", &long).await;
    assert_eq!(page.url.as_str().strip_prefix(&env.base), Some("/"), "513 are not");
}
