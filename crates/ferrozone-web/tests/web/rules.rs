//! Issue 35: the console's Rules pages. The list in lookup order with its filters, adding,
//! editing and deleting with the API's messages at their fields, the default action, the
//! rules applying to a user on the user's page, Check access (docs/web.md, "Rules").

use axum::http::StatusCode;
use serde_json::json;

use crate::helpers::TestApp;
use crate::signin::{password_user, text, Browser, PASSWORD};

const ADMIN: &str = "boss@example.com";

async fn console() -> (TestApp, Browser) {
    let app = TestApp::new().await;
    password_user(&app, ADMIN, "admin").await;
    let mut browser = Browser::new(&app);
    browser.sign_in(ADMIN, PASSWORD, "/").await.expect_status(StatusCode::SEE_OTHER);
    (app, browser)
}

async fn rule(app: &TestApp, attrs: serde_json::Value) -> String {
    app.post("/v0/rules", &app.admin, json!({ "rule": attrs })).await.expect_status(StatusCode::CREATED).id()
}

/// The destinations of the rules table, in order.
fn destinations(html: &str) -> Vec<String> {
    html.split("<th scope=\"row\"><span class=\"address\">")
        .skip(1)
        .filter_map(|rest| rest.split('<').next())
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn the_list_shows_rules_in_lookup_order_and_filters_by_user_and_destination() {
    let (app, mut browser) = console().await;
    let (alice, _) = app.user("alice@example.com", "unprivileged").await;
    rule(&app, json!({"destination": "0.0.0.0/0", "action": "drop"})).await;
    rule(&app, json!({"destination": "10.0.0.0/8", "action": "accept"})).await;
    rule(&app, json!({"destination": "10.1.0.0/16", "action": "drop", "port_type": "tcp", "port_range": "22"})).await;
    rule(&app, json!({"destination": "192.0.2.0/24", "action": "drop", "user_id": alice})).await;

    let page = browser.get("/admin/rules").await;
    let html = text(page.expect_status(StatusCode::OK));
    assert_eq!(destinations(&html), ["10.1.0.0/16", "10.0.0.0/8", "0.0.0.0/0", "192.0.2.0/24"]);
    assert!(html.contains("4 rules."), "the count");
    assert!(html.contains("<option value=\"accept\" selected>Accept</option>"), "the default action, changeable");

    let alice_only = text(&browser.get("/admin/rules?user=alice%40example.com").await);
    assert_eq!(destinations(&alice_only), ["192.0.2.0/24"]);
    let everyone = text(&browser.get("/admin/rules?user=everyone&destination=10.1.2.3").await);
    assert_eq!(destinations(&everyone), ["10.1.0.0/16", "10.0.0.0/8", "0.0.0.0/0"], "rules holding the address");
    let unknown = browser.get("/admin/rules?user=nobody%40example.com").await;
    assert!(text(unknown.expect_status(StatusCode::NOT_FOUND)).contains("No user has this email."));
    let bad = browser.get("/admin/rules?destination=10.0.0").await;
    assert!(text(bad.expect_status(StatusCode::UNPROCESSABLE_ENTITY)).contains("Enter an IP address or a network"));
}

/// Posts `fields` and the session's CSRF `token` to `path`.
async fn post(browser: &mut Browser, path: &str, fields: &[(&str, &str)], token: &str) -> crate::helpers::TestResponse {
    let mut all = fields.to_vec();
    all.push(("csrf_token", token));
    browser.post_form(path, &all).await
}

/// A rule form: destination, user's email, protocol and ports (action drop).
fn form<'a>(destination: &'a str, email: &'a str, port_type: &'a str, ports: &'a str) -> [(&'a str, &'a str); 5] {
    [
        ("destination", destination),
        ("action", "drop"),
        ("email", email),
        ("port_type", port_type),
        ("port_range", ports),
    ]
}

