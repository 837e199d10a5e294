//! Issue 35: invitations and sign-in links in the browser's pages (docs/web.md,
//! "Invitations and sign-in links"; docs/design/invitations.md). The console invites and
//! shows the link once; the link's page uses nothing until its form is posted, with the
//! sign-in form's token; the new password lands the person on "Add a device"; a used,
//! revoked or expired link is a 410 page. Magic links: offered only with email and
//! password sign-in on, the same answer for any email, throttled, single use.

use axum::http::StatusCode;
use ferrozone_domain::{Principal, Timestamp};
use serde_json::json;

use crate::helpers::TestApp;
use crate::signin::{attribute_after, password_user, text, Browser, PASSWORD};

const ADMIN: &str = "boss@example.com";
const NEW_PASSWORD: &str = "a brand new password";

async fn console(app: &TestApp) -> Browser {
    password_user(app, ADMIN, "admin").await;
    let mut browser = Browser::new(app);
    browser.sign_in(ADMIN, PASSWORD, "/").await.expect_status(StatusCode::SEE_OTHER);
    browser
}

/// Invites `email` through the console's form; returns the link's path.
async fn invite(browser: &mut Browser, email: &str) -> String {
    let csrf = browser.csrf_token().await;
    let fields = [("csrf_token", csrf.as_str()), ("email", email), ("role", "unprivileged"), ("expires_in_days", "1")];
    let res = browser.post_form("/admin/invitations", &fields).await;
    let html = text(res.expect_status(StatusCode::CREATED));
    assert!(html.contains("Copy this link now"), "{html}");
    let url = attribute_after(&html, "id=\"invitation-link\" value=\"");
    url.strip_prefix("http://localhost:13000").expect("the external URL's link").to_owned()
}

#[tokio::test]
async fn an_invited_person_sets_a_password_and_lands_on_add_a_device() {
    let app = TestApp::new().await;
    let mut admin = console(&app).await;
    let link = invite(&mut admin, "ada@example.com").await;
    assert!(link.starts_with("/sign_in/link/"), "{link}");

    let mut ada = Browser::on(app.router.clone(), "192.0.2.30:1");
    for _ in 0..2 {
        let page = text(ada.navigate(&link).await.expect_status(StatusCode::OK));
        assert!(page.contains("You are invited to this VPN as <strong>ada@example.com</strong>"), "{page}");
    }
    let token = ada.form_cookie.clone().expect("the form's cookie");
    let mismatch = [("csrf_token", token.as_str()), ("password", NEW_PASSWORD), ("password_confirmation", "other")];
    let refused = text(ada.post_form(&link, &mismatch).await.expect_status(StatusCode::UNPROCESSABLE_ENTITY));
    assert!(
        refused.contains("id=\"link-confirmation-error\">Password confirmation does not match password"),
        "{refused}"
    );
    assert!(ada.session.is_none());

    let token = ada.form_cookie.clone().expect("a fresh form cookie");
    let fields = [("csrf_token", token.as_str()), ("password", NEW_PASSWORD), ("password_confirmation", NEW_PASSWORD)];
    let done = ada.post_form(&link, &fields).await;
    done.expect_status(StatusCode::SEE_OTHER);
    assert_eq!(done.header("location"), Some("/devices/new"));
    assert!(ada.session.is_some(), "signed in");
    ada.get("/devices/new").await.expect_status(StatusCode::OK);
    assert_eq!(app.show_user("ada@example.com").await["last_signed_in_method"], json!("invitation"));

    let again = text(ada.navigate(&link).await.expect_status(StatusCode::GONE));
    assert!(again.contains("This link no longer works"), "{again}");
    let mut other = Browser::on(app.router.clone(), "192.0.2.31:1");
    other.sign_in("ada@example.com", NEW_PASSWORD, "/").await.expect_status(StatusCode::SEE_OTHER);
    let list = text(admin.get("/admin/invitations").await.expect_status(StatusCode::OK));
    assert!(list.contains("<span class=\"badge\">Accepted</span>"), "{list}");
    assert!(list.contains("Not emailed"), "{list}");
}

