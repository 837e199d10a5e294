//! The account page (`/account`, docs/web.md): who the user is, changing the password,
//! personal API tokens, signing out everywhere; each form refused without the session's
//! CSRF token. `/v0/me` is in `account/me.rs`.

mod me;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};

use crate::helpers::{TestApp, TestResponse};
use crate::signin::{attribute_after, password_user, text, Browser, PASSWORD};

pub const NEW_PASSWORD: &str = "a brand new passphrase";

/// A browser signed in as a new password user `email`.
pub async fn signed_in(app: &TestApp, email: &str, role: &str) -> (String, Browser) {
    let id = password_user(app, email, role).await;
    (id, browser_of(app, email, PASSWORD).await)
}

/// A browser (from an address of its own) signed in as `email` with `password`.
pub async fn browser_of(app: &TestApp, email: &str, password: &str) -> Browser {
    let mut browser = Browser::new(app);
    browser.sign_in(email, password, "/").await.expect_status(StatusCode::SEE_OTHER);
    browser
}

/// The account page, which must be there.
async fn account_page(browser: &mut Browser) -> String {
    let page = browser.get("/account").await;
    page.expect_status(StatusCode::OK);
    text(&page)
}

/// Whether the browser's session still opens the account page (else it goes to sign in).
async fn signed_in_still(browser: &mut Browser) -> bool {
    let page = browser.get("/account").await;
    match page.status {
        StatusCode::OK => true,
        StatusCode::SEE_OTHER => {
            assert_eq!(page.header("location"), Some("/sign_in?return_to=%2Faccount"));
            false
        }
        other => panic!("unexpected {other}"),
    }
}

fn change(csrf: &str, current: &str, new: &str, confirmation: &str) -> Vec<(String, String)> {
    [("csrf_token", csrf), ("current_password", current), ("password", new), ("password_confirmation", confirmation)]
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .to_vec()
}

async fn post(browser: &mut Browser, path: &str, fields: &[(String, String)]) -> TestResponse {
    let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    browser.post_form(path, &fields).await
}

/// `GET /v0/devices` with a bearer token and no cookie.
async fn devices_with(app: &TestApp, token: &str) -> TestResponse {
    app.get("/v0/devices", token).await
}

#[tokio::test]
async fn the_page_says_who_the_user_is_and_every_form_carries_the_csrf_token() {
    let app = TestApp::new().await;
    let (_, mut browser) = signed_in(&app, "pat@example.com", "unprivileged").await;
    let html = account_page(&mut browser).await;
    let csrf = browser.csrf_token().await;
    for expected in [
        "<h1>Account</h1>",
        "<dd>pat@example.com</dd>",
        "<dd>User</dd>",
        " UTC</time>, with a password</dd>",
        "<dt>Member since</dt>",
        "action=\"/account/password\"",
        "action=\"/account/tokens\"",
        "action=\"/account/sign_out_everywhere\"",
        "<a href=\"/account/two_factor\">Two-factor sign-in</a>",
        "You have no API tokens.",
        "aria-current=\"page\">Account</a>",
    ] {
        assert!(html.contains(expected), "{expected} in {html}");
    }
    let forms = html.matches("<form method=\"post\"").count();
    let tokens = html.matches(&format!("name=\"csrf_token\" value=\"{csrf}\"")).count();
    assert_eq!((forms, tokens), (5, 5), "every form (the navigation's sign-out too) carries the token: {html}");
    assert!(!html.contains("<script"), "the page needs no script: {html}");

    let (_, mut admin) = signed_in(&app, "ada@example.com", "admin").await;
    assert!(account_page(&mut admin).await.contains("<dd>Administrator</dd>"));
}

#[tokio::test]
async fn a_visitor_without_a_session_signs_in_first() {
    let app = TestApp::new().await;
    let res = Browser::new(&app).get("/account").await;
    res.expect_status(StatusCode::SEE_OTHER);
    assert_eq!(res.header("location"), Some("/sign_in?return_to=%2Faccount"));
    let res = Browser::new(&app).post_form("/account/sign_out_everywhere", &[("csrf_token", "x")]).await;
    assert_eq!((res.status, res.header("location")), (StatusCode::SEE_OTHER, Some("/sign_in")));
}

