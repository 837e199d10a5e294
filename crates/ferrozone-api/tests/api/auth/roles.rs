//! docs/api.md section 3: what admin and unprivileged tokens may do.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{key, TestApp};

const UNKNOWN_ID: &str = "6f1c2b9e-3d4a-4c5b-9e8f-0a1b2c3d4e5f";

fn id(value: &Value) -> String {
    value["id"].as_str().expect("an id").to_owned()
}

#[tokio::test]
async fn unprivileged_tokens_get_403_on_every_users_operation() {
    let app = TestApp::new().await;
    let (me, token) = app.user("me@example.com", "unprivileged").await;
    let before = app.list("/v0/users").await;
    let valid = json!({"user": {"email": "new@example.com", "role": "admin"}});
    let mut cases =
        vec![(Method::GET, "/v0/users".to_owned(), None), (Method::POST, "/v0/users".to_owned(), Some(valid.clone()))];
    for target in [
        me.as_str(),
        "me@example.com",
        app.admin_id.as_str(),
        "admin@localhost",
        UNKNOWN_ID,
        "nobody@example.com",
        "junk",
    ] {
        let path = format!("/v0/users/{target}");
        cases.push((Method::GET, path.clone(), None));
        cases.push((Method::PATCH, path.clone(), Some(json!({"user": {"role": "admin"}}))));
        cases.push((Method::PUT, path.clone(), Some(json!({"user": {"email": "taken@example.com"}}))));
        cases.push((Method::DELETE, path, None));
    }
    for (method, path, body) in cases {
        let res = app.request(method.clone(), &path, Some(&token), body).await;
        assert_eq!(res.status, StatusCode::FORBIDDEN, "{method} {path}");
        res.expect_forbidden();
    }
    assert_eq!(app.list("/v0/users").await, before, "nothing changed");
}

#[tokio::test]
async fn unprivileged_tokens_list_only_their_own_devices() {
    let app = TestApp::new().await;
    let (me, token) = app.user("me@example.com", "unprivileged").await;
    let (other, _) = app.user("other@example.com", "unprivileged").await;
    let mine = [id(&app.device(&me).await), id(&app.device(&other).await), id(&app.device(&me).await)];
    app.device(&app.admin_id).await;
    let own = vec![mine[0].clone(), mine[2].clone()];
    let listed = |path: String| {
        let app = &app;
        let token = token.clone();
        async move {
            let res = app.get(&path, &token).await;
            res.expect_status(StatusCode::OK);
            res.data().as_array().unwrap().iter().map(id).collect::<Vec<_>>()
        }
    };
    assert_eq!(listed("/v0/devices".into()).await, own);
    assert_eq!(listed(format!("/v0/devices?user_id={me}")).await, own);
    assert_eq!(listed(format!("/v0/devices?user_id={other}")).await, Vec::<String>::new());
    assert_eq!(listed(format!("/v0/devices?user_id={}", app.admin_id)).await, Vec::<String>::new());
    assert_eq!(listed("/v0/devices?limit=1".into()).await, own[..1]);
    assert_eq!(app.list("/v0/devices").await.len(), 4, "admins see every device");
}

#[tokio::test]
async fn another_users_device_is_404_for_unprivileged_tokens() {
    let app = TestApp::new().await;
    let (_, token) = app.user("me@example.com", "unprivileged").await;
    let (other, _) = app.user("other@example.com", "unprivileged").await;
    for owner in [other, app.admin_id.clone()] {
        let device = app.device(&owner).await;
        let path = format!("/v0/devices/{}", id(&device));
        app.get(&path, &token).await.expect_not_found();
        app.patch(&path, &token, json!({"device": {"name": "stolen"}})).await.expect_not_found();
        app.put(&path, &token, json!({"device": {"user_id": "x"}})).await.expect_not_found();
        app.delete(&path, &token).await.expect_not_found();
        assert_eq!(app.show_device(&id(&device)).await, device, "unchanged");
    }
}

