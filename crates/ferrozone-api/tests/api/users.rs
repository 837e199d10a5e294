//! docs/api.md section 4: `/v0/users`. Create and its rules here; see `users/*.rs`.

mod authorization;
mod delete;
mod update;

use axum::http::StatusCode;
use serde_json::{json, Value};

use crate::helpers::TestApp;

pub const PASSWORD: &str = "correct-horse-battery";

/// `POST /v0/users` as admin with `{"user": attrs}`.
async fn create(app: &TestApp, attrs: Value) -> crate::helpers::TestResponse {
    app.post("/v0/users", &app.admin, json!({ "user": attrs })).await
}

/// Asserts that a response body mentions no password (nor a password hash).
#[track_caller]
pub fn assert_no_password(raw: &[u8]) {
    let text = String::from_utf8_lossy(raw).to_lowercase();
    assert!(!text.contains("password") && !text.contains("argon2"), "{text}");
}

#[tokio::test]
async fn create_with_password_email_only_or_as_admin() {
    let app = TestApp::new().await;
    let cases = [
        (json!({"email": "pw@example.com", "password": PASSWORD, "password_confirmation": PASSWORD}), "unprivileged"),
        (json!({"email": "provider@example.com"}), "unprivileged"),
        (json!({"email": "boss@example.com", "role": "admin"}), "admin"),
        (
            json!({"email": "pw-admin@example.com", "role": "admin",
                "password": PASSWORD, "password_confirmation": PASSWORD}),
            "admin",
        ),
        (json!({"email": "explicit@example.com", "role": "unprivileged"}), "unprivileged"),
        (json!({"email": "null-role@example.com", "role": null}), "unprivileged"),
        (json!({"email": "null-pw@example.com", "password": null}), "unprivileged"),
        (json!({"email": "empty-pw@example.com", "password": ""}), "unprivileged"),
    ];
    for (attrs, role) in cases {
        let res = create(&app, attrs.clone()).await;
        let data = res.expect_status(StatusCode::CREATED).data().clone();
        assert_eq!((data["email"].as_str(), data["role"].as_str()), (attrs["email"].as_str(), Some(role)), "{attrs}");
        assert_eq!(res.header("location"), Some(format!("/v0/users/{}", res.id()).as_str()));
        assert_no_password(&res.raw);
        // The Location answers with the same user.
        let shown = app.get(res.header("location").unwrap(), &app.admin).await;
        shown.expect(StatusCode::OK, json!({ "data": data }));
    }
    assert_eq!(app.list("/v0/users").await.len(), 9);
}

#[tokio::test]
async fn emails_are_trimmed_and_kept_as_entered() {
    let app = TestApp::new().await;
    let res = create(&app, json!({"email": "  Mixed.Case@Example.COM \t"})).await;
    assert_eq!(res.expect_status(StatusCode::CREATED).data()["email"], "Mixed.Case@Example.COM");
}

#[tokio::test]
async fn email_is_required_and_must_look_like_an_address() {
    let app = TestApp::new().await;
    let blank = json!({"email": ["can't be blank"]});
    let invalid = json!({"email": ["is invalid email address"]});
    let long_local = format!("{}@example.com", "a".repeat(320 - 12));
    let too_long = format!("{}@example.com", "a".repeat(320 - 11));
    let huge = format!("{}@example.com", "x".repeat(10 * 1024));
    let cases = [
        (json!({}), &blank),
        (json!({"email": null}), &blank),
        (json!({"email": ""}), &blank),
        (json!({"email": "   "}), &blank),
        (json!({"email": "plain"}), &invalid),
        (json!({"email": "@example.com"}), &invalid),
        (json!({"email": "user@"}), &invalid),
        (json!({"email": "two@at@example.com"}), &invalid),
        (json!({"email": "white space@example.com"}), &invalid),
        (json!({"email": "tab\t@example.com"}), &invalid),
        (json!({"email": too_long}), &invalid),
        (json!({"email": huge}), &invalid),
    ];
    for (attrs, errors) in cases {
        create(&app, attrs).await.expect_errors(errors.clone());
    }
    for attrs in [json!({"email": 5}), json!({"email": ["a@b"]}), json!({"email": {"a": "b"}}), json!({"email": true})]
    {
        create(&app, attrs).await.expect_errors(json!({"email": ["is invalid"]}));
    }
    assert_eq!(app.list("/v0/users").await.len(), 1, "nothing created");
    create(&app, json!({"email": long_local})).await.expect_status(StatusCode::CREATED);
    create(&app, json!({"email": "new-user@test"})).await.expect_status(StatusCode::CREATED);
}

#[tokio::test]
async fn emails_are_unique_case_insensitively() {
    let app = TestApp::new().await;
    create(&app, json!({"email": "taken@example.com"})).await.expect_status(StatusCode::CREATED);
    for email in ["taken@example.com", "TAKEN@example.com", " Taken@Example.Com ", "admin@LOCALHOST"] {
        create(&app, json!({"email": email})).await.expect_errors(json!({"email": ["has already been taken"]}));
    }
    assert_eq!(app.list("/v0/users").await.len(), 2);
}