#[tokio::test]
async fn a_new_password_ends_the_other_sessions_and_replaces_the_old_one() {
    let app = TestApp::new().await;
    let (_, mut here) = signed_in(&app, "pat@example.com", "unprivileged").await;
    let mut elsewhere = browser_of(&app, "pat@example.com", PASSWORD).await;
    let token = app.token("pat@example.com").await;
    let csrf = here.csrf_token().await;

    let done = post(&mut here, "/account/password", &change(&csrf, PASSWORD, NEW_PASSWORD, NEW_PASSWORD)).await;
    assert_eq!((done.status, done.header("location")), (StatusCode::SEE_OTHER, Some("/account?done=password")));
    let html = text(&here.get("/account?done=password").await);
    assert!(html.contains("<p class=\"notice\" role=\"status\">Password changed."), "{html}");
    assert!(!signed_in_still(&mut elsewhere).await, "the other session ended");
    devices_with(&app, &token).await.expect_status(StatusCode::OK);

    let mut old = Browser::new(&app);
    old.sign_in("pat@example.com", PASSWORD, "/").await.expect_status(StatusCode::UNAUTHORIZED);
    browser_of(&app, "pat@example.com", NEW_PASSWORD).await;
}

#[tokio::test]
async fn a_refused_change_says_why_under_each_field_and_changes_nothing() {
    let app = TestApp::new().await;
    let (_, mut browser) = signed_in(&app, "pat@example.com", "unprivileged").await;
    let mut elsewhere = browser_of(&app, "pat@example.com", PASSWORD).await;
    let csrf = browser.csrf_token().await;

    let res = post(&mut browser, "/account/password", &change(&csrf, "", "short", "other")).await;
    res.expect_status(StatusCode::UNPROCESSABLE_ENTITY);
    let html = text(&res);
    for expected in [
        "<p class=\"error\" role=\"alert\">The password was not changed.</p>",
        "<p class=\"error\" id=\"current-password-error\">Current password can&#39;t be blank.</p>",
        "<p class=\"error\" id=\"new-password-error\">New password should be at least 12 character(s).</p>",
        "<p class=\"error\" id=\"confirmation-error\">The confirmation does not match the new password.</p>",
        "aria-invalid=\"true\" aria-describedby=\"current-password-error\"",
    ] {
        assert!(html.contains(expected), "{expected} in {html}");
    }
    assert!(!html.contains("value=\"short\""), "passwords are never sent back: {html}");

    let res =
        post(&mut browser, "/account/password", &change(&csrf, "not my password", NEW_PASSWORD, NEW_PASSWORD)).await;
    res.expect_status(StatusCode::UNPROCESSABLE_ENTITY);
    assert!(text(&res).contains("Current password is not correct."));
    assert!(signed_in_still(&mut elsewhere).await, "nothing changed");
    browser_of(&app, "pat@example.com", PASSWORD).await;
}

#[tokio::test]
async fn wrong_current_passwords_count_as_failed_sign_ins() {
    let app = TestApp::new().await;
    let (_, mut browser) = signed_in(&app, "pat@example.com", "unprivileged").await;
    let csrf = browser.csrf_token().await;
    for _ in 0..5 {
        let guess = change(&csrf, "a wrong guess", NEW_PASSWORD, NEW_PASSWORD);
        post(&mut browser, "/account/password", &guess).await.expect_status(StatusCode::UNPROCESSABLE_ENTITY);
    }
    let right = change(&csrf, PASSWORD, NEW_PASSWORD, NEW_PASSWORD);
    let res = post(&mut browser, "/account/password", &right).await;
    res.expect_status(StatusCode::TOO_MANY_REQUESTS);
    assert!(res.header("retry-after").is_some());
    assert!(text(&res).contains("Too many wrong passwords for this account."));
    let mut other = Browser::new(&app);
    let sign_in = other.sign_in("pat@example.com", PASSWORD, "/").await;
    sign_in.expect_status(StatusCode::TOO_MANY_REQUESTS);
    assert!(signed_in_still(&mut browser).await, "the page's own session stays");
}

