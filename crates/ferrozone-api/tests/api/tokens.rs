//! Issue 19: personal API tokens through `/v0/tokens`: created with a name and a lifetime
//! (the secret shown once), listed with the last use, revoked; the caller's own, any for
//! an admin.

use axum::http::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{is_api_timestamp, sorted, TestApp};

async fn create(app: &TestApp, token: &str, attrs: Value) -> crate::helpers::TestResponse {
    app.post("/v0/tokens", token, json!({ "token": attrs })).await
}

fn list_ids(list: &Value) -> Vec<&str> {
    list["data"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn a_token_is_created_shown_once_used_listed_and_revoked() {
    let app = TestApp::new().await;
    let (_, alice) = app.user("alice@example.com", "unprivileged").await;
    let res = create(&app, &alice, json!({"name": "  laptop  ", "expires_in_days": 7})).await;
    let data = res.expect_status(StatusCode::CREATED).data().clone();
    let keys: Vec<String> = data.as_object().unwrap().keys().cloned().collect();
    let expected = ["expires_at", "id", "inserted_at", "last_used_at", "name", "secret", "user_id"];
    assert_eq!(sorted(&keys.iter().map(String::as_str).collect::<Vec<_>>()), sorted(&expected));
    assert_eq!((&data["name"], &data["last_used_at"]), (&json!("laptop"), &Value::Null));
    assert!(is_api_timestamp(data["expires_at"].as_str().unwrap()));
    let secret = data["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("fz_"));

    // The new secret works, and the token is listed without it (nor its hash).
    app.get("/v0/devices", &secret).await.expect_status(StatusCode::OK);
    let list = app.get("/v0/tokens", &secret).await;
    let list = list.expect_status(StatusCode::OK).body.clone();
    assert_eq!(list_ids(&list).len(), 2, "the helper's token and the new one: {list}");
    assert!(!list.to_string().contains(&secret[3..]), "the secret is never shown again");
    assert!(list["data"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t.get("secret").is_none() && t.get("token_hash").is_none()));

    let id = data["id"].as_str().unwrap();
    let revoked = app.delete(&format!("/v0/tokens/{id}"), &alice).await;
    assert_eq!((revoked.status, revoked.raw.len()), (StatusCode::NO_CONTENT, 0));
    app.get("/v0/devices", &secret).await.expect_auth_error("invalid_token");
    app.delete(&format!("/v0/tokens/{id}"), &alice).await.expect_not_found();
    app.delete("/v0/tokens/not-a-uuid", &alice).await.expect_not_found();
}

#[tokio::test]
async fn the_expiry_defaults_to_the_configured_days_and_is_bounded() {
    let app = TestApp::new().await;
    let res = create(&app, &app.admin, json!({"name": "ci"})).await;
    let data = res.expect_status(StatusCode::CREATED).data().clone();
    let stored = app.domain.list_tokens("admin@localhost").await.unwrap();
    let stored = stored.iter().find(|t| t.id.to_string() == data["id"]).unwrap();
    assert_eq!(stored.expires_at.micros() - stored.inserted_at.micros(), 30 * 86_400 * 1_000_000);
    for days in [json!(0), json!(366), json!(-1)] {
        create(&app, &app.admin, json!({"name": "ci", "expires_in_days": days}))
            .await
            .expect_errors(json!({"expires_in_days": ["must be between 1 and 365"]}));
    }
    create(&app, &app.admin, json!({"name": "ci", "expires_in_days": 365})).await.expect_status(StatusCode::CREATED);
}

#[tokio::test]
async fn bad_input_is_a_clear_error() {
    let app = TestApp::new().await;
    create(&app, &app.admin, json!({})).await.expect_errors(json!({"name": ["can't be blank"]}));
    create(&app, &app.admin, json!({"name": "   "})).await.expect_errors(json!({"name": ["can't be blank"]}));
    create(&app, &app.admin, json!({"name": "x".repeat(65)}))
        .await
        .expect_errors(json!({"name": ["should be at most 64 character(s)"]}));
    create(&app, &app.admin, json!({"name": "é".repeat(64)})).await.expect_status(StatusCode::CREATED);
    create(&app, &app.admin, json!({"name": 5, "expires_in_days": "7"}))
        .await
        .expect_errors(json!({"name": ["is invalid"], "expires_in_days": ["is invalid"]}));
    app.post("/v0/tokens", &app.admin, json!({"name": "flat"})).await.expect_bad_request();
    app.get("/v0/tokens?user_id=nope", &app.admin).await.expect_bad_request();
}

#[tokio::test]
async fn a_user_holds_at_most_50_tokens() {
    let app = TestApp::new().await;
    let (_, bob) = app.user("bob@example.com", "unprivileged").await;
    for n in 1..50 {
        create(&app, &bob, json!({"name": format!("t{n}")})).await.expect_status(StatusCode::CREATED);
    }
    create(&app, &bob, json!({"name": "one too many"}))
        .await
        .expect_errors(json!({"base": ["a user may have at most 50 tokens; revoke one first"]}));
    create(&app, &app.admin, json!({"name": "others are not limited by bob's"}))
        .await
        .expect_status(StatusCode::CREATED);
}

#[tokio::test]
async fn another_users_tokens_are_an_admins_to_see_and_revoke() {
    let app = TestApp::new().await;
    let (alice_id, alice) = app.user("alice@example.com", "unprivileged").await;
    let (_, bob) = app.user("bob@example.com", "unprivileged").await;
    let alices = create(&app, &alice, json!({"name": "alice's"})).await.data()["id"].as_str().unwrap().to_owned();

    // Bob sees only his own and cannot touch Alice's: it does not exist for him.
    let bobs = app.get("/v0/tokens", &bob).await.body.clone();
    assert!(!list_ids(&bobs).contains(&alices.as_str()));
    app.get(&format!("/v0/tokens?user_id={alice_id}"), &bob).await.expect_forbidden();
    app.delete(&format!("/v0/tokens/{alices}"), &bob).await.expect_not_found();

    // The admin lists and revokes them.
    let listed = app.get(&format!("/v0/tokens?user_id={alice_id}"), &app.admin).await;
    assert!(list_ids(&listed.expect_status(StatusCode::OK).body).contains(&alices.as_str()));
    let unknown = uuid::Uuid::now_v7();
    app.get(&format!("/v0/tokens?user_id={unknown}"), &app.admin).await.expect_not_found();
    app.delete(&format!("/v0/tokens/{alices}"), &app.admin).await.expect_status(StatusCode::NO_CONTENT);
    let after = app.get(&format!("/v0/tokens?user_id={alice_id}"), &app.admin).await.body.clone();
    assert!(!list_ids(&after).contains(&alices.as_str()));
    // Alice's own listing with her own id is allowed.
    app.get(&format!("/v0/tokens?user_id={alice_id}"), &alice).await.expect_status(StatusCode::OK);
}

#[tokio::test]
async fn tokens_need_a_caller() {
    let app = TestApp::new().await;
    let res = app.request(axum::http::Method::GET, "/v0/tokens", None, None).await;
    res.expect_auth_error("unauthenticated");
}
