//! Issue 37: the console's Groups pages (docs/web.md, "Groups"). A group is added, renamed
//! and deleted with the API's messages at their fields; members are added by email and
//! removed; a group's page lists the rules that name it and links to add one; only admins.

use axum::http::StatusCode;
use serde_json::json;

use crate::admin_users::admin_browser;
use crate::helpers::TestApp;
use crate::signin::{password_user, text, Browser, PASSWORD};

async fn post(browser: &mut Browser, path: &str, fields: &[(&str, &str)], token: &str) -> crate::helpers::TestResponse {
    let mut all = fields.to_vec();
    all.push(("csrf_token", token));
    browser.post_form(path, &all).await
}

#[tokio::test]
async fn groups_are_added_with_members_and_rules_and_deleted() {
    let app = TestApp::new().await;
    let (mut browser, token, _) = admin_browser(&app).await;
    let (alice, _) = app.user("alice@example.com", "unprivileged").await;

    let made =
        post(&mut browser, "/admin/groups", &[("name", " Staff "), ("description", "everyone on payroll")], &token)
            .await;
    let location = made.expect_status(StatusCode::SEE_OTHER).header("location").unwrap().to_owned();
    let groups = app.list("/v0/groups").await;
    assert_eq!((&groups[0]["name"], &groups[0]["description"]), (&json!("Staff"), &json!("everyone on payroll")));
    let id = groups[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(location, format!("/admin/groups/{id}?done=created"));
    let taken = post(&mut browser, "/admin/groups", &[("name", "staff"), ("description", "")], &token).await;
    let html = text(taken.expect_status(StatusCode::UNPROCESSABLE_ENTITY));
    assert!(html.contains("id=\"group-name-error\">Name has already been taken</p>"), "{html}");
    assert!(html.contains("value=\"staff\""), "the value is kept");

    let page = format!("/admin/groups/{id}");
    let members = format!("{page}/members");
    let unknown = post(&mut browser, &members, &[("email", "nobody@example.com")], &token).await;
    let html = text(unknown.expect_status(StatusCode::UNPROCESSABLE_ENTITY));
    assert!(html.contains("id=\"member-email-error\">No user has this email.</p>"), "{html}");
    let added = post(&mut browser, &members, &[("email", "Alice@Example.com")], &token).await;
    assert_eq!(added.expect_status(StatusCode::SEE_OTHER).header("location"), Some(&*format!("{page}?done=added")));
    let listed = app.list(&format!("/v0/groups/{id}/members")).await;
    assert_eq!(listed.iter().map(|m| m["user_id"].clone()).collect::<Vec<_>>(), [json!(alice)]);

    app.post(
        "/v0/rules",
        &app.admin,
        json!({"rule": {"destination": "10.0.0.0/8", "action": "accept", "group_id": id}}),
    )
    .await
    .expect_status(StatusCode::CREATED);
    let html = text(&browser.get(&page).await);
    assert!(
        html.contains("Members (1)")
            && html.contains(&format!("<a href=\"/admin/users/{alice}\">alice@example.com</a>"))
    );
    assert!(html.contains("Rules for this group (1)") && html.contains(">10.0.0.0/8</a>"), "{html}");
    assert!(html.contains("href=\"/admin/rules/new?group=Staff\""), "{html}");
    let new_rule = text(&browser.get("/admin/rules/new?group=Staff").await);
    assert!(new_rule.contains("name=\"group\" value=\"Staff\""), "the form names the group");
    let list = text(&browser.get("/admin/groups").await);
    assert!(
        list.contains(&format!("<a href=\"/admin/groups/{id}\">Staff</a>")) && list.contains("<td>1</td>"),
        "{list}"
    );

    let renamed = post(&mut browser, &page, &[("name", "Payroll"), ("description", "")], &token).await;
    renamed.expect_status(StatusCode::SEE_OTHER);
    let group = app.get(&format!("/v0/groups/{id}"), &app.admin).await.data().clone();
    assert_eq!((&group["name"], &group["description"]), (&json!("Payroll"), &json!("")));
    let blank = post(&mut browser, &page, &[("name", ""), ("description", "x")], &token).await;
    let html = text(blank.expect_status(StatusCode::UNPROCESSABLE_ENTITY));
    assert!(html.contains("id=\"group-name-error\">Name can&#39;t be blank</p>"), "{html}");

    let removed = post(&mut browser, &format!("{members}/{alice}/remove"), &[], &token).await;
    removed.expect_status(StatusCode::SEE_OTHER);
    assert!(app.list(&format!("/v0/groups/{id}/members")).await.is_empty());
    let forged = post(&mut browser, &format!("{page}/delete"), &[], "wrong").await;
    forged.expect_status(StatusCode::FORBIDDEN);
    let deleted = post(&mut browser, &format!("{page}/delete"), &[], &token).await;
    assert_eq!(deleted.expect_status(StatusCode::SEE_OTHER).header("location"), Some("/admin/groups?done=deleted"));
    assert!(app.list("/v0/groups").await.is_empty());
    assert!(app.list("/v0/rules").await.is_empty(), "its rule went with it");
    browser.get(&page).await.expect_status(StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn only_admins_see_groups() {
    let app = TestApp::new().await;
    password_user(&app, "alice@example.com", "unprivileged").await;
    let mut browser = Browser::new(&app);
    browser.sign_in("alice@example.com", PASSWORD, "/").await.expect_status(StatusCode::SEE_OTHER);
    browser.get("/admin/groups").await.expect_status(StatusCode::FORBIDDEN);
    let home = text(&browser.get("/").await);
    assert!(!home.contains("/admin/groups"), "no Groups link for an unprivileged user");
}
