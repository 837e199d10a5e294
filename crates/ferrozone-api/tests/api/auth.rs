//! docs/api.md section 3: bearer tokens. Roles are in `auth/roles.rs`.

mod roles;

use std::time::Duration;

use axum::http::{Method, StatusCode};
use ferrozone_domain::crypto::new_token;
use ferrozone_domain::{ApiToken, Role, Timestamp, User};
use serde_json::json;
use uuid::Uuid;

use crate::helpers::TestApp;

const UNKNOWN_ID: &str = "6f1c2b9e-3d4a-4c5b-9e8f-0a1b2c3d4e5f";

/// Every `/v0` operation, on ids that exist, do not exist, or are malformed.
fn operations(app: &TestApp, device: &str) -> Vec<(Method, String)> {
    let mut ops = vec![
        (Method::GET, "/v0/devices".to_owned()),
        (Method::POST, "/v0/devices".to_owned()),
        (Method::GET, "/v0/users".to_owned()),
        (Method::POST, "/v0/users".to_owned()),
    ];
    let ids = [
        format!("/v0/devices/{device}"),
        format!("/v0/devices/{UNKNOWN_ID}"),
        "/v0/devices/not-a-uuid".to_owned(),
        format!("/v0/users/{}", app.admin_id),
        format!("/v0/users/{UNKNOWN_ID}"),
        "/v0/users/nobody@example.com".to_owned(),
        "/v0/users/admin@localhost".to_owned(),
    ];
    for path in ids {
        for method in [Method::GET, Method::PATCH, Method::PUT, Method::DELETE] {
            ops.push((method, path.clone()));
        }
    }
    ops
}

/// Sends every operation with this `Authorization` header (or none) and expects `reason`.
async fn expect_everywhere(app: &TestApp, authorization: Option<&str>, reason: &str) {
    let device = app.list_ids("/v0/devices").await.pop().expect("a device");
    for (method, path) in operations(app, &device) {
        let mut headers = vec![("content-type", "application/json")];
        headers.extend(authorization.map(|value| ("authorization", value)));
        let body = if method == Method::POST || method == Method::PATCH || method == Method::PUT {
            br#"{"device": {}, "user": {}}"#.to_vec()
        } else {
            Vec::new()
        };
        let res = app.raw(method.clone(), &path, &headers, body).await;
        assert_eq!(res.status, StatusCode::UNAUTHORIZED, "{method} {path} with {authorization:?}: {}", res.body);
        res.expect_auth_error(reason);
    }
    assert_eq!(app.counts().await, (1, 1), "nothing changed");
}

#[tokio::test]
async fn a_missing_or_non_bearer_authorization_is_unauthenticated() {
    let app = TestApp::new().await;
    app.device(&app.admin_id).await;
    let token = app.admin.clone();
    let basic = format!("Basic {token}");
    let glued = format!("Bearer{token}");
    let bare = token.clone();
    let other = format!("Token {token}");
    for authorization in [
        None,
        Some("Basic x"),
        Some("Bearer"),
        Some("Bearer "),
        Some("bearer:"),
        Some(""),
        Some(basic.as_str()),
        Some(glued.as_str()),
        Some(bare.as_str()),
        Some(other.as_str()),
    ] {
        expect_everywhere(&app, authorization, "unauthenticated").await;
    }
}

#[tokio::test]
async fn unknown_and_malformed_tokens_are_invalid() {
    let app = TestApp::new().await;
    app.device(&app.admin_id).await;
    let (never_stored, _) = new_token();
    let admin = app.admin.clone();
    let tokens = [
        "garbage".to_owned(),
        "fz_".to_owned(),
        "fz_unknown".to_owned(),
        never_stored.to_string(),
        format!("{admin}x"),
        admin[..admin.len() - 1].to_owned(),
        admin.to_uppercase(),
        admin.replacen("fz_", "FZ_", 1),
        admin.replacen("fz_", "", 1),
        format!("{admin} {admin}"),
    ];
    for token in tokens {
        expect_everywhere(&app, Some(&format!("Bearer {token}")), "invalid_token").await;
    }
}

