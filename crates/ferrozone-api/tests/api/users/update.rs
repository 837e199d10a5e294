//! Users: look-up by id or email, and partial updates.

use axum::http::StatusCode;
use serde_json::{json, Value};

use super::{assert_no_password, PASSWORD};
use crate::helpers::{assert_changed, expect_not_found_everywhere, TestApp};

async fn update(app: &TestApp, key: &str, attrs: Value) -> crate::helpers::TestResponse {
    app.patch(&format!("/v0/users/{key}"), &app.admin, json!({ "user": attrs })).await
}

#[tokio::test]
async fn users_are_found_by_id_or_case_insensitive_email() {
    let app = TestApp::new().await;
    let (id, _) = app.user("Found.Me@Example.com", "unprivileged").await;
    let by_id = app.show_user(&id).await;
    for key in ["Found.Me@Example.com", "found.me@example.com", "FOUND.ME@EXAMPLE.COM"] {
        assert_eq!(app.show_user(key).await, by_id, "{key}");
        let res = update(&app, key, json!({})).await;
        res.expect(StatusCode::OK, json!({"data": by_id}));
    }
}

#[tokio::test]
async fn an_empty_or_no_op_update_changes_nothing() {
    let app = TestApp::new().await;
    let (id, _) = app.user("same@example.com", "unprivileged").await;
    let before = app.show_user(&id).await;
    let no_ops = [
        json!({}),
        json!({"role": "unprivileged"}),
        json!({"email": "same@example.com"}),
        json!({"email": "  same@example.com  "}),
        json!({"password": null}),
        json!({"password": ""}),
        json!({"password": "", "password_confirmation": ""}),
        json!({"disabled_at": null}),
        json!({"disabled_at": false}),
        // Read-only (the specification): neither disables (POST /v0/users/{id}/disable does).
        json!({"disabled_at": true}),
        json!({"disabled_at": "2020-01-01T00:00:00.000000Z"}),
        json!({"last_signed_in_at": "2020-01-01T00:00:00.000000Z", "last_signed_in_method": "email",
            "id": app.admin_id}),
        json!({"inserted_at": "2020-01-01T00:00:00.000000Z", "updated_at": "2020-01-01T00:00:00.000000Z"}),
    ];
    for attrs in no_ops {
        update(&app, &id, attrs.clone()).await.expect(StatusCode::OK, json!({"data": before}));
        let put = app.put(&format!("/v0/users/{id}"), &app.admin, json!({"user": attrs})).await;
        put.expect(StatusCode::OK, json!({"data": before}));
    }
    assert_eq!(app.show_user(&id).await, before);
}

#[tokio::test]
async fn changes_to_other_users_are_stored_and_move_updated_at() {
    let app = TestApp::new().await;
    for (role, other) in [("unprivileged", "admin"), ("admin", "unprivileged")] {
        let (id, _) = app.user(&format!("{role}@example.com"), role).await;
        let new_email = format!("Changed-{role}@Example.com");
        let steps = [
            (json!({"role": other}), json!({"role": other})),
            (json!({"role": role}), json!({"role": role})),
            (json!({"email": format!(" {new_email} ")}), json!({"email": new_email})),
            (json!({"password": PASSWORD, "password_confirmation": PASSWORD}), json!({})),
            (json!({"password": "another-password-1", "password_confirmation": "another-password-1"}), json!({})),
        ];
        for (attrs, changed) in steps {
            let before = app.show_user(&id).await;
            let res = update(&app, &id, attrs.clone()).await;
            res.expect_status(StatusCode::OK);
            assert_no_password(&res.raw);
            assert_changed(&before, res.data(), &changed, true);
            assert_eq!(&app.show_user(&id).await, res.data(), "{attrs}");
        }
        app.get(&format!("/v0/users/{role}@example.com"), &app.admin).await.expect_not_found();
        assert_eq!(app.show_user(&new_email.to_lowercase()).await["id"], id.as_str());
    }
}

