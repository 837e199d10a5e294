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

/// Test sign-in: the admin's browser runs the provider's flow; the page shows the email
/// and subject the provider proved and what signing in would do, and nobody is signed in.
#[tokio::test]
async fn test_sign_in_shows_what_the_provider_proved_and_signs_nobody_in() {
    let Some(env) = Env::start().await else { return };
    env.app.user("boss@example.com", "admin").await;
    let admin = env.signed_in("idp", "boss@example.com").await;
    let signed_in_before = env.app.domain.find_user("boss@example.com").await.unwrap().last_signed_in_at;

    // A link, as the sign-in page's: a form's POST may not be redirected to the provider.
    let request = admin.client.get(admin.url("/admin/providers/oidc/idp/test"));
    let page = match admin.walk(request, "boss@example.com", false).await {
        super::Walk::Done(page) => page,
        super::Walk::Held(url) => panic!("held at {url}"),
    };
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(
        page.body.contains("Test sign-in: Test IdP") && page.body.contains("Nobody was signed in by this test."),
        "{}",
        page.body
    );
    assert!(
        page.body.contains("<code>boss@example.com</code>") && page.body.contains("Subject (sub)"),
        "{}",
        page.body
    );
    assert!(page.body.contains("Signing in would sign boss@example.com in, an administrator."), "{}", page.body);
    let after = env.app.domain.find_user("boss@example.com").await.unwrap().last_signed_in_at;
    assert_eq!(after, signed_in_before, "the test signed nobody in");

    let unprivileged = env.browser();
    let refused = unprivileged.client.get(unprivileged.url("/admin/providers/oidc/idp/test")).send().await.unwrap();
    let location = refused.headers().get("location").map(|l| l.to_str().unwrap().to_owned()).unwrap_or_default();
    assert!(location.starts_with("/sign_in"), "no test without an admin session: {} {location}", refused.status());
}
