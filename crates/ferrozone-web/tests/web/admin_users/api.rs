//! `GET /v0/users` with `limit`, `page_cursor` and `q`; `GET` and `DELETE
//! /v0/users/{id}/sessions`.

use axum::http::StatusCode;
use serde_json::json;

use super::users_created_together;
use crate::helpers::TestApp;
use crate::signin::{password_user, Browser, PASSWORD};

#[tokio::test]
async fn without_parameters_the_list_is_as_before() {
    let app = TestApp::new().await;
    app.user("one@example.com", "unprivileged").await;
    let res = app.get("/v0/users", &app.admin).await;
    res.expect_status(StatusCode::OK);
    assert_eq!(res.body.as_object().unwrap().keys().collect::<Vec<_>>(), ["data"]);
    assert_eq!(res.data().as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn pages_follow_the_cursor_and_search_matches_any_case() {
    let app = TestApp::new().await;
    let emails: Vec<String> = (0..5).map(|i| format!("same{i}@tie.example")).collect();
    let mut users = users_created_together(&app, &emails.iter().map(String::as_str).collect::<Vec<_>>()).await;
    users.sort_by_key(|u| u.id);
    let mut seen = Vec::new();
    let mut path = "/v0/users?q=TIE.example&limit=2".to_owned();
    loop {
        let res = app.get(&path, &app.admin).await;
        res.expect_status(StatusCode::OK);
        assert_eq!(res.body["metadata"]["limit"], 2);
        seen.extend(res.data().as_array().unwrap().iter().map(|u| u["email"].as_str().unwrap().to_owned()));
        match res.body["metadata"]["next_page_cursor"].as_str() {
            Some(cursor) => path = format!("/v0/users?q=TIE.example&limit=2&page_cursor={cursor}"),
            None => break,
        }
    }
    assert_eq!(seen, users.iter().map(|u| u.email.clone()).collect::<Vec<_>>());

    let res = app.get("/v0/users?q=", &app.admin).await;
    assert_eq!(res.body["metadata"], json!({"limit": 50, "next_page_cursor": null}));
    assert_eq!(res.data().as_array().unwrap().len(), 6);
    assert_eq!(app.list("/v0/users?q=%00").await.len(), 0);
    for bad in ["limit=0", "limit=1001", "limit=x", "page_cursor=nope"] {
        app.get(&format!("/v0/users?{bad}"), &app.admin).await.expect_bad_request();
    }
    let (_, token) = app.user("plain@example.com", "unprivileged").await;
    app.get("/v0/users?limit=0", &token).await.expect_forbidden();
}

#[tokio::test]
async fn an_admin_lists_and_ends_a_users_sessions() {
    let app = TestApp::new().await;
    let id = password_user(&app, "away@example.com", "unprivileged").await;
    let mut browser = Browser::new(&app);
    browser.sign_in("away@example.com", PASSWORD, "/").await.expect_status(StatusCode::SEE_OTHER);
    let path = format!("/v0/users/{id}/sessions");
    let res = app.get(&path, &app.admin).await;
    res.expect_status(StatusCode::OK);
    let sessions = res.data().as_array().unwrap();
    assert_eq!(sessions.len(), 1);
    let mut keys: Vec<_> = sessions[0].as_object().unwrap().keys().cloned().collect();
    keys.sort();
    assert_eq!(keys, ["expires_at", "id", "inserted_at"]);

    let (_, token) = app.user("plain@example.com", "unprivileged").await;
    app.get(&path, &token).await.expect_forbidden();
    app.delete(&path, &token).await.expect_forbidden();
    browser.get("/").await.expect_status(StatusCode::OK);

    app.delete("/v0/users/AWAY@example.com/sessions", &app.admin).await.expect_status(StatusCode::NO_CONTENT);
    assert_eq!(app.list(&path).await.len(), 0);
    assert_eq!(browser.get("/").await.status, StatusCode::SEE_OTHER);
    app.get("/v0/users/nobody@example.com/sessions", &app.admin).await.expect_not_found();
    app.delete(&format!("/v0/users/{}/sessions", uuid::Uuid::now_v7()), &app.admin).await.expect_not_found();
}