#[tokio::test]
async fn rules_are_added_edited_and_deleted_with_the_apis_messages_at_their_fields() {
    let (app, mut browser) = console().await;
    app.user("alice@example.com", "unprivileged").await;
    let token = browser.csrf_token().await;
    let new = "/admin/rules/new";
    let made = post(&mut browser, new, &form("10.0.0.0/8", "alice@example.com", "tcp", "80-90"), &token).await;
    assert_eq!(made.expect_status(StatusCode::SEE_OTHER).header("location"), Some("/admin/rules?done=created"));
    let stored = app.list("/v0/rules").await;
    assert_eq!(stored.len(), 1);
    assert_eq!((&stored[0]["destination"], &stored[0]["port_range"]), (&json!("10.0.0.0/8"), &json!("80-90")));
    let id = stored[0]["id"].as_str().unwrap().to_owned();

    let overlap = post(&mut browser, new, &form("10.1.0.0/16", "alice@example.com", "tcp", "85"), &token).await;
    let html = text(overlap.expect_status(StatusCode::UNPROCESSABLE_ENTITY));
    assert!(html.contains("id=\"rule-destination-error\">Destination overlaps with an existing rule</p>"), "{html}");
    assert!(html.contains("value=\"10.1.0.0/16\""), "the values are kept");
    let unknown = post(&mut browser, new, &form("10.2.0.0/16", "nobody@example.com", "", ""), &token).await;
    let html = text(unknown.expect_status(StatusCode::UNPROCESSABLE_ENTITY));
    assert!(html.contains("id=\"rule-email-error\">No user has this email.</p>"), "{html}");
    let bad = post(&mut browser, new, &form("", "", "udp", "90-80"), &token).await;
    let html = text(bad.expect_status(StatusCode::UNPROCESSABLE_ENTITY));
    assert!(html.contains("Destination can&#39;t be blank"), "{html}");
    assert!(html.contains("Port range: lower value cannot be higher than upper value"), "{html}");
    assert_eq!(app.list("/v0/rules").await.len(), 1, "nothing written");

    let edit = text(&browser.get(&format!("/admin/rules/{id}")).await);
    assert!(edit.contains("value=\"alice@example.com\"") && edit.contains("<option value=\"tcp\" selected>"));
    let saved = post(&mut browser, &format!("/admin/rules/{id}"), &form("192.0.2.1", "", "", ""), &token).await;
    saved.expect_status(StatusCode::SEE_OTHER);
    let now = app.get(&format!("/v0/rules/{id}"), &app.admin).await.data().clone();
    assert_eq!(
        (&now["destination"], &now["user_id"], &now["port_type"]),
        (&json!("192.0.2.1"), &json!(null), &json!(null))
    );

    let deleted = post(&mut browser, &format!("/admin/rules/{id}/delete"), &[], &token).await;
    assert_eq!(deleted.expect_status(StatusCode::SEE_OTHER).header("location"), Some("/admin/rules?done=deleted"));
    assert!(app.list("/v0/rules").await.is_empty());
    let forged = post(&mut browser, new, &form("10.0.0.0/8", "", "", ""), "wrong").await;
    forged.expect_status(StatusCode::FORBIDDEN);
    assert!(app.list("/v0/rules").await.is_empty(), "no rule without the session's token");
}

#[tokio::test]
async fn the_default_action_is_changed_on_the_page_unless_the_environment_fixes_it() {
    let (app, mut browser) = console().await;
    let token = browser.csrf_token().await;
    let saved = post(&mut browser, "/admin/rules/default_action", &[("action", "drop")], &token).await;
    assert_eq!(saved.expect_status(StatusCode::SEE_OTHER).header("location"), Some("/admin/rules?done=default_action"));
    let config = app.get("/v0/configuration", &app.admin).await;
    assert_eq!(config.data()["egress_default_action"], "drop");
    let html = text(&browser.get("/admin/rules?done=default_action").await);
    assert!(html.contains("The default action was saved.") && html.contains("<option value=\"drop\" selected>"));

    let fixed = TestApp::with_settings(|s| {
        s.fixed = ferrozone_domain::configuration::Fixed::new([(
            "egress_default_action".to_owned(),
            "FERROZONE_EGRESS_DEFAULT_ACTION".to_owned(),
        )]);
    })
    .await;
    password_user(&fixed, ADMIN, "admin").await;
    let mut browser = Browser::new(&fixed);
    browser.sign_in(ADMIN, PASSWORD, "/").await.expect_status(StatusCode::SEE_OTHER);
    let html = text(&browser.get("/admin/rules").await);
    assert!(html.contains("Set by <code>FERROZONE_EGRESS_DEFAULT_ACTION</code>"), "shown read-only");
    assert!(!html.contains("/admin/rules/default_action"), "no form");
}