/// Stores a token for `user_id` that expires at `expires_at`; returns its secret.
async fn stored_token(app: &TestApp, user_id: &str, expires_at: Timestamp) -> String {
    let (secret, hash) = new_token();
    let now = Timestamp::now();
    let token = ApiToken {
        id: Uuid::now_v7(),
        user_id: user_id.parse().unwrap(),
        name: "test".into(),
        token_hash: hash.to_vec(),
        inserted_at: now.plus_days(-30),
        expires_at,
        last_used_at: None,
    };
    app.store.insert_token(&token).await.expect("token stored");
    secret.to_string()
}

#[tokio::test]
async fn expired_tokens_are_invalid() {
    let app = TestApp::new().await;
    app.device(&app.admin_id).await;
    let valid = stored_token(&app, &app.admin_id, Timestamp::now().plus_secs(3600)).await;
    app.get("/v0/users", &valid).await.expect_status(StatusCode::OK);
    for expired_at in [Timestamp::now().plus_secs(-1), Timestamp::now().plus_days(-1), Timestamp::from_secs(0)] {
        let expired = stored_token(&app, &app.admin_id, expired_at).await;
        expect_everywhere(&app, Some(&format!("Bearer {expired}")), "invalid_token").await;
    }
}

#[tokio::test]
async fn revoked_tokens_are_invalid_and_others_keep_working() {
    let app = TestApp::new().await;
    app.device(&app.admin_id).await;
    let kept = app.token("admin@localhost").await;
    let (revoked, secret) = app.domain.create_token("admin@localhost", Some("to-revoke"), Some(1)).await.unwrap();
    let secret = secret.to_string();
    app.get("/v0/users", &secret).await.expect_status(StatusCode::OK);
    app.domain.revoke_token(revoked.id).await.unwrap();
    assert!(app.domain.list_tokens("admin@localhost").await.unwrap().iter().all(|t| t.id != revoked.id));
    expect_everywhere(&app, Some(&format!("Bearer {secret}")), "invalid_token").await;
    app.get("/v0/users", &kept).await.expect_status(StatusCode::OK);
    app.get("/v0/users", &app.admin).await.expect_status(StatusCode::OK);
}

#[tokio::test]
async fn the_scheme_is_case_insensitive_and_may_carry_a_colon() {
    let app = TestApp::new().await;
    let token = &app.admin;
    for form in
        ["bearer {t}", "BEARER {t}", "Bearer: {t}", "bearer:  {t}", "Bearer   {t}", "Bearer {t} ", "BeArEr\t{t}"]
    {
        let value = form.replace("{t}", token);
        let res = app.raw(Method::GET, "/v0/users", &[("authorization", value.as_str())], Vec::new()).await;
        assert_eq!(res.status, StatusCode::OK, "{form}");
    }
}

#[tokio::test]
async fn a_disabled_users_token_is_refused() {
    let app = TestApp::new().await;
    for (email, role) in [("off@example.com", Role::Unprivileged), ("off-admin@example.com", Role::Admin)] {
        let now = Timestamp::now();
        let user = User { disabled_at: Some(now), ..User::new(email.into(), role, None, now) };
        app.store.insert_user(&user).await.expect("user stored");
        let token = app.token(email).await;
        app.device(&user.id.to_string()).await;
        for path in ["/v0/devices", "/v0/users", &format!("/v0/users/{}", user.id)] {
            app.get(path, &token).await.expect_auth_error("user_disabled");
        }
        let res = app.post("/v0/devices", &token, json!({"device": {"public_key": crate::helpers::key()}})).await;
        res.expect_auth_error("user_disabled");
        // Still visible, and shown as disabled, to an admin.
        assert!(app.show_user(email).await["disabled_at"].is_string());
    }
    assert_eq!(app.list("/v0/devices").await.len(), 2, "no device created with a refused token");
}

