//! The provider lists of `/v0/configuration`: replaced whole by a PATCH, checked as at
//! start-up, stored sealed, and in effect on the sign-in pages of every process without
//! restart.

use std::time::Duration;

use axum::http::{Method, StatusCode};
use ferrozone_domain::configuration::Fixed;
use serde_json::{json, Value};
use tokio::time::Instant;

const PATH: &str = "/v0/configuration";
use crate::helpers::{json_request, send, TestApp};
use crate::signin::{text, Browser};

fn corp() -> Value {
    json!({"id": "corp", "label": "Corp", "client_id": "c", "client_secret": "CLIENT-SECRET",
           "discovery_document_uri": "http://127.0.0.1:9/.well-known/openid-configuration",
           "auto_create_users": false})
}

/// Whether the sign-in page `router` serves offers the `corp` provider.
async fn offers_corp(router: axum::Router) -> bool {
    let page = Browser::on(router, "192.0.2.1:1").get("/sign_in").await;
    page.expect_status(StatusCode::OK);
    text(&page).contains("/auth/oidc/corp")
}

#[tokio::test]
async fn a_patched_list_is_shown_stored_sealed_and_offered_without_restart() {
    let app = TestApp::new().await;
    let shown = app.get(PATH, &app.admin).await;
    assert_eq!(
        (&shown.data()["openid_connect_providers"], &shown.data()["saml_identity_providers"]),
        (&json!([]), &json!([]))
    );
    assert!(!offers_corp(app.router.clone()).await);
    let (other, other_domain) = app.second_instance().await;
    let watcher = tokio::spawn(async move { other_domain.watch_configuration().await });

    let res = app.patch(PATH, &app.admin, json!({"configuration": {"openid_connect_providers": [corp()]}})).await;
    res.expect_status(StatusCode::OK);
    assert_eq!(res.data()["openid_connect_providers"], json!([corp()]), "as sent, as in Firezone");
    assert_eq!(app.get(PATH, &app.admin).await.data(), res.data());
    let row = app.store.setting("configuration.openid_connect_providers").await.unwrap().unwrap();
    assert!(!String::from_utf8_lossy(&row).contains("CLIENT-SECRET"), "stored sealed");
    assert!(offers_corp(app.router.clone()).await, "here, at once");
    let deadline = Instant::now() + Duration::from_secs(1);
    while !offers_corp(other.clone()).await {
        assert!(Instant::now() < deadline, "the other process did not offer it within 1 s");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    app.patch(PATH, &app.admin, json!({"configuration": {"openid_connect_providers": []}}))
        .await
        .expect_status(StatusCode::OK);
    assert!(!offers_corp(app.router.clone()).await);
    let start = Browser::on(app.router.clone(), "192.0.2.1:1").get("/auth/oidc/corp").await;
    assert_eq!(start.status, StatusCode::NOT_FOUND, "no longer a provider");
    watcher.abort();
}

#[tokio::test]
async fn bad_lists_get_the_start_up_checks_messages_and_change_nothing() {
    let app = TestApp::new().await;
    let before = app.get(PATH, &app.admin).await.data().clone();
    let mut no_openid = corp();
    no_openid["scope"] = json!("email");
    let body = json!({"configuration": {"openid_connect_providers": [no_openid], "default_client_mtu": 1400}});
    app.patch(PATH, &app.admin, body).await.expect_errors(json!({
        "openid_connect_providers": ["provider `corp`: `scope` must include `openid`"],
    }));
    app.patch(PATH, &app.admin, json!({"configuration": {"saml_identity_providers": {"x": {}}}}))
        .await
        .expect_errors(json!({"saml_identity_providers": ["must be an array"]}));
    let saml = json!({"id": "corp", "metadata": "<md/>", "auto_create_users": false, "sign_requests": false});
    let body = json!({"configuration": {"openid_connect_providers": [corp()], "saml_identity_providers": [saml]}});
    app.patch(PATH, &app.admin, body).await.expect_errors(json!({
        "saml_identity_providers": ["provider `corp`: `id` is used by another provider"],
    }));
    let saml = json!({"id": "idp", "metadata": "<md/>", "auto_create_users": false, "sign_requests": false});
    let res = app.patch(PATH, &app.admin, json!({"configuration": {"saml_identity_providers": [saml]}})).await;
    assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY);
    let message = res.body["errors"]["saml_identity_providers"][0].as_str().unwrap().to_owned();
    assert!(message.starts_with("provider `idp`: `metadata`"), "{message}");
    assert_eq!(app.get(PATH, &app.admin).await.data(), &before);
}

#[tokio::test]
async fn a_list_the_environment_sets_is_shown_and_cannot_be_changed() {
    let app = TestApp::with_settings(|s| {
        s.providers.oidc = vec![corp()];
        s.fixed = Fixed::new([("openid_connect_providers".to_owned(), "OPENID_CONNECT_PROVIDERS".to_owned())]);
    })
    .await;
    app.patch(PATH, &app.admin, json!({"configuration": {"openid_connect_providers": []}}))
        .await
        .expect_errors(json!({"openid_connect_providers":
            ["cannot be changed; it is overridden by OPENID_CONNECT_PROVIDERS environment variable"]}));
    assert_eq!(app.get(PATH, &app.admin).await.data()["openid_connect_providers"], json!([corp()]));
    let (router, _) = app.second_instance().await;
    let res = send(router, json_request(Method::GET, PATH, Some(&app.admin), None)).await;
    assert_eq!(res.data()["openid_connect_providers"], json!([corp()]));
}
