//! Disabling and enabling users: `POST /v0/users/{id}/disable` and `/enable`, Ferrozone's
//! own operations; `disabled_at` is read-only in `PATCH`/`PUT` (docs/design/users.md,
//! "Users and admins").

use axum::http::{Method, StatusCode};
use ferrozone_domain::Principal;
use serde_json::{json, Value};

use crate::helpers::{assert_timestamp, concurrently, json_request, TestApp, TestResponse};
use crate::signin::{password_user, Browser, PASSWORD};

/// `POST /v0/users/{key}/{action}` (`disable` or `enable`), without a body.
async fn switch(app: &TestApp, token: &str, key: &str, action: &str) -> TestResponse {
    app.request(Method::POST, &format!("/v0/users/{key}/{action}"), Some(token), None).await
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

    let disabled = switch(&app, &app.admin, &id, "disable").await.expect_status(StatusCode::OK).data().clone();
    assert_timestamp(&disabled["disabled_at"]);
    assert_eq!(disabled["disabled_by"], "admin");
    assert!(disabled.get("disabled_by_provider").is_none(), "only a provider is named");
    assert!(disabled["updated_at"].as_str() > before["updated_at"].as_str());
    assert_eq!(app.show_user(&id).await, disabled, "the reply is the user as GET gives it");
    app.get("/v0/devices", &token).await.expect_auth_error("user_disabled");
    assert!(!peer_keys(&app).await.contains(&key), "its device left the peers");

    // Disabling a disabled user answers it as it is, its first time kept, by id or email.
    switch(&app, &app.admin, "Leaves@Example.com", "disable").await.expect(StatusCode::OK, json!({"data": disabled}));

    let enabled = switch(&app, &app.admin, &id, "enable").await.expect_status(StatusCode::OK).data().clone();
    assert_eq!(enabled["disabled_at"], Value::Null);
    assert_eq!(enabled.get("disabled_by"), None, "an enabled user's JSON is as before");
    assert_eq!(app.show_user(&id).await, enabled);
    app.get("/v0/devices", &token).await.expect_status(StatusCode::OK);
    assert!(peer_keys(&app).await.contains(&key), "its device is back");
    switch(&app, &app.admin, "leaves@example.com", "enable").await.expect(StatusCode::OK, json!({"data": enabled}));
}

#[tokio::test]
async fn disabling_ends_the_users_sessions_and_its_devices_leave() {
    let app = TestApp::new().await;
    let id = password_user(&app, "sessions@example.com", "unprivileged").await;
    let key = app.device(&id).await["public_key"].as_str().unwrap().to_owned();
    let mut browser = Browser::new(&app);
    browser.sign_in("sessions@example.com", PASSWORD, "/").await.expect_status(StatusCode::SEE_OTHER);
    let sessions = format!("/v0/users/{id}/sessions");
    assert_eq!(app.get(&sessions, &app.admin).await.expect_status(StatusCode::OK).data().as_array().unwrap().len(), 1);

    switch(&app, &app.admin, &id, "disable").await.expect_status(StatusCode::OK);
    app.get(&sessions, &app.admin).await.expect(StatusCode::OK, json!({"data": []}));
    assert!(!peer_keys(&app).await.contains(&key), "its device left the peers");
    let page = browser.get("/").await;
    assert_eq!(page.status, StatusCode::SEE_OTHER, "the browser is signed out");
}

#[tokio::test]
async fn a_patch_or_put_carrying_disabled_at_changes_nothing() {
    let app = TestApp::new().await;
    let (id, token) = app.user("kept@example.com", "unprivileged").await;
    let enabled = app.show_user(&id).await;
    let path = format!("/v0/users/{id}");
    // What a Terraform apply or any Firezone client may send: a timestamp, `true`, junk.
    for value in [json!("2001-02-03T04:05:06.000000Z"), json!(true), json!("soon"), json!(1), json!({})] {
        let body = json!({"user": {"disabled_at": value}});
        app.patch(&path, &app.admin, body.clone()).await.expect(StatusCode::OK, json!({"data": enabled}));
        app.put(&path, &app.admin, body).await.expect(StatusCode::OK, json!({"data": enabled}));
    }
    app.get("/v0/devices", &token).await.expect_status(StatusCode::OK);

    let disabled = switch(&app, &app.admin, &id, "disable").await.expect_status(StatusCode::OK).data().clone();
    for value in [json!(null), json!(false)] {
        let body = json!({"user": {"disabled_at": value}});
        app.patch(&path, &app.admin, body.clone()).await.expect(StatusCode::OK, json!({"data": disabled}));
        app.put(&path, &app.admin, body).await.expect(StatusCode::OK, json!({"data": disabled}));
    }
    app.get("/v0/devices", &token).await.expect_auth_error("user_disabled");
    // The other attributes of such an update still apply.
    let body = json!({"user": {"disabled_at": null, "role": "admin"}});
    let changed = app.patch(&path, &app.admin, body).await.expect_status(StatusCode::OK).data().clone();
    assert_eq!((&changed["role"], &changed["disabled_at"]), (&json!("admin"), &disabled["disabled_at"]));
}