#[tokio::test]
async fn a_token_made_on_the_page_works_until_it_is_revoked() {
    let app = TestApp::new().await;
    let (_, mut browser) = signed_in(&app, "pat@example.com", "unprivileged").await;
    let csrf = browser.csrf_token().await;
    let fields = [("csrf_token", csrf.as_str()), ("name", " laptop script "), ("expires_in_days", "7")];
    let created = browser.post_form("/account/tokens", &fields).await;
    created.expect_status(StatusCode::OK);
    let html = text(&created);
    let secret = attribute_after(&html, "id=\"token-secret\" value=\"");
    assert!(secret.starts_with("fz_"), "{html}");
    assert!(html.contains("<strong>Copy this token now.</strong>") && html.contains("<strong>laptop script</strong>"));
    assert!(html.contains("data-copy=\"token-secret\"") && html.contains("/assets/account."), "{html}");
    devices_with(&app, &secret).await.expect_status(StatusCode::OK);

    let page = account_page(&mut browser).await;
    assert!(page.contains("<th scope=\"row\">laptop script</th>"), "{page}");
    assert!(!page.contains(&secret), "the secret is shown once");
    let revoke = attribute_after(&page, "<form method=\"post\" action=\"/account/tokens/");
    assert!(page.contains("aria-label=\"Revoke token laptop script\">Revoke</button>"), "{page}");
    let path = format!("/account/tokens/{revoke}");
    let done = browser.post_form(&path, &[("csrf_token", &csrf)]).await;
    assert_eq!((done.status, done.header("location")), (StatusCode::SEE_OTHER, Some("/account?done=token_revoked")));
    devices_with(&app, &secret).await.expect_auth_error("invalid_token");
    let page = text(&browser.get("/account?done=token_revoked").await);
    assert!(page.contains("Token revoked") && page.contains("You have no API tokens."), "{page}");
    browser.post_form(&path, &[("csrf_token", &csrf)]).await.expect_status(StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_refused_token_form_keeps_its_values_and_another_users_token_is_not_found() {
    let app = TestApp::new().await;
    let (_, mut browser) = signed_in(&app, "pat@example.com", "admin").await;
    let csrf = browser.csrf_token().await;
    let res =
        browser.post_form("/account/tokens", &[("csrf_token", &csrf), ("name", ""), ("expires_in_days", "9999")]).await;
    res.expect_status(StatusCode::UNPROCESSABLE_ENTITY);
    let html = text(&res);
    assert!(html.contains("Name can&#39;t be blank.") && html.contains("Expires in days must be between 1 and 365."));
    assert!(html.contains("name=\"expires_in_days\" value=\"9999\""), "{html}");
    let res = browser
        .post_form("/account/tokens", &[("csrf_token", &csrf), ("name", "ci"), ("expires_in_days", "soon")])
        .await;
    res.expect_status(StatusCode::UNPROCESSABLE_ENTITY);
    assert!(text(&res).contains("Expires in days is invalid."));

    let theirs = app.domain.list_tokens("admin@localhost").await.unwrap()[0].id;
    let path = format!("/account/tokens/{theirs}/revoke");
    browser.post_form(&path, &[("csrf_token", &csrf)]).await.expect_status(StatusCode::NOT_FOUND);
    devices_with(&app, &app.admin).await.expect_status(StatusCode::OK);
    for unknown in ["/account/tokens/nope/revoke", "/account/tokens/%FF/revoke"] {
        let res = browser.post_form(unknown, &[("csrf_token", &csrf)]).await;
        res.expect_status(StatusCode::NOT_FOUND);
        assert!(text(&res).contains("There is no such page."), "{unknown}");
    }
}

#[tokio::test]
async fn signing_out_everywhere_ends_every_session_of_the_user_only() {
    let app = TestApp::new().await;
    let (_, mut here) = signed_in(&app, "pat@example.com", "unprivileged").await;
    let mut elsewhere = browser_of(&app, "pat@example.com", PASSWORD).await;
    let (_, mut someone) = signed_in(&app, "sam@example.com", "unprivileged").await;
    let token = app.token("pat@example.com").await;
    let csrf = here.csrf_token().await;
    let secret = here.session.clone();

    let res = here.post_form("/account/sign_out_everywhere", &[("csrf_token", &csrf)]).await;
    assert_eq!((res.status, res.header("location")), (StatusCode::SEE_OTHER, Some("/sign_in")));
    assert!(here.session.is_none(), "the cookie is cleared");
    here.session = secret;
    assert!(!signed_in_still(&mut here).await && !signed_in_still(&mut elsewhere).await);
    assert!(signed_in_still(&mut someone).await, "another user's session stays");
    devices_with(&app, &token).await.expect_status(StatusCode::OK);
}

#[tokio::test]
async fn every_form_without_the_sessions_csrf_token_is_refused_and_changes_nothing() {
    let app = TestApp::new().await;
    let (_, mut browser) = signed_in(&app, "pat@example.com", "unprivileged").await;
    let mut elsewhere = browser_of(&app, "pat@example.com", PASSWORD).await;
    let csrf = browser.csrf_token().await;
    browser
        .post_form("/account/tokens", &[("csrf_token", &csrf), ("name", "kept")])
        .await
        .expect_status(StatusCode::OK);
    let page = account_page(&mut browser).await;
    let revoke = format!("/account/tokens/{}", attribute_after(&page, "action=\"/account/tokens/"));

    for forged in [None, Some("forged"), Some("")] {
        let with = |mut fields: Vec<(String, String)>| {
            fields.retain(|(k, _)| k != "csrf_token");
            fields.extend(forged.map(|f| ("csrf_token".to_owned(), f.to_owned())));
            fields
        };
        let password = with(change("", PASSWORD, NEW_PASSWORD, NEW_PASSWORD));
        let token = with(vec![("name".into(), "new".into())]);
        for (path, fields) in [
            ("/account/password", password),
            ("/account/tokens", token),
            (revoke.as_str(), with(Vec::new())),
            ("/account/sign_out_everywhere", with(Vec::new())),
        ] {
            let res = post(&mut browser, path, &fields).await;
            res.expect_status(StatusCode::FORBIDDEN);
            assert!(text(&res).contains("nothing was changed"), "{path}");
        }
    }
    let page = account_page(&mut browser).await;
    assert_eq!(page.matches("<th scope=\"row\">").count(), 1, "one token, still there: {page}");
    assert!(signed_in_still(&mut elsewhere).await);
    browser_of(&app, "pat@example.com", PASSWORD).await;
}

#[tokio::test]
async fn the_forms_answer_a_wrong_method_or_body_with_a_page() {
    let app = TestApp::new().await;
    let (_, mut browser) = signed_in(&app, "pat@example.com", "unprivileged").await;
    let res = browser.get("/account/password").await;
    res.expect_status(StatusCode::METHOD_NOT_ALLOWED);
    let req = Request::builder().method(Method::POST).uri("/account/tokens").header("content-type", "application/json");
    let res = browser.send(req, Body::from("{}")).await;
    res.expect_status(StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert!(text(&res).contains("Not a form"));
}

#[tokio::test]
async fn a_provider_user_reads_that_the_provider_manages_the_password() {
    let Some(env) = crate::oidc::Env::start().await else { return };
    let browser = env.signed_in("auto", "newcomer@example.com").await;
    let page = browser.get("/account").await;
    assert_eq!(page.status, reqwest::StatusCode::OK, "{}", page.body);
    assert!(page.body.contains(" UTC</time>, through Test IdP (open)</dd>"), "{}", page.body);
    assert!(page.body.contains("an identity provider, which manages your password"), "{}", page.body);
    assert!(!page.body.contains("action=\"/account/password\""), "no password form: {}", page.body);
}