#[tokio::test]
async fn a_link_is_used_only_with_the_form_token_and_stops_when_revoked() {
    let app = TestApp::new().await;
    let mut admin = console(&app).await;
    let link = invite(&mut admin, "grace@example.com").await;
    let mut grace = Browser::on(app.router.clone(), "192.0.2.32:1");
    grace.navigate(&link).await.expect_status(StatusCode::OK);
    // A form posted from elsewhere (no token of this browser's form): nothing is used.
    let forged = [("csrf_token", "forged"), ("password", NEW_PASSWORD), ("password_confirmation", NEW_PASSWORD)];
    let page = text(grace.post_form(&link, &forged).await.expect_status(StatusCode::FORBIDDEN));
    assert!(page.contains("This sign-in form has expired"), "{page}");
    assert!(grace.session.is_none());
    grace.navigate(&link).await.expect_status(StatusCode::OK);

    let list = text(admin.get("/admin/invitations").await.expect_status(StatusCode::OK));
    let id = attribute_after(&list, "<form method=\"post\" action=\"/admin/invitations/").replace("/revoke", "");
    let csrf = admin.csrf_token().await;
    let revoked = admin.post_form(&format!("/admin/invitations/{id}/revoke"), &[("csrf_token", &csrf)]).await;
    assert_eq!(revoked.expect_status(StatusCode::SEE_OTHER).header("location"), Some("/admin/invitations?revoked=1"));
    let list = text(admin.get("/admin/invitations?revoked=1").await.expect_status(StatusCode::OK));
    assert!(list.contains("its link no longer works") && list.contains("badge bad\">Revoked"), "{list}");
    grace.navigate(&link).await.expect_status(StatusCode::GONE);
    grace.navigate("/sign_in/link/never-issued").await.expect_status(StatusCode::GONE);
}

#[tokio::test]
async fn the_console_shows_the_api_messages_at_their_fields() {
    let app = TestApp::new().await;
    let mut admin = console(&app).await;
    let page = text(admin.get("/admin/invitations").await.expect_status(StatusCode::OK));
    assert!(page.contains("This server sends no email"), "no SMTP server: {page}");
    let csrf = admin.csrf_token().await;
    let res = admin.post_form("/admin/invitations", &[("csrf_token", &csrf), ("email", "not an email")]).await;
    let page = text(res.expect_status(StatusCode::UNPROCESSABLE_ENTITY));
    assert!(page.contains("id=\"invite-email-error\">Email is invalid email address"), "{page}");
    assert!(page.contains("value=\"not an email\""), "the value is kept");
    let res = admin.post_form("/admin/invitations/not-a-uuid/revoke", &[("csrf_token", &csrf)]).await;
    res.expect_status(StatusCode::NOT_FOUND);
    let mut user = Browser::on(app.router.clone(), "192.0.2.33:1");
    password_user(&app, "pat@example.com", "unprivileged").await;
    user.sign_in("pat@example.com", PASSWORD, "/").await.expect_status(StatusCode::SEE_OTHER);
    user.get("/admin/invitations").await.expect_status(StatusCode::FORBIDDEN);
}

/// The link of the newest message in the outbox, read as the mail worker reads it.
async fn emailed_link(app: &TestApp) -> String {
    let outbox = app.domain.mail_outbox();
    let now = Timestamp::now();
    let leases = outbox.claim(uuid::Uuid::new_v4(), now, now, 100).await.expect("claim");
    let newest = leases.iter().max_by_key(|l| l.inserted_at).expect("a queued message");
    let text = outbox.open(newest).expect("it opens").text;
    let start = text.find("/sign_in/link/").expect("a link in the message");
    text[start..].split_whitespace().next().unwrap().to_owned()
}