#[tokio::test]
async fn who_disabled_a_user_is_kept_until_it_is_enabled() {
    let app = TestApp::new().await;
    let (id, _) = app.user("operator@example.com", "unprivileged").await;
    let (user, _) = app.domain.set_user_disabled(&Principal::operator(), "operator@example.com", true).await.unwrap();
    let shown = app.show_user(&id).await;
    assert_eq!((&shown["disabled_by"], user.disabled_at.is_some()), (&json!("cli"), true));
    let sent = json!({"user": {"disabled_by": "admin", "disabled_by_provider": "x"}});
    app.patch(&format!("/v0/users/{id}"), &app.admin, sent).await.expect(StatusCode::OK, json!({"data": shown}));
    let again = switch(&app, &app.admin, &id, "disable").await.expect_status(StatusCode::OK).data().clone();
    assert_eq!(again, shown, "disabling again through the API keeps the first reason");
    let listed = app.get("/v0/users", &app.admin).await.expect_status(StatusCode::OK).data().clone();
    let row = listed.as_array().unwrap().iter().find(|u| u["id"] == id.as_str()).unwrap().clone();
    assert_eq!(row, shown, "the list shows it too");

    switch(&app, &app.admin, &id, "enable").await.expect_status(StatusCode::OK);
    let (_, changed) =
        app.domain.set_user_disabled(&Principal::operator(), "operator@example.com", true).await.unwrap();
    assert!(changed);
    switch(&app, &app.admin, &id, "enable").await.expect_status(StatusCode::OK);
    switch(&app, &app.admin, &id, "disable").await.expect_status(StatusCode::OK);
    assert_eq!(app.show_user(&id).await["disabled_by"], "admin", "enabling cleared the old reason");
}

#[tokio::test]
async fn only_admins_disable_and_never_themselves() {
    let app = TestApp::new().await;
    let (id, token) = app.user("plain@example.com", "unprivileged").await;
    for target in [id.as_str(), app.admin_id.as_str(), "ghost@example.com"] {
        for action in ["disable", "enable"] {
            switch(&app, &token, target, action).await.expect_forbidden();
        }
    }
    let res = switch(&app, &app.admin, &app.admin_id, "disable").await;
    res.expect_errors(json!({"base": ["You cannot disable yourself"]}));
    // Enabling oneself is a no-op, allowed (a disabled caller is refused before).
    switch(&app, &app.admin, &app.admin_id, "enable").await.expect_status(StatusCode::OK);
    app.get("/v0/devices", &token).await.expect_status(StatusCode::OK);
    assert_eq!(app.show_user(&app.admin_id).await["disabled_at"], Value::Null);
    app.request(Method::POST, &format!("/v0/users/{id}/disable"), None, None)
        .await
        .expect_auth_error("unauthenticated");
}

#[tokio::test]
async fn an_unknown_or_malformed_id_is_not_found_and_other_methods_are_refused() {
    let app = TestApp::new().await;
    let (id, _) = app.user("kept@example.com", "unprivileged").await;
    let before = app.show_user(&id).await;
    let unknown =
        ["ghost@example.com", "00000000-0000-4000-8000-000000000001", "not-a-uuid", "%FF%FE", "kept%40example.com%00"];
    for key in unknown {
        for action in ["disable", "enable"] {
            switch(&app, &app.admin, key, action).await.expect_not_found();
        }
    }
    for method in [Method::GET, Method::PUT, Method::DELETE] {
        let res = app.request(method.clone(), &format!("/v0/users/{id}/disable"), Some(&app.admin), None).await;
        assert_eq!(res.status, StatusCode::METHOD_NOT_ALLOWED, "{method}");
    }
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
    let requests = vec![
        json_request(Method::POST, &format!("/v0/users/{other}/disable"), Some(&app.admin), None),
        json_request(Method::POST, &format!("/v0/users/{}/disable", app.admin_id), Some(&other_token), None),
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
