//! Users: delete, its cascade, and the last admin.

use std::collections::BTreeSet;

use axum::http::{Method, StatusCode};
use ferrozone_domain::input::{Patch, UserChanges};
use ferrozone_domain::{DomainError, Principal, Role};
use serde_json::{json, Value};

use crate::helpers::{concurrently, json_request, TestApp, TestResponse};

const LAST_ADMIN: &str = "cannot remove the last admin";

#[tokio::test]
async fn delete_by_id_or_email() {
    let app = TestApp::new().await;
    for (email, key) in [("by-id@example.com", None), ("by-email@example.com", Some("BY-EMAIL@example.com"))] {
        let (id, _) = app.user(email, "unprivileged").await;
        let path = format!("/v0/users/{}", key.unwrap_or(&id));
        app.delete(&path, &app.admin).await.expect_status(StatusCode::NO_CONTENT);
        app.get(&format!("/v0/users/{id}"), &app.admin).await.expect_not_found();
        app.get(&format!("/v0/users/{email}"), &app.admin).await.expect_not_found();
        app.delete(&path, &app.admin).await.expect_not_found();
    }
    assert_eq!(app.list_ids("/v0/users").await, std::slice::from_ref(&app.admin_id));
}

#[tokio::test]
async fn deleting_a_user_deletes_its_devices_and_tokens() {
    let app = TestApp::new().await;
    let (gone, token) = app.user("gone@example.com", "unprivileged").await;
    let (kept, kept_token) = app.user("kept@example.com", "unprivileged").await;
    let doomed = [app.device(&gone).await, app.device(&gone).await];
    let survivor = app.device(&kept).await;
    app.get("/v0/devices", &token).await.expect_status(StatusCode::OK);

    app.delete(&format!("/v0/users/{gone}"), &app.admin).await.expect_status(StatusCode::NO_CONTENT);
    for device in &doomed {
        app.get(&format!("/v0/devices/{}", device["id"].as_str().unwrap()), &app.admin).await.expect_not_found();
    }
    assert_eq!(app.list(&format!("/v0/devices?user_id={gone}")).await, Vec::<Value>::new());
    assert_eq!(app.list("/v0/devices").await, std::slice::from_ref(&survivor));
    app.get("/v0/devices", &token).await.expect_auth_error("invalid_token");
    assert!(app.store.list_tokens(gone.parse().unwrap()).await.unwrap().is_empty());
    app.get("/v0/devices", &kept_token).await.expect(StatusCode::OK, json!({"data": [survivor]}));

    // The freed public key and addresses can be used again.
    let reused = json!({"public_key": doomed[0]["public_key"], "ipv4": doomed[0]["ipv4"], "ipv6": doomed[0]["ipv6"]});
    let device = app.device_with(&kept, reused.clone()).await;
    assert_eq!(
        (&device["public_key"], &device["ipv4"], &device["ipv6"]),
        (&reused["public_key"], &reused["ipv4"], &reused["ipv6"])
    );
}

#[tokio::test]
async fn an_admin_may_delete_itself_unless_it_is_the_last() {
    let app = TestApp::new().await;
    let last = json!({"errors": {"base": [LAST_ADMIN]}});
    for key in [app.admin_id.as_str(), "admin@localhost"] {
        let res = app.delete(&format!("/v0/users/{key}"), &app.admin).await;
        res.expect(StatusCode::UNPROCESSABLE_ENTITY, last.clone());
    }
    app.get("/v0/users", &app.admin).await.expect_status(StatusCode::OK);

    let (second, token) = app.user("second@example.com", "admin").await;
    app.delete(&format!("/v0/users/{second}"), &token).await.expect_status(StatusCode::NO_CONTENT);
    app.get("/v0/users", &token).await.expect_auth_error("invalid_token");
    let (second, _) = app.user("second@example.com", "admin").await;
    app.delete("/v0/users/admin@localhost", &app.admin).await.expect_status(StatusCode::NO_CONTENT);
    app.get("/v0/users", &app.admin).await.expect_auth_error("invalid_token");
    assert_eq!(app.store.count_admins().await.unwrap(), 1);
    assert!(app.domain.find_user(&second).await.is_ok());
}

