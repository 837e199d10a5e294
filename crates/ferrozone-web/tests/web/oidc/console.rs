//! Issue 35: a provider saved in the console signs people in with the real provider. The
//! entry is made on `/admin/providers`, then edited with a blank client secret: the next
//! sign-in still exchanges its code, so the stored secret was kept.

use reqwest::StatusCode;

use super::{Env, Page, CLIENT_ID, SECRET};

/// Posts the console's provider form `fields` (with the session's CSRF token) to `path`.
async fn post(browser: &super::Browser, path: &str, token: &str, fields: &[(&str, &str)]) -> Page {
    let mut form = fields.to_vec();
    form.push(("csrf_token", token));
    let res = browser.client.post(browser.url(path)).form(&form).send().await.unwrap();
    let (url, status) = (res.url().clone(), res.status());
    let location = res.headers().get("location").map(|l| l.to_str().unwrap().to_owned());
    let body = res.text().await.unwrap();
    Page { url, status, body: location.unwrap_or(body) }
}

#[tokio::test]
async fn a_provider_saved_in_the_console_signs_people_in_and_keeps_its_secret() {
    let Some(env) = Env::start().await else { return };
    env.app.user("boss@example.com", "admin").await;
    env.app.user("pat@example.com", "unprivileged").await;
    let admin = env.signed_in("idp", "boss@example.com").await;
    let token = admin.csrf_token().await;
    let discovery = env.idp.discovery_uri();
    let fields = |label: &'static str, secret: &'static str| {
        vec![
            ("id", "idp"),
            ("label", label),
            ("discovery_document_uri", discovery.as_str()),
            ("client_id", CLIENT_ID),
            ("client_secret", secret),
            ("scope", "openid email profile"),
            ("allow_admins", "on"),
            ("consent_prompt", "on"),
        ]
    };
    let saved = post(&admin, "/admin/providers/oidc/new", &token, &fields("Console IdP", SECRET)).await;
    assert_eq!((saved.status, saved.body.as_str()), (StatusCode::SEE_OTHER, "/admin/providers?done=saved"));
    let edited = post(&admin, "/admin/providers/oidc/idp", &token, &fields("Company sign-in", "")).await;
    assert_eq!((edited.status, edited.body.as_str()), (StatusCode::SEE_OTHER, "/admin/providers?done=saved"));

    let page = env.browser().get("/sign_in").await;
    assert!(page.body.contains("Company sign-in") && !page.body.contains("Test IdP"), "the stored list is in effect");
    let user = env.signed_in("idp", "pat@example.com").await;
    let home = user.get("/").await;
    assert!(home.body.contains("pat@example.com"), "signed in through the console's entry: {}", home.body);
}
