//! API tokens imported from Firezone: the source's JWTs keep working for their rows, and
//! for nothing else.

use axum::http::{Method, StatusCode};
use axum::Router;
use ferrozone_domain::crypto::legacy_token::sign;
use ferrozone_domain::import::{ImportBatch, ImportMode, ImportedToken, LEGACY_TOKEN_SECRET_SETTING};
use ferrozone_domain::model::Role;
use ferrozone_domain::{Timestamp, User};
use serde_json::json;
use uuid::Uuid;

use crate::helpers::{json_request, send, TestApp, TestResponse};

/// A Firezone `GUARDIAN_SECRET_KEY`: its literal bytes are the HMAC key.
const GUARDIAN_SECRET: &str = "c2VjcmV0IGtleSBvZiBhIEZpcmV6b25lIGluc3RhbGxhdGlvbiwgNDggYnl0ZXMgbG9uZw==";

/// An installation with one imported admin and two imported tokens of theirs (one
/// expired in Ferrozone's row only), and the secret that signed them.
struct Imported {
    user: User,
    token: Uuid,
    expired_row: Uuid,
    /// A process opened after the import, as `serve` is restarted after one.
    router: Router,
}

async fn import(app: &TestApp) -> Imported {
    let now = Timestamp::now();
    let user = User::new("fz-admin@example.com".into(), Role::Admin, None, now.plus_days(-100));
    let token = |expires_at: Timestamp| ImportedToken {
        id: Uuid::new_v4(),
        user_id: user.id,
        inserted_at: now.plus_days(-10),
        expires_at: Some(expires_at),
    };
    let (live, expired) = (token(now.plus_days(20)), token(now.plus_secs(-1)));
    let sealed = app.cipher().seal(GUARDIAN_SECRET.as_bytes());
    let batch = ImportBatch {
        users: vec![user.clone()],
        tokens: vec![live.clone(), expired.clone()],
        settings: vec![(LEGACY_TOKEN_SECRET_SETTING.into(), sealed.0)],
        ..ImportBatch::default()
    };
    let outcome = app.store.import(&batch, ImportMode::Merge).await.unwrap();
    assert_eq!((outcome.users, outcome.tokens), (1, 2), "{outcome:?}");
    let (router, _) = app.second_instance().await;
    Imported { user, token: live.id, expired_row: expired.id, router }
}

/// A Firezone-signed bearer string for token row `id` of `user`.
fn jwt(id: Uuid, user: &User) -> String {
    sign(GUARDIAN_SECRET.as_bytes(), id, user.id, Timestamp::now().plus_days(20))
}

async fn get(router: &Router, path: &str, token: &str) -> TestResponse {
    send(router.clone(), json_request(Method::GET, path, Some(token), None)).await
}

#[tokio::test]
async fn a_firezone_token_works_for_its_imported_row() {
    let app = TestApp::new().await;
    let fz = import(&app).await;
    let token = jwt(fz.token, &fz.user);
    get(&fz.router, "/v0/users", &token).await.expect_status(StatusCode::OK);
    get(&fz.router, "/v0/devices", &token).await.expect_status(StatusCode::OK);
    let device = app.device(&app.admin_id).await;
    let one = get(&fz.router, &format!("/v0/devices/{}", device["id"].as_str().unwrap()), &token).await;
    one.expect_status(StatusCode::OK);

    // The running process reads the secret again with the configuration.
    app.get("/v0/users", &token).await.expect_auth_error("invalid_token");
    app.domain.reload_configuration().await.unwrap();
    app.get("/v0/users", &token).await.expect_status(StatusCode::OK);

    // Listed as the owner's token, under its import name; revoking it ends it.
    let listed = app.get(&format!("/v0/tokens?user_id={}", fz.user.id), &app.admin).await;
    listed.expect_status(StatusCode::OK);
    assert_eq!(listed.data()[0]["name"], "Imported from Firezone");
    app.delete(&format!("/v0/tokens/{}", fz.token), &app.admin).await.expect_status(StatusCode::NO_CONTENT);
    get(&fz.router, "/v0/users", &token).await.expect_auth_error("invalid_token");
}

#[tokio::test]
async fn expired_forged_and_misdirected_firezone_tokens_are_refused() {
    let app = TestApp::new().await;
    let fz = import(&app).await;
    let secret = GUARDIAN_SECRET.as_bytes();
    let good = jwt(fz.token, &fz.user);
    let [header, payload, signature]: [&str; 3] = good.split('.').collect::<Vec<_>>().try_into().unwrap();

    let expired_jwt = sign(secret, fz.token, fz.user.id, Timestamp::now().plus_secs(-1));
    let b64 = |v: serde_json::Value| {
        use base64::Engine;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
    };
    let none = b64(json!({"alg": "none", "typ": "JWT"}));
    let other_row = b64(json!({"api": Uuid::new_v4().to_string(), "exp": 4_000_000_000i64, "iss": "fz_http"}));
    // A token Ferrozone issued: a JWT naming its id is not that token.
    let native = app.post("/v0/tokens", &app.admin, json!({"token": {"name": "native"}})).await;
    let native_id: Uuid = native.data()["id"].as_str().unwrap().parse().unwrap();

    let refused = [
        expired_jwt,
        jwt(fz.expired_row, &fz.user),
        sign(b"another installation's secret", fz.token, fz.user.id, Timestamp::now().plus_days(1)),
        format!("{none}.{payload}."),
        format!("{none}.{payload}.{signature}"),
        format!("{header}.{other_row}.{signature}"),
        format!("{header}.{payload}.{}", &signature[1..]),
        jwt(native_id, &fz.user),
        jwt(Uuid::new_v4(), &fz.user),
        format!("{good}{}", "A".repeat(4096)),
    ];
    for token in refused {
        get(&fz.router, "/v0/users", &token).await.expect_auth_error("invalid_token");
        get(&fz.router, &format!("/v0/devices/{}", Uuid::new_v4()), &token).await.expect_auth_error("invalid_token");
    }

    // The owner disabled: the same answer as for Ferrozone's own tokens.
    app.domain.set_user_disabled(&ferrozone_domain::Principal::operator(), "fz-admin@example.com", true).await.unwrap();
    get(&fz.router, "/v0/users", &good).await.expect_auth_error("user_disabled");
}

#[tokio::test]
async fn without_an_imported_secret_no_firezone_token_is_accepted() {
    let app = TestApp::new().await;
    let user = app.domain.find_user("admin@localhost").await.unwrap();
    let token = sign(GUARDIAN_SECRET.as_bytes(), Uuid::new_v4(), user.id, Timestamp::now().plus_days(1));
    app.get("/v0/users", &token).await.expect_auth_error("invalid_token");
}