#[tokio::test]
async fn disabling_and_enabling_a_user_refuses_and_restores_its_tokens() {
    let app = TestApp::new().await;
    let (id, token) = app.user("off@example.com", "unprivileged").await;
    let before = app.show_user(&id).await;
    let (user, changed) =
        app.domain.set_user_disabled(&ferrozone_domain::Principal::operator(), "Off@Example.com", true).await.unwrap();
    assert!(changed && user.disabled_at.is_some());
    app.get("/v0/devices", &token).await.expect_auth_error("user_disabled");
    let disabled = app.show_user(&id).await;
    assert!(disabled["disabled_at"].is_string() && disabled["updated_at"] != before["updated_at"], "{disabled}");

    let (again, changed) =
        app.domain.set_user_disabled(&ferrozone_domain::Principal::operator(), "off@example.com", true).await.unwrap();
    assert!(!changed);
    assert_eq!(again, user, "disabling twice keeps the first disabled_at and updated_at");
    assert_eq!(app.show_user(&id).await, disabled);

    let (enabled, changed) =
        app.domain.set_user_disabled(&ferrozone_domain::Principal::operator(), "off@example.com", false).await.unwrap();
    assert!(changed && enabled.disabled_at.is_none());
    app.get("/v0/devices", &token).await.expect_status(StatusCode::OK);
    assert!(
        !app.domain
            .set_user_disabled(&ferrozone_domain::Principal::operator(), "off@example.com", false)
            .await
            .unwrap()
            .1
    );
    for unknown in ["ghost@example.com", "nul\0@example.com"] {
        let res = app.domain.set_user_disabled(&ferrozone_domain::Principal::operator(), unknown, true).await;
        assert!(matches!(res, Err(ferrozone_domain::DomainError::NotFound)), "{res:?}");
    }
}

#[tokio::test]
async fn token_use_is_recorded_coarsely_off_the_request_path() {
    let app = TestApp::new().await;
    let (token, secret) = app.domain.create_token("admin@localhost", Some("use"), None).await.unwrap();
    let last_used = || async {
        let tokens = app.domain.list_tokens("admin@localhost").await.unwrap();
        tokens.into_iter().find(|t| t.id == token.id).unwrap().last_used_at
    };
    assert_eq!(last_used().await, None);
    app.get("/v0/devices", &secret).await.expect_status(StatusCode::OK);
    // The write runs after the answer: wait for it (bounded), then it stays.
    let first = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let Some(at) = last_used().await {
                return at;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the first use is recorded");
    app.get("/v0/devices", &secret).await.expect_status(StatusCode::OK);
    app.get("/v0/devices", &secret).await.expect_status(StatusCode::OK);
    assert_eq!(last_used().await, Some(first), "not written again within a minute");
}

#[tokio::test]
async fn tokens_are_opaque_stored_as_hashes_and_expire_in_30_days_by_default() {
    let app = TestApp::new().await;
    let url_safe = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
    assert!(app.admin.starts_with("fz_") && app.admin.len() == 3 + 43, "fz_ + 256 bits: {}", app.admin);
    assert!(app.admin.bytes().skip(3).all(url_safe));
    let (token, secret) = app.domain.create_token("admin@localhost", Some("ci"), None).await.unwrap();
    let stored = app.store.list_tokens(token.user_id).await.unwrap();
    let stored = stored.iter().find(|t| t.id == token.id).unwrap();
    assert_eq!(stored.token_hash, ferrozone_domain::crypto::hash_token(&secret).to_vec());
    assert_eq!(stored.name, "ci");
    assert_eq!(stored.expires_at.micros() - stored.inserted_at.micros(), 30 * 86_400 * 1_000_000);
    assert!(app.domain.create_token("admin@localhost", None, Some(365)).await.is_ok());
    for days in [0, 366] {
        assert!(app.domain.create_token("admin@localhost", None, Some(days)).await.is_err(), "{days} days");
    }
}
