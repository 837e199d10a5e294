//! Disabling and enabling users through `PATCH /v0/users/{id}` with `disabled_at`
//! (docs/api.md section 8, "Users and admins").

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{assert_timestamp, concurrently, json_request, TestApp};

async fn set(app: &TestApp, token: &str, key: &str, disabled_at: Value) -> crate::helpers::TestResponse {
    app.patch(&format!("/v0/users/{key}"), token, json!({"user": {"disabled_at": disabled_at}})).await
}

/// The public keys of the devices the data plane should have as peers.
async fn peer_keys(app: &TestApp) -> Vec<String> {
    let peers = app.domain.active_peers().await.expect("active peers");
    peers.into_iter().map(|p| p.public_key).collect()
}

#[tokio::test]
async fn an_admin_disables_and_enables_a_user() {
    let app = TestApp::new().await;
    let (id, token) = app.user("leaves@example.com", "unprivileged").await;
    let key = app.device(&id).await["public_key"].as_str().unwrap().to_owned();
    let before = app.show_user(&id).await;
    assert!(peer_keys(&app).await.contains(&key));

    let sent = "2001-02-03T04:05:06.000000Z";
    let res = set(&app, &app.admin, &id, json!(sent)).await;
    let disabled = res.expect_status(StatusCode::OK).data().clone();
    assert_timestamp(&disabled["disabled_at"]);
    assert_ne!(disabled["disabled_at"], sent, "the stored time is the server's");
    assert_eq!(disabled["disabled_by"], "admin");
    assert!(disabled.get("disabled_by_provider").is_none(), "only a provider is named");
    assert!(disabled["updated_at"].as_str() > before["updated_at"].as_str());
    assert_eq!(app.show_user(&id).await, disabled);
    app.get("/v0/devices", &token).await.expect_auth_error("user_disabled");
    assert!(!peer_keys(&app).await.contains(&key), "its device left the peers");

    // Disabling a disabled user keeps its first time, by id or email.
    for again in [json!(true), json!("2030-01-01T00:00:00Z")] {
        set(&app, &app.admin, "Leaves@Example.com", again).await.expect(StatusCode::OK, json!({"data": disabled}));
    }

    for enable in [json!(null), json!(false)] {
        let enabled = set(&app, &app.admin, &id, enable).await.expect_status(StatusCode::OK).data().clone();
        assert_eq!(enabled["disabled_at"], Value::Null);
        assert_eq!(enabled.get("disabled_by"), None, "an enabled user's JSON is as before");
        app.get("/v0/devices", &token).await.expect_status(StatusCode::OK);
        assert!(peer_keys(&app).await.contains(&key), "its device is back");
        set(&app, &app.admin, &id, json!(true)).await.expect_status(StatusCode::OK);
    }
}

#[tokio::test]
async fn who_disabled_a_user_is_kept_until_it_is_enabled() {
    let app = TestApp::new().await;
    let (id, _) = app.user("operator@example.com", "unprivileged").await;
    let (user, _) = app.domain.set_user_disabled("operator@example.com", true).await.unwrap();
    let shown = app.show_user(&id).await;
    assert_eq!((&shown["disabled_by"], user.disabled_at.is_some()), (&json!("cli"), true));
    let sent = json!({"user": {"disabled_by": "admin", "disabled_by_provider": "x"}});
    app.patch(&format!("/v0/users/{id}"), &app.admin, sent).await.expect(StatusCode::OK, json!({"data": shown}));
    let again = set(&app, &app.admin, &id, json!(true)).await.expect_status(StatusCode::OK).data().clone();
    assert_eq!(again, shown, "disabling again through the API keeps the first reason");
    let listed = app.get("/v0/users", &app.admin).await.expect_status(StatusCode::OK).data().clone();
    let row = listed.as_array().unwrap().iter().find(|u| u["id"] == id.as_str()).unwrap().clone();
    assert_eq!(row, shown, "the list shows it too");

    set(&app, &app.admin, &id, json!(false)).await.expect_status(StatusCode::OK);
    let (_, changed) = app.domain.set_user_disabled("operator@example.com", true).await.unwrap();
    assert!(changed);
    set(&app, &app.admin, &id, json!(null)).await.expect_status(StatusCode::OK);
    set(&app, &app.admin, &id, json!(true)).await.expect_status(StatusCode::OK);
    assert_eq!(app.show_user(&id).await["disabled_by"], "admin", "enabling cleared the old reason");
}

