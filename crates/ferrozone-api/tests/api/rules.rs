//! Issue 18, reference B1: `/v0/rules`. CRUD with Firezone's envelopes, its messages, the
//! text of `destination` and `port_range` echoed as sent, admins only.

use axum::http::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{TestApp, TestResponse};

async fn create(app: &TestApp, attrs: Value) -> TestResponse {
    app.post("/v0/rules", &app.admin, json!({ "rule": attrs })).await
}

#[tokio::test]
async fn a_rule_is_created_shown_listed_updated_and_deleted_as_sent() {
    let app = TestApp::new().await;
    let (alice, _) = app.user("alice@example.com", "unprivileged").await;
    let attrs = json!({"destination": "1.1.1.1/24", "port_type": "tcp", "port_range": "80 - 90", "user_id": alice});
    let res = create(&app, attrs).await;
    let data = res.expect_status(StatusCode::CREATED).data().clone();
    let keys: Vec<&str> = data.as_object().unwrap().keys().map(String::as_str).collect();
    let mut expected =
        ["action", "destination", "id", "inserted_at", "port_range", "port_type", "updated_at", "user_id"];
    expected.sort_unstable();
    assert_eq!(keys, expected, "exactly Firezone's keys");
    assert_eq!(
        (&data["destination"], &data["action"], &data["port_type"], &data["port_range"], &data["user_id"]),
        (&json!("1.1.1.1/24"), &json!("drop"), &json!("tcp"), &json!("80 - 90"), &json!(alice)),
        "drop by default; destination and port_range as sent",
    );
    let location = res.header("location").unwrap().to_owned();
    assert_eq!(location, format!("/v0/rules/{}", res.id()));
    app.get(&location, &app.admin).await.expect(StatusCode::OK, json!({ "data": data }));
    assert_eq!(app.list("/v0/rules").await, std::slice::from_ref(&data));

    let changes = json!({"rule": {"action": "accept", "user_id": null, "port_type": "", "port_range": null}});
    let updated = app.patch(&location, &app.admin, changes).await;
    let updated = updated.expect_status(StatusCode::OK).data().clone();
    assert_eq!(
        (&updated["action"], &updated["user_id"], &updated["port_type"]),
        (&json!("accept"), &Value::Null, &Value::Null)
    );
    assert_eq!(updated["destination"], "1.1.1.1/24", "omitted attributes are kept");
    let put = app.put(&location, &app.admin, json!({"rule": {"destination": "10.0.0.1/32"}})).await;
    assert_eq!(put.expect_status(StatusCode::OK).data()["destination"], "10.0.0.1/32");
    assert_eq!(app.get(&location, &app.admin).await.data()["destination"], "10.0.0.1/32", "the mask stays on GET too");

    let deleted = app.delete(&location, &app.admin).await;
    assert_eq!((deleted.status, deleted.raw.len()), (StatusCode::NO_CONTENT, 0));
    app.get(&location, &app.admin).await.expect_not_found();
    app.delete(&location, &app.admin).await.expect_not_found();
    app.get("/v0/rules/not-a-uuid", &app.admin).await.expect_not_found();
}

#[tokio::test]
async fn validation_answers_with_firezones_messages() {
    let app = TestApp::new().await;
    create(&app, json!({"action": "invalid"}))
        .await
        .expect_errors(json!({"action": ["is invalid"], "destination": ["can't be blank"]}));
    create(&app, json!({"destination": "10.0 0.0/24"})).await.expect_errors(json!({"destination": ["is invalid"]}));
    create(&app, json!({"destination": "1.1.1.1", "port_type": "tcp"}))
        .await
        .expect_errors(json!({"port_range": ["can't be blank"]}));
    create(&app, json!({"destination": "1.1.1.1", "port_type": "udp", "port_range": "10-90000"}))
        .await
        .expect_errors(json!({"port_range": ["port is not within valid range"]}));
    create(&app, json!({"destination": "1.1.1.1", "port_type": "udp", "port_range": "x"}))
        .await
        .expect_errors(json!({"port_range": ["bad format"]}));
    let ghost = uuid::Uuid::now_v7().to_string();
    create(&app, json!({"destination": "1.1.1.1", "user_id": ghost}))
        .await
        .expect_errors(json!({"user": ["does not exist"]}));
    create(&app, json!({"destination": "1.1.1.1", "user_id": 7}))
        .await
        .expect_errors(json!({"user_id": ["is invalid"]}));

    for range in [json!(80), json!([80, 90])] {
        create(&app, json!({"destination": "1.1.1.1", "port_type": "tcp", "port_range": range}))
            .await
            .expect_errors(json!({"port_range": ["is invalid"]}));
    }
    let ignored = create(&app, json!({"destination": "9.9.9.9", "protocol": "icmp"})).await;
    let id = ignored.expect_status(StatusCode::CREATED).id();
    app.delete(&format!("/v0/rules/{id}"), &app.admin).await.expect_status(StatusCode::NO_CONTENT);

    create(&app, json!({"destination": "10.0.0.0/8"})).await.expect_status(StatusCode::CREATED);
    create(&app, json!({"destination": "10.3.0.0/16"}))
        .await
        .expect_errors(json!({"destination": ["destination overlaps with an existing rule"]}));
    create(&app, json!({"destination": "10.3.0.0/16", "action": "accept"})).await.expect_status(StatusCode::CREATED);
    assert_eq!(app.list("/v0/rules").await.len(), 2);
}

#[tokio::test]
async fn only_admins_manage_rules() {
    let app = TestApp::new().await;
    let (_, token) = app.user("bob@example.com", "unprivileged").await;
    let id = create(&app, json!({"destination": "1.1.1.1"})).await.expect_status(StatusCode::CREATED).id();
    let path = format!("/v0/rules/{id}");
    app.get("/v0/rules", &token).await.expect_forbidden();
    app.get(&path, &token).await.expect_forbidden();
    app.post("/v0/rules", &token, json!({"rule": {"destination": "2.2.2.2"}})).await.expect_forbidden();
    app.patch(&path, &token, json!({"rule": {"action": "accept"}})).await.expect_forbidden();
    app.delete(&path, &token).await.expect_forbidden();
    assert_eq!(app.list("/v0/rules").await.len(), 1);
}
