//! Issue 37: rules of a group (`group_id` on `/v0/rules`, docs/design/groups.md, "Group
//! rules"): Ferrozone's own attribute, absent from every other rule's JSON; a rule is a
//! user's or a group's, never both; the group must exist and a group's rules overlap only
//! that group's; deleting the group deletes them; the checker and the data plane put them
//! between the user's rules and the global ones, and a membership change wakes the data
//! plane.

use std::time::Duration;

use axum::http::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{TestApp, TestResponse};

async fn create(app: &TestApp, attrs: Value) -> TestResponse {
    app.post("/v0/rules", &app.admin, json!({ "rule": attrs })).await
}

async fn group(app: &TestApp, name: &str) -> String {
    let res = app.post("/v0/groups", &app.admin, json!({"group": {"name": name}})).await;
    res.expect_status(StatusCode::CREATED).id()
}

async fn join(app: &TestApp, group: &str, user: &str) {
    let path = format!("/v0/groups/{group}/members");
    app.post(&path, &app.admin, json!({"member": {"user_id": user}})).await.expect_status(StatusCode::CREATED);
}

async fn leave(app: &TestApp, group: &str, user: &str) {
    let path = format!("/v0/groups/{group}/members/{user}");
    app.delete(&path, &app.admin).await.expect_status(StatusCode::NO_CONTENT);
}

#[tokio::test]
async fn a_groups_rule_carries_group_id_and_no_other_rule_shows_it() {
    let app = TestApp::new().await;
    let staff = group(&app, "Staff").await;
    let (alice, _) = app.user("alice@example.com", "unprivileged").await;
    let res = create(&app, json!({"destination": "10.0.0.0/8", "action": "accept", "group_id": staff})).await;
    let rule = res.expect_status(StatusCode::CREATED).data().clone();
    assert_eq!((&rule["group_id"], &rule["user_id"]), (&json!(staff), &Value::Null));
    let path = format!("/v0/rules/{}", rule["id"].as_str().unwrap());
    assert_eq!(app.get(&path, &app.admin).await.data(), &rule);

    let global = create(&app, json!({"destination": "10.0.0.0/8"})).await;
    let users = create(&app, json!({"destination": "10.0.0.0/8", "user_id": alice})).await;
    for plain in [global.expect_status(StatusCode::CREATED).data(), users.expect_status(StatusCode::CREATED).data()] {
        let keys: Vec<&str> = plain.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            ["action", "destination", "id", "inserted_at", "port_range", "port_type", "updated_at", "user_id"],
            "Firezone's attributes, no more"
        );
    }
    let listed = app.list("/v0/rules").await;
    assert_eq!(listed.iter().filter(|rule| rule.get("group_id").is_some()).count(), 1);

    // A group's rule becomes a user's when the same request clears the group.
    let kept = app.patch(&path, &app.admin, json!({"rule": {"user_id": alice}})).await;
    kept.expect_errors(json!({"group_id": ["must be blank when user_id is set"]}));
    let moved = app.patch(&path, &app.admin, json!({"rule": {"user_id": alice, "group_id": null}})).await;
    let moved = moved.expect_status(StatusCode::OK).data().clone();
    assert_eq!(moved["user_id"], json!(alice));
    assert!(moved.get("group_id").is_none(), "{moved}");
}

#[tokio::test]
async fn a_groups_rule_is_checked_with_its_own_messages() {
    let app = TestApp::new().await;
    let staff = group(&app, "Staff").await;
    let ops = group(&app, "Ops").await;
    let (alice, _) = app.user("alice@example.com", "unprivileged").await;
    let ghost = uuid::Uuid::now_v7().to_string();
    create(&app, json!({"destination": "10.0.0.0/8", "group_id": ghost}))
        .await
        .expect_errors(json!({"group": ["does not exist"]}));
    create(&app, json!({"destination": "10.0.0.0/8", "group_id": "staff"}))
        .await
        .expect_errors(json!({"group_id": ["is invalid"]}));
    create(&app, json!({"destination": "10.0.0.0/8", "group_id": 7}))
        .await
        .expect_errors(json!({"group_id": ["is invalid"]}));
    create(&app, json!({"destination": "10.0.0.0/8", "group_id": staff, "user_id": alice}))
        .await
        .expect_errors(json!({"group_id": ["must be blank when user_id is set"]}));

    create(&app, json!({"destination": "10.0.0.0/8", "group_id": staff})).await.expect_status(StatusCode::CREATED);
    create(&app, json!({"destination": "10.1.0.0/16", "group_id": staff}))
        .await
        .expect_errors(json!({"destination": ["destination overlaps with an existing rule"]}));
    for other in [json!({"group_id": ops}), json!({}), json!({"user_id": alice})] {
        let mut attrs = json!({"destination": "10.1.0.0/16"});
        attrs.as_object_mut().unwrap().extend(other.as_object().unwrap().clone());
        create(&app, attrs.clone()).await.expect_status(StatusCode::CREATED);
    }
    assert_eq!(app.list("/v0/rules").await.len(), 4);

    let unprivileged = app.user("bob@example.com", "unprivileged").await.1;
    let res =
        app.post("/v0/rules", &unprivileged, json!({"rule": {"destination": "1.1.1.1", "group_id": staff}})).await;
    res.expect_status(StatusCode::FORBIDDEN);

    app.delete(&format!("/v0/groups/{staff}"), &app.admin).await.expect_status(StatusCode::NO_CONTENT);
    let left: Vec<Value> = app.list("/v0/rules").await;
    assert_eq!(left.len(), 3, "the group's rules went with it: {left:?}");
    assert!(left.iter().all(|rule| rule["group_id"] != json!(staff)));
}