#[tokio::test]
async fn only_admins_disable_and_never_themselves() {
    let app = TestApp::new().await;
    let (id, token) = app.user("plain@example.com", "unprivileged").await;
    for target in [id.as_str(), app.admin_id.as_str()] {
        set(&app, &token, target, json!(true)).await.expect_forbidden();
    }
    let res = set(&app, &app.admin, &app.admin_id, json!(true)).await;
    res.expect_errors(json!({"disabled_at": ["You cannot disable yourself"]}));
    // Enabling oneself is a no-op, allowed (a disabled caller is refused before).
    set(&app, &app.admin, &app.admin_id, json!(null)).await.expect_status(StatusCode::OK);
    app.get("/v0/devices", &token).await.expect_status(StatusCode::OK);
    assert_eq!(app.show_user(&app.admin_id).await["disabled_at"], Value::Null);
}

#[tokio::test]
async fn a_malformed_disabled_at_is_invalid_and_changes_nothing() {
    let app = TestApp::new().await;
    let (id, _) = app.user("kept@example.com", "unprivileged").await;
    let before = app.show_user(&id).await;
    for value in [json!("yesterday"), json!(""), json!("2020-02-30T00:00:00Z"), json!(1), json!([]), json!({})] {
        let res = set(&app, &app.admin, &id, value.clone()).await;
        assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY, "{value}");
        res.expect_errors(json!({"disabled_at": ["is invalid"]}));
    }
    let both = json!({"user": {"disabled_at": "soon", "role": "root"}});
    let res = app.patch(&format!("/v0/users/{id}"), &app.admin, both).await;
    res.expect_errors(json!({"disabled_at": ["is invalid"], "role": ["is invalid"]}));
    assert_eq!(app.show_user(&id).await, before);
}

#[tokio::test]
async fn a_create_ignores_disabled_at() {
    let app = TestApp::new().await;
    let attrs = json!({"user": {"email": "new@example.com", "disabled_at": "whenever"}});
    let res = app.post("/v0/users", &app.admin, attrs).await;
    assert_eq!(res.expect_status(StatusCode::CREATED).data()["disabled_at"], Value::Null);
}

/// Two admins disabling each other at once: one wins, and an enabled admin is left.
#[tokio::test]
async fn two_admins_disabling_each_other_leave_one_enabled() {
    let app = TestApp::new().await;
    let (other, other_token) = app.user("second@example.com", "admin").await;
    let body = json!({"user": {"disabled_at": true}});
    let requests = vec![
        json_request(Method::PATCH, &format!("/v0/users/{other}"), Some(&app.admin), Some(&body)),
        json_request(Method::PATCH, &format!("/v0/users/{}", app.admin_id), Some(&other_token), Some(&body)),
    ];
    let responses = concurrently(&app, requests).await;
    let won: Vec<_> = responses.iter().filter(|r| r.status == StatusCode::OK).collect();
    assert_eq!(won.len(), 1, "{:?}", responses.iter().map(|r| &r.body).collect::<Vec<_>>());
    for lost in responses.iter().filter(|r| r.status != StatusCode::OK) {
        let last_admin = json!({"errors": {"base": ["cannot disable the last admin"]}});
        assert!(lost.status == StatusCode::UNAUTHORIZED || lost.body == last_admin, "{:?}", lost.body);
    }
    // Read from the store: the admin token may be the disabled one.
    let users = app.store.list_users().await.unwrap();
    assert_eq!(users.iter().filter(|u| u.disabled_at.is_none()).count(), 1);
}