#[tokio::test]
async fn unprivileged_tokens_manage_their_own_devices() {
    let app = TestApp::new().await;
    let (me, token) = app.user("me@example.com", "unprivileged").await;
    let res = app.post("/v0/devices", &token, json!({"device": {"public_key": key()}})).await;
    assert_eq!(res.expect_status(StatusCode::CREATED).data()["user_id"], me.as_str(), "user_id defaults to the caller");
    let res = app.post("/v0/devices", &token, json!({"device": {"public_key": key(), "user_id": me}})).await;
    let device = res.expect_status(StatusCode::CREATED).data().clone();
    let path = format!("/v0/devices/{}", id(&device));
    app.get(&path, &token).await.expect(StatusCode::OK, json!({"data": device}));
    let res =
        app.patch(&path, &token, json!({"device": {"name": "laptop", "use_default_mtu": false, "mtu": 1400}})).await;
    assert_eq!(
        (&res.expect_status(StatusCode::OK).data()["name"], &res.data()["mtu"]),
        (&json!("laptop"), &json!(1400))
    );
    let res = app.patch(&path, &token, json!({"device": {"user_id": app.admin_id}})).await;
    res.expect_errors(json!({"user_id": ["cannot be changed"]}));
    app.delete(&path, &token).await.expect_status(StatusCode::NO_CONTENT);
    app.get(&path, &token).await.expect_not_found();
    assert_eq!(app.list_ids(&format!("/v0/devices?user_id={me}")).await.len(), 1);
}

#[tokio::test]
async fn unprivileged_tokens_cannot_create_devices_for_others() {
    let app = TestApp::new().await;
    let (_, token) = app.user("me@example.com", "unprivileged").await;
    let (other, _) = app.user("other@example.com", "unprivileged").await;
    for owner in [other.as_str(), app.admin_id.as_str(), UNKNOWN_ID] {
        let res = app.post("/v0/devices", &token, json!({"device": {"public_key": key(), "user_id": owner}})).await;
        res.expect_forbidden();
    }
    assert!(app.list("/v0/devices").await.is_empty(), "nothing created");
}

#[tokio::test]
async fn a_tokens_rights_follow_its_owners_current_role() {
    let app = TestApp::new().await;
    let (second, token) = app.user("second@example.com", "admin").await;
    let (other, _) = app.user("other@example.com", "unprivileged").await;
    let others_device = id(&app.device(&other).await);
    app.get("/v0/users", &token).await.expect_status(StatusCode::OK);
    app.get(&format!("/v0/devices/{others_device}"), &token).await.expect_status(StatusCode::OK);

    let demote = json!({"user": {"role": "unprivileged"}});
    app.patch(&format!("/v0/users/{second}"), &app.admin, demote).await.expect_status(StatusCode::OK);
    app.get("/v0/users", &token).await.expect_forbidden();
    app.get(&format!("/v0/devices/{others_device}"), &token).await.expect_not_found();
    let res = app.get("/v0/devices", &token).await;
    assert_eq!(res.expect_status(StatusCode::OK).data(), &json!([]));

    let promote = json!({"user": {"role": "admin"}});
    app.patch(&format!("/v0/users/{second}"), &app.admin, promote).await.expect_status(StatusCode::OK);
    app.get("/v0/users", &token).await.expect_status(StatusCode::OK);
}

#[tokio::test]
async fn admin_tokens_manage_every_users_devices() {
    let app = TestApp::new().await;
    let (other, token) = app.user("other@example.com", "unprivileged").await;
    let device = app.device(&other).await;
    let path = format!("/v0/devices/{}", id(&device));
    let res = app.patch(&path, &app.admin, json!({"device": {"description": "by admin"}})).await;
    assert_eq!(res.expect_status(StatusCode::OK).data()["description"], "by admin");
    app.get(&path, &token).await.expect_status(StatusCode::OK);
    app.delete(&path, &app.admin).await.expect_status(StatusCode::NO_CONTENT);
    app.get(&path, &token).await.expect_not_found();
}
