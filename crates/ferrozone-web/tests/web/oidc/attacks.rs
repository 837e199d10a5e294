//! Callbacks that must not sign anyone in: a wrong or replayed state, a flow started in
//! another browser, ID tokens with a wrong nonce, for another client or with a broken
//! signature, and a provider's error.

use reqwest::StatusCode;

use super::{Browser, Env};

/// Asserts that `browser` has no session.
async fn signed_out(browser: &Browser) {
    assert_eq!(browser.get("/").await.url.path(), "/sign_in", "no session");
}

#[tokio::test]
async fn a_wrong_state_is_refused() {
    let Some(env) = Env::start().await else { return };
    env.app.user("alice@example.com", "unprivileged").await;
    let browser = env.browser();
    let mut callback = browser.callback_url("idp", "alice@example.com").await;
    let pairs: Vec<(String, String)> = callback
        .query_pairs()
        .map(|(k, v)| {
            let v = if k == "state" { format!("{v}x") } else { v.into_owned() };
            (k.into_owned(), v)
        })
        .collect();
    callback.query_pairs_mut().clear().extend_pairs(pairs);
    let page = browser.get(callback.as_str()).await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST, "{}", page.body);
    signed_out(&browser).await;
}

#[tokio::test]
async fn a_callback_works_once() {
    let Some(env) = Env::start().await else { return };
    env.app.user("alice@example.com", "unprivileged").await;
    let browser = env.browser();
    let callback = browser.callback_url("idp", "alice@example.com").await;
    assert_eq!(browser.get(callback.as_str()).await.status, StatusCode::OK);
    let again = env.browser();
    let replay = again.get(callback.as_str()).await;
    assert_eq!(replay.status, StatusCode::BAD_REQUEST, "{}", replay.body);
    // Even the browser that started it, with its flow cookie, cannot use it twice.
    let again = browser.get(callback.as_str()).await;
    assert_eq!(again.status, StatusCode::BAD_REQUEST, "{}", again.body);
}

#[tokio::test]
async fn a_callback_is_refused_in_a_browser_without_the_flow_or_with_another_one() {
    let Some(env) = Env::start().await else { return };
    env.app.user("alice@example.com", "unprivileged").await;
    env.app.user("mallory@example.com", "unprivileged").await;
    // Mallory's own callback, pushed to Alice's browser (login CSRF): Alice has no flow…
    let mallory = env.browser();
    let planted = mallory.callback_url("idp", "mallory@example.com").await;
    let alice = env.browser();
    assert_eq!(alice.get(planted.as_str()).await.status, StatusCode::BAD_REQUEST);
    signed_out(&alice).await;
    // …or a flow of her own, which is not this one.
    let _own = alice.callback_url("idp", "alice@example.com").await;
    assert_eq!(alice.get(planted.as_str()).await.status, StatusCode::BAD_REQUEST);
    signed_out(&alice).await;
    // The refusals did not use the flow up: its own browser still finishes it.
    assert_eq!(mallory.get(planted.as_str()).await.status, StatusCode::OK);
}

#[tokio::test]
async fn id_tokens_with_a_wrong_nonce_audience_issuer_expiry_or_signature_are_refused() {
    for email_in_id_token in [false, true] {
        let Some(env) = Env::with(email_in_id_token).await else { return };
        env.app.user("alice@example.com", "unprivileged").await;
        for mode in ["nonce", "audience", "issuer", "expired", "signature"] {
            env.idp.tamper(mode).await;
            let browser = env.browser();
            let page = browser.sign_in("idp", "alice@example.com", "/").await;
            assert_eq!(page.status, StatusCode::UNAUTHORIZED, "{mode}: {}", page.body);
            assert!(page.body.contains("could not be verified"), "{}", page.body);
            signed_out(&browser).await;
        }
        let alice = env.app.domain.find_user("alice@example.com").await.unwrap();
        assert_eq!(alice.last_signed_in_at, None);
        assert!(env.app.domain.oidc_connections().await.unwrap().is_empty());
        // Untampered, the same sign-in works: the refusals were the checks'.
        env.signed_in("idp", "alice@example.com").await;
    }
}

#[tokio::test]
async fn a_callback_naming_another_issuer_is_refused() {
    let Some(env) = Env::start().await else { return };
    env.app.user("alice@example.com", "unprivileged").await;
    let browser = env.browser();
    let callback = browser.callback_url("idp", "alice@example.com").await;
    assert!(callback.query_pairs().any(|(k, v)| k == "iss" && v == env.idp.issuer), "{callback}");
    let mut mixed_up = callback.clone();
    let pairs: Vec<(String, String)> = callback
        .query_pairs()
        .map(|(k, v)| {
            let v = if k == "iss" { "https://impostor.example".to_owned() } else { v.into_owned() };
            (k.into_owned(), v)
        })
        .collect();
    mixed_up.query_pairs_mut().clear().extend_pairs(pairs);
    let page = browser.get(mixed_up.as_str()).await;
    assert_eq!(page.status, StatusCode::UNAUTHORIZED, "{}", page.body);
    signed_out(&browser).await;
}

#[tokio::test]
async fn a_provider_error_is_a_clear_page() {
    let Some(env) = Env::start().await else { return };
    let browser = env.browser();
    let callback = browser.callback_url("idp", "alice@example.com").await;
    let state = callback.query_pairs().find(|(k, _)| k == "state").unwrap().1.into_owned();
    let mut refused = callback.clone();
    refused.query_pairs_mut().clear().append_pair("error", "access_denied").append_pair("state", &state);
    let page = browser.get(refused.as_str()).await;
    assert_eq!(page.status, StatusCode::FORBIDDEN, "{}", page.body);
    assert!(page.body.contains("access_denied"), "{}", page.body);
    let mut odd = callback.clone();
    odd.query_pairs_mut().clear().append_pair("error", "<script>");
    let page = browser.get(odd.as_str()).await;
    assert!(!page.body.contains("<script>") && page.status == StatusCode::FORBIDDEN, "{}", page.body);
    // The error ended the flow.
    assert_eq!(browser.get(callback.as_str()).await.status, StatusCode::BAD_REQUEST);
}
