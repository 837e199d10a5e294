//! `/v0/groups` (docs/api.md section 5i, docs/design/groups.md): an admin creates, renames
//! and deletes groups and adds and removes members; names are unique whatever their case;
//! a user's JSON stays Firezone's; bad input is a 422 and others are forbidden; every write
//! is audited.

use axum::http::StatusCode;
use ferrozone_domain::audit::AuditQuery;
use serde_json::{json, Value};

use crate::helpers::{TestApp, TestResponse};

async fn create(app: &TestApp, attrs: Value) -> TestResponse {
    app.post("/v0/groups", &app.admin, json!({ "group": attrs })).await
}

fn emails(res: &TestResponse) -> Vec<String> {
    res.data().as_array().expect("a list").iter().map(|m| m["email"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn an_admin_keeps_groups_and_their_members() {
    let app = TestApp::new().await;
    let res = create(&app, json!({"name": " Engineering ", "description": "builds things"})).await;
    let group = res.expect_status(StatusCode::CREATED).data().clone();
    let location = res.header("location").expect("a location").to_owned();
    assert_eq!(location, format!("/v0/groups/{}", group["id"].as_str().unwrap()));
    assert_eq!(
        (&group["name"], &group["description"], &group["source"], &group["member_count"]),
        (&json!("Engineering"), &json!("builds things"), &json!("manual"), &json!(0))
    );

    let (bob, _) = app.user("bob@example.com", "unprivileged").await;
    let (alice, _) = app.user("alice@example.com", "unprivileged").await;
    let members = format!("{location}/members");
    let added = app.post(&members, &app.admin, json!({"member": {"user_id": bob}})).await;
    let member = added.expect_status(StatusCode::CREATED).data().clone();
    assert_eq!(
        (&member["user_id"], &member["email"], &member["source"]),
        (&json!(bob), &json!("bob@example.com"), &json!("manual"))
    );
    app.post(&members, &app.admin, json!({"member": {"user_id": alice}})).await.expect_status(StatusCode::CREATED);
    let again = app.post(&members, &app.admin, json!({"member": {"user_id": bob}})).await;
    assert_eq!(again.expect_status(StatusCode::OK).data(), &member, "nothing changes");
    assert_eq!(emails(&app.get(&members, &app.admin).await), ["alice@example.com", "bob@example.com"]);
    assert_eq!(app.get(&location, &app.admin).await.data()["member_count"], json!(2));

    let user = app.show_user(&bob).await;
    assert!(user.get("groups").is_none(), "a user's JSON stays Firezone's: {user}");

    let renamed = app.patch(&location, &app.admin, json!({"group": {"name": "Platform"}})).await;
    let renamed = renamed.expect_status(StatusCode::OK).data().clone();
    assert_eq!((&renamed["name"], &renamed["description"]), (&json!("Platform"), &json!("builds things")));
    let cleared = app.put(&location, &app.admin, json!({"group": {"description": null}})).await;
    assert_eq!(cleared.expect_status(StatusCode::OK).data()["description"], json!(""));

    let member = format!("{members}/{bob}");
    assert_eq!(app.delete(&member, &app.admin).await.status, StatusCode::NO_CONTENT);
    app.delete(&member, &app.admin).await.expect_not_found();
    assert_eq!(emails(&app.get(&members, &app.admin).await), ["alice@example.com"]);
    assert_eq!(app.delete(&location, &app.admin).await.status, StatusCode::NO_CONTENT);
    app.get(&location, &app.admin).await.expect_not_found();
    app.get(&members, &app.admin).await.expect_not_found();
    assert_eq!(app.show_user(&alice).await["email"], json!("alice@example.com"), "members stay");

    let query = AuditQuery { after_seq: Some(0), action: Some("group.".into()), limit: 20, ..AuditQuery::default() };
    let records = app.store.audit_records(&query).await.expect("the audit log");
    let actions: Vec<&str> = records.iter().map(|r| r.action.as_str()).collect();
    assert_eq!(
        actions,
        [
            "group.created",
            "group.member_added",
            "group.member_added",
            "group.updated",
            "group.updated",
            "group.member_removed",
            "group.deleted"
        ]
    );
}

#[tokio::test]
async fn bad_input_is_a_422_and_others_are_forbidden() {
    let app = TestApp::new().await;
    create(&app, json!({})).await.expect_errors(json!({"name": ["can't be blank"]}));
    create(&app, json!({"name": "x".repeat(256), "description": "d".repeat(1025)})).await.expect_errors(json!({
        "name": ["should be at most 255 character(s)"],
        "description": ["should be at most 1024 character(s)"]
    }));
    create(&app, json!({"name": 5, "description": ["no"]}))
        .await
        .expect_errors(json!({"name": ["is invalid"], "description": ["is invalid"]}));
    let group = create(&app, json!({"name": "Ops"})).await.expect_status(StatusCode::CREATED).data().clone();
    create(&app, json!({"name": "OPS"})).await.expect_errors(json!({"name": ["has already been taken"]}));
    let location = format!("/v0/groups/{}", group["id"].as_str().unwrap());
    app.patch(&location, &app.admin, json!({"group": {"name": null}}))
        .await
        .expect_errors(json!({"name": ["can't be blank"]}));

    let members = format!("{location}/members");
    let add = |user: Value| app.post(&members, &app.admin, json!({"member": {"user_id": user}}));
    add(json!("not-a-uuid")).await.expect_errors(json!({"user_id": ["is invalid"]}));
    add(json!(uuid::Uuid::now_v7())).await.expect_errors(json!({"user_id": ["does not exist"]}));
    add(Value::Null).await.expect_errors(json!({"user_id": ["can't be blank"]}));
    app.post(&members, &app.admin, json!({"user_id": "x"})).await.expect_bad_request();
    app.get("/v0/groups/not-a-uuid", &app.admin).await.expect_not_found();
    app.delete(&format!("{members}/not-a-uuid"), &app.admin).await.expect_not_found();

    let (bob, token) = app.user("bob@example.com", "unprivileged").await;
    app.get("/v0/groups", &token).await.expect_forbidden();
    app.post("/v0/groups", &token, json!({"group": {"name": "mine"}})).await.expect_forbidden();
    app.post(&members, &token, json!({"member": {"user_id": bob}})).await.expect_forbidden();
    app.delete(&location, &token).await.expect_forbidden();
    assert_eq!(app.list("/v0/groups").await.len(), 1);
}