/// `(action, decided_by, rule id or "")` of a check for `user` to `destination` over TCP 22.
async fn decided(app: &TestApp, user: &str, destination: &str) -> (String, String, String) {
    let path = format!("/v0/rules/check?user_id={user}&destination={destination}&protocol=tcp&port=22");
    let res = app.get(&path, &app.admin).await;
    let data = res.expect_status(StatusCode::OK).data();
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    (text(&data["action"]), text(&data["decided_by"]), text(&data["rule"]["id"]))
}

fn by_rule(action: &str, rule: &str) -> (String, String, String) {
    (action.to_owned(), "rule".to_owned(), rule.to_owned())
}

#[tokio::test]
async fn the_checker_puts_group_rules_between_the_users_and_the_global_ones() {
    let app = TestApp::new().await;
    let staff = group(&app, "Staff").await;
    let ops = group(&app, "Ops").await;
    let (alice, _) = app.user("alice@example.com", "unprivileged").await;
    let (bob, _) = app.user("bob@example.com", "unprivileged").await;
    join(&app, &staff, &alice).await;
    join(&app, &ops, &alice).await;
    let id = |res: &TestResponse| res.expect_status(StatusCode::CREATED).id();
    let drop_all = id(&create(&app, json!({"destination": "0.0.0.0/0", "action": "drop"})).await);
    let staff_lan =
        id(&create(&app, json!({"destination": "10.0.0.0/8", "action": "accept", "group_id": staff})).await);
    let ops_ssh = id(&create(
        &app,
        json!({"destination": "10.1.0.0/16", "action": "drop", "group_id": ops, "port_type": "tcp", "port_range": "22"}),
    )
    .await);
    let alice_host = id(&create(&app, json!({"destination": "10.1.2.3", "action": "accept", "user_id": alice})).await);

    assert_eq!(decided(&app, &alice, "10.1.2.3").await, by_rule("accept", &alice_host), "the user's rule first");
    assert_eq!(decided(&app, &alice, "10.1.2.4").await, by_rule("drop", &ops_ssh), "a group's port rule");
    assert_eq!(decided(&app, &alice, "10.2.0.1").await, by_rule("accept", &staff_lan), "before the global drop");
    assert_eq!(decided(&app, &bob, "10.2.0.1").await, by_rule("drop", &drop_all), "bob is in no group");
    let path = format!("/v0/rules/check?user_id={alice}&destination=10.2.0.1&protocol=tcp&port=22");
    let explanation = app.get(&path, &app.admin).await.data()["explanation"].clone();
    assert_eq!(explanation, "Allowed by the rule of group \u{201c}Staff\u{201d} accept 10.0.0.0/8.");

    leave(&app, &ops, &alice).await;
    assert_eq!(decided(&app, &alice, "10.1.2.4").await, by_rule("accept", &staff_lan), "no longer in ops");
}

/// Whether a wake-up is waiting, taking it.
async fn woken(changes: &tokio::sync::Notify) -> bool {
    tokio::time::timeout(Duration::ZERO, changes.notified()).await.is_ok()
}

#[tokio::test]
async fn the_data_plane_gets_the_members_addresses_and_wakes_on_a_membership_change() {
    let app = TestApp::new().await;
    let staff = group(&app, "Staff").await;
    let (alice, _) = app.user("alice@example.com", "unprivileged").await;
    let (bob, _) = app.user("bob@example.com", "unprivileged").await;
    let device = app.device(&alice).await;
    app.device(&bob).await;
    create(&app, json!({"destination": "10.0.0.0/8", "group_id": staff})).await.expect_status(StatusCode::CREATED);
    let changes = app.domain.rule_changes();
    woken(&changes).await;

    join(&app, &staff, &alice).await;
    assert!(woken(&changes).await, "after a member joined");
    let policy = app.domain.egress_policy().await.unwrap();
    let staff_id: uuid::Uuid = staff.parse().unwrap();
    let alice_id: uuid::Uuid = alice.parse().unwrap();
    assert_eq!(policy.memberships.len(), 1);
    assert_eq!((policy.memberships[0].group_id, policy.memberships[0].user_id), (staff_id, alice_id));
    let sources: Vec<String> = policy.sources.iter().filter_map(|s| s.ipv4.map(|a| a.to_string())).collect();
    assert_eq!(sources, [device["ipv4"].as_str().unwrap()], "alice's device, not bob's");

    leave(&app, &staff, &alice).await;
    assert!(woken(&changes).await, "after a member left");
    let policy = app.domain.egress_policy().await.unwrap();
    assert!(policy.memberships.is_empty() && policy.sources.is_empty(), "{policy:?}");
}
