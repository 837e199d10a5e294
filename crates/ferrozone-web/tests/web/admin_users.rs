//! The console's user pages (docs/web.md, "Users"): the list, creating a user, a user's
//! page and its actions, deleting; an unprivileged user and a form without the CSRF token
//! are refused. The `/v0/users` paging and sessions routes are in `admin_users/api.rs`.

mod actions;
mod api;

use axum::http::StatusCode;
use ferrozone_domain::model::User;
use ferrozone_domain::{Role, Timestamp};

use crate::helpers::{TestApp, TestResponse};
use crate::signin::{password_user, text, Browser, PASSWORD};

/// A browser signed in as a new admin with a password; returns it, its CSRF token and id.
pub async fn admin_browser(app: &TestApp) -> (Browser, String, String) {
    let id = password_user(app, "boss@example.com", "admin").await;
    let mut browser = Browser::new(app);
    browser.sign_in("boss@example.com", PASSWORD, "/").await.expect_status(StatusCode::SEE_OTHER);
    let csrf = browser.csrf_token().await;
    (browser, csrf, id)
}

/// The HTML of a page that answered 200.
pub fn page(res: &TestResponse) -> String {
    res.expect_status(StatusCode::OK);
    text(res)
}

/// Where a redirect goes.
pub fn location(res: &TestResponse) -> &str {
    res.expect_status(StatusCode::SEE_OTHER);
    res.header("location").expect("a location")
}

/// Stores users `emails` with the same creation time, as a bulk import would.
pub async fn users_created_together(app: &TestApp, emails: &[&str]) -> Vec<User> {
    let now = Timestamp::now();
    let mut users = Vec::new();
    for email in emails {
        let user = User::new((*email).to_owned(), Role::Unprivileged, None, now);
        app.store.insert_user(&user).await.expect("user stored");
        users.push(user);
    }
    users
}

/// The emails the list page shows, in order.
fn listed_emails(html: &str) -> Vec<String> {
    html.split("<th scope=\"row\"><a href=\"/admin/users/")
        .skip(1)
        .map(|row| row.split_once("\">").unwrap().1.split('<').next().unwrap().to_owned())
        .collect()
}

/// The `href` of the list's "Next page" link, if any.
fn next_link(html: &str) -> Option<String> {
    let end = html.find("\" rel=\"next\"")?;
    let start = html[..end].rfind("href=\"")? + 6;
    Some(html[start..end].replace("&#38;", "&"))
}

#[tokio::test]
async fn the_list_shows_users_with_status_sign_in_and_device_count() {
    let app = TestApp::new().await;
    let (mut browser, _, _) = admin_browser(&app).await;
    let (id, _) = app.user("kept@example.com", "unprivileged").await;
    app.device(&id).await;
    app.device(&id).await;
    let (off, _) = app.user("off@example.com", "unprivileged").await;
    app.request(axum::http::Method::POST, &format!("/v0/users/{off}/disable"), Some(&app.admin), None)
        .await
        .expect_status(StatusCode::OK);

    let html = page(&browser.get("/admin/users").await);
    assert_eq!(listed_emails(&html), ["admin@localhost", "boss@example.com", "kept@example.com", "off@example.com"]);
    let row =
        |email: &str| html.split(&format!(">{email}</a>")).nth(1).unwrap().split("</tr>").next().unwrap().to_owned();
    assert!(row("kept@example.com").contains("<td class=\"num\">2</td>"), "{}", row("kept@example.com"));
    assert!(row("kept@example.com").contains("Active") && row("kept@example.com").contains("Never"));
    assert!(
        row("off@example.com").contains("Disabled</span> <span class=\"muted\">since "),
        "{}",
        row("off@example.com")
    );
    assert!(row("off@example.com").contains("Disabled by an administrator"));
    assert!(!row("kept@example.com").contains("Disabled by"));
    app.domain.set_user_disabled(&ferrozone_domain::Principal::operator(), "kept@example.com", true).await.unwrap();
    let html = page(&browser.get("/admin/users").await);
    assert!(html.split(">kept@example.com</a>").nth(1).unwrap().contains("Disabled from the command line"));
    assert!(row("boss@example.com").contains("just now</span> <span class=\"muted\">(password)"));
    assert!(row("admin@localhost").contains("<td>Admin</td>"));
    assert!(html.contains("href=\"/admin/users/new\""));
}

