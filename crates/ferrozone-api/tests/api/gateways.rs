//! `/v0/gateways` and `POST /gateway/v1/enrol` (docs/design/gateways.md, "Registry and
//! enrolment"): an admin creates a gateway and gets its enrolment token once; the gateway
//! exchanges it once for its credential; revoking stops both; every event is audited
//! without a secret; bad input is a 422 and others are forbidden.

use axum::http::{Method, StatusCode};
use ferrozone_domain::audit::AuditQuery;
use serde_json::{json, Value};

use crate::helpers::{TestApp, TestResponse};

async fn create(app: &TestApp, attrs: Value) -> TestResponse {
    app.post("/v0/gateways", &app.admin, json!({ "gateway": attrs })).await
}

async fn enrol(app: &TestApp, body: Value) -> TestResponse {
    app.request(Method::POST, "/gateway/v1/enrol", None, Some(body)).await
}

#[tokio::test]
async fn a_gateway_enrols_once_and_its_credential_works_until_revoked() {
    let app = TestApp::new().await;
    let res = create(&app, json!({"name": "office", "enrolment_hours": 2})).await;
    let data = res.expect_status(StatusCode::CREATED).data().clone();
    let location = res.header("location").expect("a location").to_owned();
    let token = data["enrolment_token"].as_str().expect("the token").to_owned();
    assert!(token.starts_with("fzge_") && token.len() == 5 + 43, "{token}");
    assert_eq!((&data["status"], &data["enrolled_at"]), (&json!("awaiting_enrolment"), &Value::Null));
    let shown = app.get(&location, &app.admin).await.expect_status(StatusCode::OK).data().clone();
    assert!(shown.get("enrolment_token").is_none(), "never shown again: {shown}");

    let enrolled = enrol(&app, json!({"enrolment_token": token, "version": "0.1.0"})).await;
    assert_eq!(enrolled.header("cache-control"), Some("no-store"), "the answer carries a credential");
    let enrolled = enrolled.expect_status(StatusCode::CREATED).data().clone();
    let credential = enrolled["credential"].as_str().expect("the credential").to_owned();
    assert!(credential.starts_with("fzgw_"), "{credential}");
    assert_eq!((&enrolled["gateway_id"], &enrolled["name"]), (&data["id"], &json!("office")));
    let gateway = app.domain.authenticate_gateway(&credential).await.unwrap().expect("the credential works");
    assert_eq!(gateway.version.as_deref(), Some("0.1.0"));
    let shown = app.get(&location, &app.admin).await.data().clone();
    assert_eq!(
        (&shown["status"], &shown["version"], &shown["enrolment_expires_at"]),
        (&json!("enrolled"), &json!("0.1.0"), &Value::Null)
    );

    let again = enrol(&app, json!({"enrolment_token": token})).await;
    assert_eq!(again.status, StatusCode::UNAUTHORIZED, "single use");
    assert_eq!(app.delete(&location, &app.admin).await.status, StatusCode::NO_CONTENT);
    assert!(app.domain.authenticate_gateway(&credential).await.unwrap().is_none(), "revoked");
    app.delete(&location, &app.admin).await.expect_not_found();
    assert_eq!(app.list("/v0/gateways").await[0]["status"], json!("revoked"));

    let query = AuditQuery { after_seq: Some(0), action: Some("gateway.".into()), limit: 10, ..AuditQuery::default() };
    let records = app.store.audit_records(&query).await.expect("the audit log");
    let actions: Vec<&str> = records.iter().map(|r| r.action.as_str()).collect();
    assert_eq!(actions, ["gateway.created", "gateway.enrolled", "gateway.revoked"]);
    assert!(records.iter().all(|r| !r.changes.contains(&token) && !r.changes.contains(&credential)));
}

#[tokio::test]
async fn a_revoked_gateway_cannot_enrol_and_unknown_tokens_are_one_401() {
    let app = TestApp::new().await;
    let data = create(&app, json!({"name": "branch"})).await.expect_status(StatusCode::CREATED).data().clone();
    let token = data["enrolment_token"].as_str().unwrap().to_owned();
    let id = data["id"].as_str().unwrap();
    assert_eq!(app.delete(&format!("/v0/gateways/{id}"), &app.admin).await.status, StatusCode::NO_CONTENT);
    for body in [json!({"enrolment_token": token}), json!({"enrolment_token": "fzge_unknown"}), json!({})] {
        let res = enrol(&app, body).await;
        assert_eq!(res.status, StatusCode::UNAUTHORIZED, "{:?}", res.body);
    }
    enrol(&app, json!({"enrolment_token": 5})).await.expect_errors(json!({"enrolment_token": ["is invalid"]}));
    let long = "v".repeat(65);
    let fresh = create(&app, json!({"name": "branch 2"})).await.data()["enrolment_token"].as_str().unwrap().to_owned();
    enrol(&app, json!({"enrolment_token": fresh, "version": long}))
        .await
        .expect_errors(json!({"version": ["must be at most 64 printable characters"]}));
    assert!(
        enrol(&app, json!({"enrolment_token": fresh})).await.status == StatusCode::CREATED,
        "a refused version used nothing"
    );
}

#[tokio::test]
async fn bad_input_is_a_422_and_others_are_forbidden() {
    let app = TestApp::new().await;
    create(&app, json!({})).await.expect_errors(json!({"name": ["can't be blank"]}));
    create(&app, json!({"name": "x".repeat(65), "enrolment_hours": 0})).await.expect_errors(json!({
        "name": ["should be at most 64 character(s)"],
        "enrolment_hours": ["must be between 1 and 720"]
    }));
    create(&app, json!({"name": 5, "enrolment_hours": "soon"}))
        .await
        .expect_errors(json!({"name": ["is invalid"], "enrolment_hours": ["is invalid"]}));
    create(&app, json!({"name": "office"})).await.expect_status(StatusCode::CREATED);
    create(&app, json!({"name": "office"})).await.expect_errors(json!({"name": ["has already been taken"]}));
    let (_, token) = app.user("bob@example.com", "unprivileged").await;
    app.get("/v0/gateways", &token).await.expect_forbidden();
    app.post("/v0/gateways", &token, json!({"gateway": {"name": "mine"}})).await.expect_forbidden();
    app.get("/v0/gateways/not-a-uuid", &app.admin).await.expect_not_found();
    assert_eq!(app.list("/v0/gateways").await.len(), 1);
}
