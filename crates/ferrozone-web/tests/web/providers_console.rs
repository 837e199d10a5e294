//! Issue 35: the console's identity providers. Added, edited and removed through the same
//! parser and checks as `PATCH /v0/configuration`, the client secret write-only, what to
//! paste into the provider shown, a list the environment sets read-only.

use axum::http::StatusCode;
use serde_json::json;

use crate::helpers::TestApp;
use crate::signin::{password_user, text, Browser, PASSWORD};

const ADMIN: &str = "boss@example.com";

async fn console(app: &TestApp) -> (Browser, String) {
    password_user(app, ADMIN, "admin").await;
    let mut browser = Browser::new(app);
    browser.sign_in(ADMIN, PASSWORD, "/").await.expect_status(StatusCode::SEE_OTHER);
    let token = browser.csrf_token().await;
    (browser, token)
}

/// The OpenID Connect form's fields with `secret` and `label`.
fn oidc<'a>(token: &'a str, id: &'a str, label: &'a str, secret: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("csrf_token", token),
        ("id", id),
        ("label", label),
        ("discovery_document_uri", "https://idp.example/.well-known/openid-configuration"),
        ("client_id", "ferrozone"),
        ("client_secret", secret),
        ("scope", ""),
        ("redirect_uri", ""),
        ("allow_admins", "on"),
        ("consent_prompt", "on"),
    ]
}

#[tokio::test]
async fn an_openid_connect_provider_is_added_edited_keeping_its_secret_and_removed() {
    let app = TestApp::new().await;
    let (mut browser, token) = console(&app).await;
    let html = text(browser.get("/admin/providers").await.expect_status(StatusCode::OK));
    assert!(html.contains("None yet: people sign in with a password."));
    let form = text(browser.get("/admin/providers/oidc/new").await.expect_status(StatusCode::OK));
    assert!(
        form.contains("<code class=\"paste\">http://localhost:13000/auth/oidc/&#60;id&#62;/callback/</code>"),
        "{form}"
    );

    let added = browser.post_form("/admin/providers/oidc/new", &oidc(&token, "corp", "Corp SSO", "S3CRET-4711")).await;
    assert_eq!(added.expect_status(StatusCode::SEE_OTHER).header("location"), Some("/admin/providers?done=saved"));
    let list = text(browser.get("/admin/providers?done=saved").await.expect_status(StatusCode::OK));
    assert!(list.contains("Corp SSO") && list.contains("http://localhost:13000/auth/oidc/corp/callback/"), "{list}");
    let stored = app.get("/v0/configuration", &app.admin).await.data()["openid_connect_providers"].clone();
    assert_eq!(stored[0]["client_secret"], "S3CRET-4711");
    assert_eq!((&stored[0]["auto_create_users"], &stored[0]["allow_admins"]), (&json!(false), &json!(true)));
    let sign_in = Browser::new(&app).get("/sign_in").await;
    assert!(text(&sign_in).contains("/auth/oidc/corp"), "offered at once");

    // Group settings made in the JSON, which the form does not show, survive its saving.
    let mut with_groups = stored.clone();
    with_groups[0]["groups_prefix"] = json!("vpn-");
    with_groups[0]["groups_allowed"] = json!(["vpn-eng"]);
    let body = json!({"configuration": {"openid_connect_providers": with_groups}});
    app.patch("/v0/configuration", &app.admin, body).await.expect_status(StatusCode::OK);

    let edit = text(browser.get("/admin/providers/oidc/corp").await.expect_status(StatusCode::OK));
    assert!(!edit.contains("S3CRET-4711"), "the secret is never shown");
    assert!(edit.contains("placeholder=\"stored\""));
    let saved = browser.post_form("/admin/providers/oidc/corp", &oidc(&token, "corp", "Corp", "")).await;
    saved.expect_status(StatusCode::SEE_OTHER);
    let stored = app.get("/v0/configuration", &app.admin).await.data()["openid_connect_providers"].clone();
    assert_eq!(
        (&stored[0]["label"], &stored[0]["client_secret"]),
        (&json!("Corp"), &json!("S3CRET-4711")),
        "a blank secret keeps it"
    );
    assert_eq!((&stored[0]["groups_prefix"], &stored[0]["groups_allowed"]), (&json!("vpn-"), &json!(["vpn-eng"])));

    let mut bad = oidc(&token, "bad id!", "Bad", "x");
    bad[4] = ("client_id", "");
    let refused = browser.post_form("/admin/providers/oidc/new", &bad).await;
    let html = text(refused.expect_status(StatusCode::UNPROCESSABLE_ENTITY));
    assert!(html.contains("role=\"alert\" id=\"provider-error\">"), "{html}");
    assert!(html.contains("id=\"provider-id\" name=\"id\" value=\"bad id!\" autocomplete=\"off\" aria-describedby=\"provider-id-hint\" aria-invalid=\"true\""), "{html}");
    assert_eq!(
        app.get("/v0/configuration", &app.admin).await.data()["openid_connect_providers"].as_array().unwrap().len(),
        1
    );

    let removed = browser.post_form("/admin/providers/oidc/corp/delete", &[("csrf_token", &token)]).await;
    assert_eq!(removed.expect_status(StatusCode::SEE_OTHER).header("location"), Some("/admin/providers?done=removed"));
    assert_eq!(app.get("/v0/configuration", &app.admin).await.data()["openid_connect_providers"], json!([]));
    browser.get("/admin/providers/oidc/corp").await.expect_status(StatusCode::NOT_FOUND);
    browser.get("/admin/providers/ldap/new").await.expect_status(StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn saml_metadata_is_checked_and_a_list_the_environment_sets_is_read_only() {
    let app = TestApp::new().await;
    let (mut browser, token) = console(&app).await;
    let form = text(browser.get("/admin/providers/saml/new").await.expect_status(StatusCode::OK));
    assert!(
        form.contains("/auth/saml/sp/consume/&#60;id&#62;") && form.contains("/auth/saml/sp/metadata/&#60;id&#62;"),
        "{form}"
    );
    let fields =
        [("csrf_token", token.as_str()), ("id", "okta"), ("metadata", "<not-metadata/>"), ("auto_create_users", "on")];
    let refused = browser.post_form("/admin/providers/saml/new", &fields).await;
    let html = text(refused.expect_status(StatusCode::UNPROCESSABLE_ENTITY));
    assert!(html.contains("id=\"provider-error\">") && html.contains("okta"), "{html}");
    assert_eq!(app.get("/v0/configuration", &app.admin).await.data()["saml_identity_providers"], json!([]));

    let fixed = TestApp::with_settings(|s| {
        s.fixed = ferrozone_domain::configuration::Fixed::new([(
            "openid_connect_providers".to_owned(),
            "OPENID_CONNECT_PROVIDERS".to_owned(),
        )]);
    })
    .await;
    let (mut browser, token) = console(&fixed).await;
    let html = text(browser.get("/admin/providers").await.expect_status(StatusCode::OK));
    assert!(
        html.contains("set by <code>OPENID_CONNECT_PROVIDERS</code>") && !html.contains("/admin/providers/oidc/new")
    );
    let form = text(browser.get("/admin/providers/oidc/new").await.expect_status(StatusCode::OK));
    assert!(form.contains("These providers are set by") && form.contains(" disabled"));
    let refused = browser.post_form("/admin/providers/oidc/new", &oidc(&token, "corp", "Corp", "x")).await;
    refused.expect_status(StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(fixed.get("/v0/configuration", &fixed.admin).await.data()["openid_connect_providers"], json!([]));
}