#[tokio::test]
async fn the_last_admin_cannot_be_demoted() {
    // Through HTTP the only admin can only act on itself, where the own-role rule answers
    // first; the rule itself is checked through the operator (command line) path.
    let app = TestApp::new().await;
    let demote = json!({"role": "unprivileged"});
    let changes = UserChanges { role: Patch::Value(Role::Unprivileged), ..UserChanges::default() };
    let demoted = app.domain.update_user(&Principal::operator(), "admin@localhost", &changes).await;
    assert_eq!(errors_of(demoted), json!({"base": [LAST_ADMIN]}));
    let deleted = app.domain.delete_user(&Principal::operator(), &app.admin_id).await;
    assert_eq!(errors_of(deleted), json!({"base": [LAST_ADMIN]}));
    assert_eq!(app.show_user(&app.admin_id).await["role"], "admin");

    // With a second admin, demoting one is fine; then the other is the last.
    let (second, token) = app.user("second@example.com", "admin").await;
    let res = app.patch(&format!("/v0/users/{second}"), &app.admin, json!({"user": demote})).await;
    res.expect_status(StatusCode::OK);
    app.delete("/v0/users/admin@localhost", &token).await.expect_forbidden();
}

/// The validation errors of a use case's result, as the API would show them.
fn errors_of<T: std::fmt::Debug>(result: Result<T, DomainError>) -> Value {
    match result {
        Err(DomainError::Invalid(errors)) => serde_json::to_value(errors).unwrap(),
        other => panic!("expected validation errors, got {other:?}"),
    }
}

/// Two admins act on each other at the same time; `op` builds the request on `target`.
async fn race(app: &TestApp, op: impl Fn(&str) -> (Method, String, Option<Value>)) -> Vec<TestResponse> {
    let (second, token) = app.user("second@example.com", "admin").await;
    let pairs = [(app.admin.clone(), second), (token, app.admin_id.clone())];
    let requests = pairs
        .iter()
        .map(|(actor, target)| {
            let (method, path, body) = op(target);
            json_request(method, &path, Some(actor), body.as_ref())
        })
        .collect();
    concurrently(app, requests).await
}

/// Exactly one request of the race won, and one admin is left.
async fn assert_one_admin_left(app: &TestApp, responses: &[TestResponse], success: StatusCode) {
    let statuses: BTreeSet<u16> = responses.iter().map(|r| r.status.as_u16()).collect();
    assert!(responses.iter().filter(|r| r.status == success).count() == 1, "{responses:?}");
    for loser in responses.iter().filter(|r| r.status != success) {
        // It lost on the last-admin rule, or it was no longer an admin (or no longer existed).
        let ok = [
            json!({"errors": {"base": [LAST_ADMIN]}}),
            json!({"error": "forbidden"}),
            json!({"errors": {"auth": "invalid_token"}}),
        ];
        assert!(ok.contains(&loser.body), "{statuses:?} {}", loser.body);
    }
    assert_eq!(app.store.count_admins().await.unwrap(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_admins_demoting_each_other_leave_one_admin() {
    let app = TestApp::new().await;
    let responses = race(&app, |target| {
        (Method::PATCH, format!("/v0/users/{target}"), Some(json!({"user": {"role": "unprivileged"}})))
    })
    .await;
    assert_one_admin_left(&app, &responses, StatusCode::OK).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_admins_deleting_each_other_leave_one_admin() {
    let app = TestApp::new().await;
    let responses = race(&app, |target| (Method::DELETE, format!("/v0/users/{target}"), None)).await;
    assert_one_admin_left(&app, &responses, StatusCode::NO_CONTENT).await;
}