#[tokio::test]
async fn the_list_searches_emails_in_any_case_and_pages_stably() {
    let app = TestApp::new().await;
    let (mut browser, _, _) = admin_browser(&app).await;
    let emails: Vec<String> = (0..60).map(|i| format!("member{i:02}@corp.example")).collect();
    let together = users_created_together(&app, &emails.iter().map(String::as_str).collect::<Vec<_>>()).await;
    users_created_together(&app, &["100%_real@other.example"]).await;

    let html = page(&browser.get("/admin/users?q=CORP.Example").await);
    let first = listed_emails(&html);
    assert_eq!(first.len(), 50);
    let next = next_link(&html).expect("a next page");
    assert!(next.starts_with("/admin/users?q=CORP.Example&page_cursor="), "{next}");
    let html = page(&browser.get(&next).await);
    let second = listed_emails(&html);
    assert_eq!(second.len(), 10);
    assert!(next_link(&html).is_none() && html.contains(">First page</a>"));
    // Equal creation times: the id breaks the tie, no user is shown twice or skipped.
    let mut expected: Vec<&User> = together.iter().collect();
    expected.sort_by_key(|u| u.id);
    let shown: Vec<String> = first.into_iter().chain(second).collect();
    assert_eq!(shown, expected.iter().map(|u| u.email.clone()).collect::<Vec<_>>());

    // LIKE's own characters match themselves.
    assert_eq!(listed_emails(&page(&browser.get("/admin/users?q=%25_").await)), ["100%_real@other.example"]);
    let none = page(&browser.get("/admin/users?q=nobody").await);
    assert!(listed_emails(&none).is_empty() && none.contains("No user’s email contains “nobody”."), "{none}");
    // A malformed cursor shows the first page.
    assert_eq!(listed_emails(&page(&browser.get("/admin/users?page_cursor=%%%").await)).len(), 50);
}

#[tokio::test]
async fn creating_a_user_keeps_the_values_and_shows_the_domains_messages() {
    let app = TestApp::new().await;
    let (mut browser, csrf, _) = admin_browser(&app).await;
    let form = page(&browser.get("/admin/users/new").await);
    assert!(form.contains("name=\"csrf_token\" value=\"") && form.contains("<label for=\"new-email\">"));

    let sent = [
        ("csrf_token", csrf.as_str()),
        ("email", "new@example.com"),
        ("role", "admin"),
        ("password", "short"),
        ("password_confirmation", "other"),
    ];
    let res = browser.post_form("/admin/users/new", &sent).await;
    res.expect_status(StatusCode::UNPROCESSABLE_ENTITY);
    let html = text(&res);
    assert!(html.contains("value=\"new@example.com\""), "{html}");
    assert!(html.contains("<option value=\"admin\" selected>"), "{html}");
    assert!(html.contains("id=\"new-password-error\">Password should be at least 12"), "{html}");
    assert!(html.contains("id=\"new-confirmation-error\">Password confirmation "), "{html}");
    assert!(!html.contains("short") || !html.contains("value=\"short\""), "passwords are not sent back");
    assert!(app.domain.user_with_email("new@example.com").await.unwrap().is_none());

    let taken = [("csrf_token", csrf.as_str()), ("email", "BOSS@example.com"), ("role", "unprivileged")];
    let res = browser.post_form("/admin/users/new", &taken).await;
    res.expect_status(StatusCode::UNPROCESSABLE_ENTITY);
    assert!(text(&res).contains("id=\"new-email-error\">Email has already been taken"));

    let good = [
        ("csrf_token", csrf.as_str()),
        ("email", " new@example.com "),
        ("role", "admin"),
        ("password", PASSWORD),
        ("password_confirmation", PASSWORD),
    ];
    let res = browser.post_form("/admin/users/new", &good).await;
    let user = app.domain.user_with_email("new@example.com").await.unwrap().expect("created");
    assert_eq!(location(&res), format!("/admin/users/{}?done=created", user.id));
    assert_eq!(user.role, Role::Admin);
    let html = page(&browser.get(location(&res)).await);
    assert!(html.contains("The user was created.") && html.contains("<h1>new@example.com</h1>"), "{html}");
    let mut theirs = Browser::new(&app);
    theirs.sign_in("new@example.com", PASSWORD, "/").await.expect_status(StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn an_unprivileged_user_gets_403_on_every_console_url() {
    let app = TestApp::new().await;
    let id = password_user(&app, "pat@example.com", "unprivileged").await;
    let mut browser = Browser::new(&app);
    browser.sign_in("pat@example.com", PASSWORD, "/").await.expect_status(StatusCode::SEE_OTHER);
    let csrf = browser.csrf_token().await;
    let user = format!("/admin/users/{}", app.admin_id);
    for path in ["/admin", "/admin/users", "/admin/users/new", &user, &format!("{user}/delete")] {
        let res = browser.get(path).await;
        res.expect_status(StatusCode::FORBIDDEN);
        assert!(text(&res).contains("Administrators only"), "{path}");
    }
    for action in ["role", "disable", "enable", "password", "sign_out", "delete"] {
        let path = format!("{user}/{action}");
        let fields = [("csrf_token", csrf.as_str()), ("role", "unprivileged"), ("password", PASSWORD)];
        browser.post_form(&path, &fields).await.expect_status(StatusCode::FORBIDDEN);
    }
    let fields = [("csrf_token", csrf.as_str()), ("email", "sneaky@example.com")];
    browser.post_form("/admin/users/new", &fields).await.expect_status(StatusCode::FORBIDDEN);
    assert!(app.domain.user_with_email("sneaky@example.com").await.unwrap().is_none());
    let admin = app.show_user(&app.admin_id).await;
    assert_eq!((admin["role"].as_str(), &admin["disabled_at"]), (Some("admin"), &serde_json::Value::Null));
    // And a visitor without a session is sent to sign in.
    let res = Browser::new(&app).get("/admin/users").await;
    assert_eq!(location(&res), "/sign_in?return_to=%2Fadmin%2Fusers");
    let _ = id;
}