#[tokio::test]
async fn check_access_answers_at_the_form_and_names_the_rule() {
    let (app, mut browser) = console().await;
    let (alice, _) = app.user("alice@example.com", "unprivileged").await;
    let device = app.device(&alice).await;
    let drop_ssh =
        rule(&app, json!({"destination": "10.0.0.0/8", "action": "drop", "user_id": alice, "port_type": "tcp", "port_range": "22"})).await;
    let query = "email=alice%40example.com&destination=10.1.2.3&protocol=tcp&port=22";
    let html = text(browser.get(&format!("/admin/rules/check?{query}")).await.expect_status(StatusCode::OK));
    assert!(html.contains("<span class=\"badge bad\">Dropped</span>"), "{html}");
    assert!(html.contains("Dropped by the user&#39;s rule drop 10.0.0.0/8, TCP 22."), "{html}");
    assert!(html.contains(&format!("href=\"/admin/rules/{drop_ssh}\"")));
    let by_device =
        format!("/admin/rules/check?device_id={}&destination=10.1.2.3&protocol=icmp", device["id"].as_str().unwrap());
    let html = text(browser.get(&by_device).await.expect_status(StatusCode::OK));
    assert!(
        html.contains("<span class=\"badge ok\">Allowed</span>") && html.contains("by the default action (accept)"),
        "{html}"
    );
    assert!(html.contains(&format!("{} of alice@example.com", device["name"].as_str().unwrap())));

    let bad = browser.get("/admin/rules/check?email=nobody%40example.com&destination=10.0.0.0%2F8&protocol=tcp").await;
    let html = text(bad.expect_status(StatusCode::UNPROCESSABLE_ENTITY));
    assert!(html.contains("id=\"check-email-error\">No user has this email.</p>"), "{html}");
    let bad = browser.get("/admin/rules/check?email=alice%40example.com&destination=10.0.0.0%2F8&protocol=tcp").await;
    let html = text(bad.expect_status(StatusCode::UNPROCESSABLE_ENTITY));
    assert!(html.contains("Destination must be an IP address") && html.contains("Port can"), "{html}");
    let empty = text(browser.get("/admin/rules/check").await.expect_status(StatusCode::OK));
    assert!(!empty.contains("answer-heading"), "no answer before a question");
    let linked = browser.get("/admin/rules/check?email=alice%40example.com").await;
    let html = text(linked.expect_status(StatusCode::OK));
    assert!(html.contains("value=\"alice@example.com\"") && !html.contains("field-error"), "a link fills the form in");
}

#[tokio::test]
async fn a_users_page_lists_the_rules_that_apply_in_lookup_order() {
    let (app, mut browser) = console().await;
    let (alice, _) = app.user("alice@example.com", "unprivileged").await;
    let (bob, _) = app.user("bob@example.com", "unprivileged").await;
    rule(&app, json!({"destination": "0.0.0.0/0", "action": "drop"})).await;
    rule(&app, json!({"destination": "10.9.0.0/16", "action": "accept", "port_type": "udp", "port_range": "53"})).await;
    rule(&app, json!({"destination": "10.1.0.0/16", "action": "drop", "user_id": alice})).await;
    rule(&app, json!({"destination": "10.2.0.0/16", "action": "accept", "user_id": alice})).await;
    rule(&app, json!({"destination": "10.3.0.0/16", "action": "drop", "user_id": bob})).await;
    let html = text(browser.get(&format!("/admin/users/{alice}")).await.expect_status(StatusCode::OK));
    let listed: Vec<&str> = html
        .split("<th scope=\"row\"><a class=\"address\" href=\"/admin/rules/")
        .skip(1)
        .filter_map(|rest| rest.split('>').nth(1)?.split('<').next())
        .collect();
    assert_eq!(listed, ["10.2.0.0/16", "10.1.0.0/16", "10.9.0.0/16", "0.0.0.0/0"], "hers, then everyone's; not Bob's");
    assert!(html.contains("Rules that apply (4)"));
    assert!(html.contains("href=\"/admin/rules/check?email=alice%40example.com\""));
}