#[tokio::test]
async fn the_token_owner_cannot_change_its_own_role() {
    let app = TestApp::new().await;
    let (second, token) = app.user("second@example.com", "admin").await;
    let own_role = json!({"errors": {"role": ["You cannot change your own role"]}});
    for (key, token) in [
        (app.admin_id.as_str(), app.admin.as_str()),
        ("second@example.com", token.as_str()),
        (second.as_str(), token.as_str()),
    ] {
        let before = app.show_user(key).await;
        let path = format!("/v0/users/{key}");
        let res = app.patch(&path, token, json!({"user": {"role": "unprivileged"}})).await;
        res.expect(StatusCode::UNPROCESSABLE_ENTITY, own_role.clone());
        let res = app.put(&path, token, json!({"user": {"role": "admin"}})).await;
        res.expect(StatusCode::OK, json!({"data": before}));
        // Other attributes of one's own record may change.
        let res =
            app.patch(&path, token, json!({"user": {"password": PASSWORD, "password_confirmation": PASSWORD}})).await;
        res.expect_status(StatusCode::OK);
    }
    // Another admin may change an admin's role.
    update(&app, &second, json!({"role": "unprivileged"})).await.expect_status(StatusCode::OK);
    assert_eq!(app.show_user(&second).await["role"], "unprivileged");
}

#[tokio::test]
async fn an_admin_may_change_its_own_email() {
    let app = TestApp::new().await;
    let res = update(&app, "admin@localhost", json!({"email": "ADMIN@localhost"})).await;
    assert_eq!(res.expect_status(StatusCode::OK).data()["email"], "ADMIN@localhost");
    let res = update(&app, &app.admin_id, json!({"email": "root@example.com"})).await;
    assert_eq!(res.expect_status(StatusCode::OK).data()["email"], "root@example.com");
    app.get("/v0/users/root@example.com", &app.admin).await.expect_status(StatusCode::OK);
}

#[tokio::test]
async fn update_applies_the_create_rules() {
    let app = TestApp::new().await;
    let (id, _) = app.user("rules@example.com", "unprivileged").await;
    app.user("taken@example.com", "unprivileged").await;
    let before = app.show_user(&id).await;
    let cases = [
        (json!({"email": ""}), json!({"email": ["can't be blank"]})),
        (json!({"email": null}), json!({"email": ["can't be blank"]})),
        (json!({"email": "not-an-email"}), json!({"email": ["is invalid email address"]})),
        (json!({"email": "TAKEN@example.com"}), json!({"email": ["has already been taken"]})),
        (json!({"email": 42}), json!({"email": ["is invalid"]})),
        (json!({"role": null}), json!({"role": ["can't be blank"]})),
        (json!({"role": "owner"}), json!({"role": ["is invalid"]})),
        (
            json!({"password": "test1234"}),
            json!({"password": ["should be at least 12 character(s)"], "password_confirmation": ["can't be blank"]}),
        ),
        (
            json!({"password": "p".repeat(65), "password_confirmation": "p".repeat(65)}),
            json!({"password": ["should be at most 64 character(s)"]}),
        ),
        (
            json!({"password": PASSWORD, "password_confirmation": "different-password"}),
            json!({"password_confirmation": ["does not match confirmation"]}),
        ),
        (json!({"role": "admin", "email": "x"}), json!({"email": ["is invalid email address"]})),
    ];
    for (attrs, errors) in cases {
        update(&app, &id, attrs).await.expect_errors(errors);
    }
    assert_eq!(app.show_user(&id).await, before, "nothing was written");
}

#[tokio::test]
async fn unknown_users_are_404() {
    let app = TestApp::new().await;
    let huge = format!("{}@example.com", "x".repeat(10 * 1024));
    for key in [
        "6f1c2b9e-3d4a-4c5b-9e8f-0a1b2c3d4e5f",
        "nobody@example.com",
        "not-an-email",
        huge.as_str(),
        "%00",
        "admin%40localhost.evil",
    ] {
        expect_not_found_everywhere(&app, &format!("/v0/users/{key}"), "user").await;
    }
}