#[tokio::test]
async fn role_must_be_admin_or_unprivileged() {
    let app = TestApp::new().await;
    for role in [
        json!("superuser"),
        json!("Admin"),
        json!("ADMIN"),
        json!(""),
        json!(" admin"),
        json!(1),
        json!(true),
        json!(["admin"]),
    ] {
        let res = create(&app, json!({"email": "r@example.com", "role": role})).await;
        res.expect_errors(json!({"role": ["is invalid"]}));
    }
    assert_eq!(app.list("/v0/users").await.len(), 1);
}

#[tokio::test]
async fn password_length_and_confirmation_rules() {
    let app = TestApp::new().await;
    let at_least = json!(["should be at least 12 character(s)"]);
    let at_most = json!(["should be at most 64 character(s)"]);
    let blank = json!(["can't be blank"]);
    let mismatch = json!(["does not match confirmation"]);
    let p = |n: usize| "p".repeat(n);
    let cases = [
        (json!({"password": "test1234"}), json!({"password": at_least, "password_confirmation": blank})),
        (json!({"password": p(11), "password_confirmation": p(11)}), json!({"password": at_least})),
        (json!({"password": p(65), "password_confirmation": p(65)}), json!({"password": at_most})),
        (json!({"password": p(12)}), json!({"password_confirmation": blank})),
        (json!({"password": p(12), "password_confirmation": ""}), json!({"password_confirmation": blank})),
        (json!({"password": p(12), "password_confirmation": null}), json!({"password_confirmation": blank})),
        (json!({"password": p(12), "password_confirmation": p(13)}), json!({"password_confirmation": mismatch})),
        (
            json!({"password": p(5), "password_confirmation": "other"}),
            json!({"password": at_least, "password_confirmation": mismatch}),
        ),
        (
            json!({"password": 123_456_789_012_u64, "password_confirmation": "123456789012"}),
            json!({"password": ["is invalid"]}),
        ),
    ];
    for (attrs, errors) in cases {
        let mut attrs = attrs;
        attrs["email"] = json!("pw@example.com");
        create(&app, attrs).await.expect_errors(errors);
    }
    for ok in [p(12), p(64), "é".repeat(12), "🔑".repeat(64)] {
        let email = format!("{}@example.com", uuid::Uuid::new_v4());
        let res = create(&app, json!({"email": email, "password": ok, "password_confirmation": ok})).await;
        res.expect_status(StatusCode::CREATED);
        assert_no_password(&res.raw);
    }
}

#[tokio::test]
async fn firezones_invalid_create_gives_exactly_its_errors() {
    let app = TestApp::new().await;
    let res = create(&app, json!({"email": "test@test.com", "password": "test1234"})).await;
    assert_eq!(
        String::from_utf8(res.raw.clone()).unwrap(),
        r#"{"errors":{"password":["should be at least 12 character(s)"],"password_confirmation":["can't be blank"]}}"#
    );
    res.expect_status(StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn several_invalid_attributes_are_reported_together() {
    let app = TestApp::new().await;
    let res =
        create(&app, json!({"email": "nope", "role": "root", "password": "short", "password_confirmation": "x"})).await;
    res.expect_errors(json!({
        "email": ["is invalid email address"],
        "role": ["is invalid"],
        "password": ["should be at least 12 character(s)"],
        "password_confirmation": ["does not match confirmation"],
    }));
}

#[tokio::test]
async fn lists_every_user_and_never_a_password() {
    let app = TestApp::new().await;
    let mut ids = vec![app.admin_id.clone()];
    for i in 0..3 {
        let res = create(
            &app,
            json!({"email": format!("u{i}@example.com"), "password": PASSWORD, "password_confirmation": PASSWORD}),
        )
        .await;
        ids.push(res.expect_status(StatusCode::CREATED).id());
    }
    let res = app.get("/v0/users", &app.admin).await;
    res.expect_status(StatusCode::OK);
    let mut listed: Vec<String> =
        res.data().as_array().unwrap().iter().map(|u| u["id"].as_str().unwrap().to_owned()).collect();
    listed.sort();
    ids.sort();
    assert_eq!(listed, ids);
    assert_no_password(&res.raw);
}

#[tokio::test]
async fn passwords_are_stored_as_argon2id_hashes() {
    use ferrozone_domain::crypto::verify_password;
    let app = TestApp::new().await;
    let attrs = json!({"email": "pw@example.com", "password": PASSWORD, "password_confirmation": PASSWORD});
    let id = create(&app, attrs).await.expect_status(StatusCode::CREATED).id();
    let stored = || async { app.store.user_by_id(id.parse().unwrap()).await.unwrap().unwrap().password_hash };
    let hash = stored().await.unwrap();
    assert!(hash.starts_with("$argon2id$") && !hash.contains(PASSWORD), "{hash}");
    assert!(verify_password(PASSWORD, &hash));
    let new = "a-brand-new-password";
    let change = json!({"user": {"password": new, "password_confirmation": new}});
    app.patch(&format!("/v0/users/{id}"), &app.admin, change).await.expect_status(StatusCode::OK);
    let hash = stored().await.unwrap();
    assert!(verify_password(new, &hash) && !verify_password(PASSWORD, &hash));
    let provider_only = create(&app, json!({"email": "sso@example.com"})).await.id();
    let user = app.store.user_by_id(provider_only.parse().unwrap()).await.unwrap().unwrap();
    assert_eq!(user.password_hash, None);
}