/// Issue 37: a group's rules in the console. The form names a group by name, the list and
/// a member's page show the group, and the member's page lists the member's groups.
#[tokio::test]
async fn group_rules_are_made_by_the_groups_name_and_shown_with_it() {
    let (app, mut browser) = console().await;
    let (alice, _) = app.user("alice@example.com", "unprivileged").await;
    let staff = app.post("/v0/groups", &app.admin, json!({"group": {"name": "Staff"}})).await;
    let staff = staff.expect_status(StatusCode::CREATED).id();
    let members = format!("/v0/groups/{staff}/members");
    app.post(&members, &app.admin, json!({"member": {"user_id": alice}})).await.expect_status(StatusCode::CREATED);
    rule(&app, json!({"destination": "0.0.0.0/0", "action": "drop"})).await;
    rule(&app, json!({"destination": "192.0.2.0/24", "action": "drop", "user_id": alice})).await;

    let token = browser.csrf_token().await;
    let new = "/admin/rules/new";
    let form = |group: &'static str, email: &'static str| {
        [
            ("destination", "10.0.0.0/8"),
            ("action", "accept"),
            ("email", email),
            ("group", group),
            ("port_type", ""),
            ("port_range", ""),
        ]
    };
    let page = text(&browser.get(new).await);
    assert!(page.contains("<option value=\"Staff\"></option>"), "the group field offers the groups: {page}");
    let unknown = post(&mut browser, new, &form("Nobody", ""), &token).await;
    let html = text(unknown.expect_status(StatusCode::UNPROCESSABLE_ENTITY));
    assert!(html.contains("id=\"rule-group-error\">No group has this name.</p>"), "{html}");
    let both = post(&mut browser, new, &form("Staff", "alice@example.com"), &token).await;
    let html = text(both.expect_status(StatusCode::UNPROCESSABLE_ENTITY));
    assert!(html.contains("id=\"rule-group-error\">Name a user or a group, not both.</p>"), "{html}");
    let made = post(&mut browser, new, &form("staff", ""), &token).await;
    made.expect_status(StatusCode::SEE_OTHER);
    let stored = app.list("/v0/rules").await;
    let group_rule =
        stored.iter().find(|rule| rule["group_id"] == json!(staff)).expect("the group's rule, by any case");
    let id = group_rule["id"].as_str().unwrap();

    let list = text(&browser.get("/admin/rules").await);
    assert_eq!(destinations(&list), ["0.0.0.0/0", "10.0.0.0/8", "192.0.2.0/24"], "everyone's, the group's, the user's");
    assert!(list.contains(&format!("Group <a href=\"/admin/groups/{staff}\">Staff</a>")), "{list}");
    let edit = text(&browser.get(&format!("/admin/rules/{id}")).await);
    assert!(edit.contains("name=\"group\" value=\"Staff\""), "{edit}");

    let user_page = text(&browser.get(&format!("/admin/users/{alice}")).await);
    assert!(user_page.contains(&format!("<li><a href=\"/admin/groups/{staff}\">Staff</a></li>")), "{user_page}");
    assert!(user_page.contains("Groups (1)"));
    let listed: Vec<&str> = user_page
        .split("<th scope=\"row\"><a class=\"address\" href=\"/admin/rules/")
        .skip(1)
        .filter_map(|rest| rest.split('>').nth(1)?.split('<').next())
        .collect();
    assert_eq!(listed, ["192.0.2.0/24", "10.0.0.0/8", "0.0.0.0/0"], "hers, her group's, everyone's");
}