#[tokio::test]
async fn a_magic_link_signs_in_once_and_the_request_tells_nothing() {
    let app = TestApp::with_settings(|s| s.email_enabled = true).await;
    password_user(&app, "pat@example.com", "unprivileged").await;
    let mut pat = Browser::on(app.router.clone(), "192.0.2.40:1");
    let sign_in = text(pat.get("/sign_in").await.expect_status(StatusCode::OK));
    assert!(sign_in.contains("<a href=\"/sign_in/email\">Email me a sign-in link instead</a>"), "{sign_in}");
    for email in ["nobody@example.com", "pat@example.com"] {
        pat.get("/sign_in/email").await.expect_status(StatusCode::OK);
        let token = pat.form_cookie.clone().unwrap();
        let res = pat.post_form("/sign_in/email", &[("csrf_token", &token), ("email", email)]).await;
        let page = text(res.expect_status(StatusCode::OK));
        assert!(page.contains("If an account can sign in with this email, a sign-in link is on its way"), "{page}");
    }
    let link = emailed_link(&app).await;
    let page = text(pat.navigate(&link).await.expect_status(StatusCode::OK));
    assert!(page.contains("Sign in as <strong>pat@example.com</strong>"), "{page}");
    let token = pat.form_cookie.clone().unwrap();
    let res = pat.post_form(&link, &[("csrf_token", &token)]).await;
    assert_eq!(res.expect_status(StatusCode::SEE_OTHER).header("location"), Some("/"));
    assert!(pat.session.is_some());
    assert_eq!(app.show_user("pat@example.com").await["last_signed_in_method"], json!("magic_link"));
    pat.navigate(&link).await.expect_status(StatusCode::GONE);
}

#[tokio::test]
async fn magic_link_requests_share_the_sign_in_budget_and_stop_at_three_live_links() {
    let app = TestApp::with_settings(|s| s.email_enabled = true).await;
    password_user(&app, "pat@example.com", "unprivileged").await;
    let mut pat = Browser::on(app.router.clone(), "192.0.2.41:1");
    let mut statuses = Vec::new();
    for _ in 0..7 {
        pat.get("/sign_in/email").await.expect_status(StatusCode::OK);
        let token = pat.form_cookie.clone().unwrap();
        let res = pat.post_form("/sign_in/email", &[("csrf_token", &token), ("email", "pat@example.com")]).await;
        if res.status == StatusCode::TOO_MANY_REQUESTS {
            assert!(res.header("retry-after").is_some());
        }
        statuses.push(res.status.as_u16());
    }
    let accepted = statuses.iter().filter(|s| **s == 200).count();
    assert!(accepted >= 3 && statuses.last() == Some(&429), "{statuses:?}");
    let live = app.domain.mail_outbox();
    let now = Timestamp::now();
    let queued = live.claim(uuid::Uuid::new_v4(), now, now, 100).await.unwrap();
    assert_eq!(queued.len(), 3, "at most three live links: the rest sent nothing");
}

#[tokio::test]
async fn magic_links_are_off_without_email_or_password_sign_in() {
    let app = TestApp::new().await;
    let mut browser = Browser::new(&app);
    let page = text(browser.get("/sign_in").await.expect_status(StatusCode::OK));
    assert!(!page.contains("/sign_in/email"), "{page}");
    browser.get("/sign_in/email").await.expect_status(StatusCode::NOT_FOUND);

    let app = TestApp::with_settings(|s| s.email_enabled = true).await;
    let body = json!({"configuration": {"local_auth_enabled": false}});
    app.patch("/v0/configuration", &app.admin, body).await.expect_status(StatusCode::OK);
    let mut browser = Browser::new(&app);
    let page = text(browser.get("/sign_in").await.expect_status(StatusCode::OK));
    assert!(!page.contains("/sign_in/email"), "{page}");
    browser.get("/sign_in/email").await.expect_status(StatusCode::NOT_FOUND);
    assert!(app.domain.list_invitations(&Principal::operator()).await.unwrap().is_empty());
}
