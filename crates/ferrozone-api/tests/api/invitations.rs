//! `/v0/invitations`: an admin invites someone; the link is shown once, hashed at rest,
//! single use, revocable and refused after expiry; bad input is a 422 at its attribute.

use axum::http::StatusCode;
use ferrozone_domain::audit::AuditQuery;
use ferrozone_domain::crypto::hash_session_secret;
use ferrozone_domain::service::totp::PasswordChecked;
use ferrozone_domain::sign_in_link::{LinkInsert, LinkKind, SignInLink};
use ferrozone_domain::Timestamp;
use serde_json::{json, Value};

use crate::helpers::{TestApp, TestResponse};

const PASSWORD: &str = "a long enough password";

async fn invite(app: &TestApp, attrs: Value) -> TestResponse {
    app.post("/v0/invitations", &app.admin, json!({ "invitation": attrs })).await
}

/// The secret at the end of an invitation's link.
fn secret_of(data: &Value) -> String {
    let url = data["url"].as_str().expect("the link");
    assert!(url.starts_with("http://localhost:13000/sign_in/link/"), "{url}");
    url.rsplit('/').next().expect("a secret").to_owned()
}

#[tokio::test]
async fn an_invitation_creates_the_user_shows_its_link_once_and_is_revocable() {
    let app = TestApp::new().await;
    let res = invite(&app, json!({"email": "ada@example.com"})).await;
    let data = res.expect_status(StatusCode::CREATED).data().clone();
    let secret = secret_of(&data);
    assert_eq!(
        (&data["status"], &data["user_created"], &data["email_delivery"]),
        (&json!("pending"), &json!(true), &Value::Null)
    );
    assert_eq!(data["created_by"], json!(app.admin_id));
    let user = app.show_user("ada@example.com").await;
    assert_eq!((&user["role"], &user["id"]), (&json!("unprivileged"), &data["user_id"]));

    let again = invite(&app, json!({"email": "ADA@example.com", "role": "admin", "expires_in_hours": 2})).await;
    let again = again.expect_status(StatusCode::CREATED).data().clone();
    assert_eq!((&again["user_created"], &again["user_id"]), (&json!(false), &data["user_id"]));
    assert_eq!(
        app.show_user("ada@example.com").await["role"],
        json!("unprivileged"),
        "an existing user keeps its role"
    );

    let listed = app.list("/v0/invitations").await;
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[1]["id"], data["id"], "newest first");
    assert!(listed.iter().all(|i| i.get("url").is_none() && i.get("user_created").is_none()), "{listed:?}");
    let raw = app.get("/v0/invitations", &app.admin).await.raw;
    assert!(!raw.windows(secret.len()).any(|w| w == secret.as_bytes()), "the link is never listed");

    let location = format!("/v0/invitations/{}", data["id"].as_str().unwrap());
    assert_eq!(app.delete(&location, &app.admin).await.status, StatusCode::NO_CONTENT);
    app.delete(&location, &app.admin).await.expect_not_found();
    app.delete("/v0/invitations/not-a-uuid", &app.admin).await.expect_not_found();
    assert_eq!(app.list("/v0/invitations").await[1]["status"], json!("revoked"));
    assert!(app.domain.sign_in_with_link(&secret, Some((PASSWORD, PASSWORD))).await.unwrap().is_none(), "revoked");

    let query =
        AuditQuery { after_seq: Some(0), action: Some("invitation.".into()), limit: 10, ..AuditQuery::default() };
    let records = app.store.audit_records(&query).await.expect("the audit log");
    let actions: Vec<&str> = records.iter().map(|r| r.action.as_str()).collect();
    assert_eq!(actions, ["invitation.created", "invitation.created", "invitation.revoked"]);
    assert!(records.iter().all(|r| !r.changes.contains(&secret)));
}

#[tokio::test]
async fn a_link_signs_in_once_sets_the_password_and_is_refused_after() {
    let app = TestApp::new().await;
    let data =
        invite(&app, json!({"email": "grace@example.com"})).await.expect_status(StatusCode::CREATED).data().clone();
    let secret = secret_of(&data);
    let live = app.domain.live_sign_in_link(&secret).await.unwrap().expect("a live link");
    assert_eq!(live.1.email, "grace@example.com");

    let short = app.domain.sign_in_with_link(&secret, Some(("short", "short"))).await;
    assert!(short.is_err(), "a short password is refused before the link is used");
    let mismatch = app.domain.sign_in_with_link(&secret, Some((PASSWORD, "another long password"))).await;
    assert!(mismatch.is_err());
    let signed_in = app.domain.sign_in_with_link(&secret, Some((PASSWORD, PASSWORD))).await.unwrap();
    let Some(PasswordChecked::SignedIn(session)) = signed_in else { panic!("signed in") };
    assert_eq!(session.user.last_signed_in_method.as_deref(), None, "read before the sign-in was recorded");
    let user = app.show_user("grace@example.com").await;
    assert_eq!(user["last_signed_in_method"], json!("invitation"));
    assert!(
        app.domain.sign_in_with_password("grace@example.com", PASSWORD).await.unwrap().is_some(),
        "the password works"
    );

    assert!(app.domain.sign_in_with_link(&secret, None).await.unwrap().is_none(), "single use");
    assert!(app.domain.live_sign_in_link(&secret).await.unwrap().is_none());
    assert_eq!(app.list("/v0/invitations").await[0]["status"], json!("used"));
    assert!(app.domain.sign_in_with_link("not-a-link", None).await.unwrap().is_none());
}

#[tokio::test]
async fn an_expired_link_or_one_of_a_disabled_user_signs_nobody_in() {
    let app = TestApp::new().await;
    let (user_id, _) = app.user("linus@example.com", "unprivileged").await;
    let secret = "an-expired-link-secret-of-sufficient-length";
    let past = Timestamp::now().plus_secs(-60);
    let link = SignInLink {
        id: uuid::Uuid::now_v7(),
        user_id: user_id.parse().unwrap(),
        kind: LinkKind::Invitation,
        created_by: None,
        email_id: None,
        inserted_at: past.plus_secs(-3600),
        expires_at: past,
        used_at: None,
        revoked_at: None,
    };
    let insert = LinkInsert { link, secret_hash: hash_session_secret(secret).to_vec(), new_user: None, email: None };
    app.store.insert_sign_in_link(&insert).await.expect("insert an expired link");
    assert!(app.domain.sign_in_with_link(secret, None).await.unwrap().is_none());
    assert_eq!(app.list("/v0/invitations").await[0]["status"], json!("expired"));

    let fresh =
        invite(&app, json!({"email": "linus@example.com"})).await.expect_status(StatusCode::CREATED).data().clone();
    app.post(&format!("/v0/users/{user_id}/disable"), &app.admin, json!({})).await.expect_status(StatusCode::OK);
    assert!(app.domain.sign_in_with_link(&secret_of(&fresh), None).await.unwrap().is_none(), "the user is disabled");
    invite(&app, json!({"email": "linus@example.com"}))
        .await
        .expect_errors(json!({"email": ["belongs to a disabled user; enable the user first"]}));
}

#[tokio::test]
async fn bad_input_is_a_422_at_its_attribute_and_others_are_forbidden() {
    let app = TestApp::new().await;
    invite(&app, json!({})).await.expect_errors(json!({"email": ["can't be blank"]}));
    invite(&app, json!({"email": "not an email", "expires_in_hours": 0})).await.expect_errors(json!({
        "email": ["is invalid email address"],
        "expires_in_hours": ["must be between 1 and 720"]
    }));
    invite(&app, json!({"email": "a@example.com", "send_email": true})).await.expect_errors(json!({
        "send_email": ["cannot be sent: this server has no SMTP server configured (FERROZONE_SMTP_HOST)"]
    }));
    invite(&app, json!({"email": 5, "role": "boss", "send_email": "yes", "expires_in_hours": 1.5}))
        .await
        .expect_errors(json!({
            "email": ["is invalid"], "role": ["is invalid"], "send_email": ["is invalid"], "expires_in_hours": ["is invalid"]
        }));
    app.post("/v0/invitations", &app.admin, json!({"email": "a@example.com"})).await.expect_bad_request();
    let (_, token) = app.user("bob@example.com", "unprivileged").await;
    app.get("/v0/invitations", &token).await.expect_forbidden();
    app.post("/v0/invitations", &token, json!({"invitation": {"email": "x@example.com"}})).await.expect_forbidden();
    assert!(app.list("/v0/invitations").await.is_empty());
    assert!(app.domain.find_user("a@example.com").await.is_err(), "no user was created by a refused invitation");
}

#[tokio::test]
async fn with_an_smtp_server_an_invitation_is_queued_by_default() {
    let app = TestApp::with_settings(|s| s.email_enabled = true).await;
    let data =
        invite(&app, json!({"email": "margaret@example.com"})).await.expect_status(StatusCode::CREATED).data().clone();
    assert_eq!(data["email_delivery"], json!({"status": "queued", "attempts": 0, "sent_at": null, "last_error": null}));
    let listed = app.list("/v0/invitations").await;
    assert_eq!(listed[0]["email_delivery"]["status"], json!("queued"));
    let unsent = invite(&app, json!({"email": "katherine@example.com", "send_email": false})).await;
    assert_eq!(unsent.expect_status(StatusCode::CREATED).data()["email_delivery"], Value::Null);
}

#[tokio::test]
async fn signing_in_another_way_spends_a_pending_invitation() {
    let app = TestApp::new().await;
    let user = json!({"user": {"email": "hedy@example.com", "password": PASSWORD, "password_confirmation": PASSWORD}});
    app.post("/v0/users", &app.admin, user).await.expect_status(StatusCode::CREATED);
    let data =
        invite(&app, json!({"email": "hedy@example.com"})).await.expect_status(StatusCode::CREATED).data().clone();
    let secret = secret_of(&data);
    assert_eq!(app.list("/v0/invitations").await[0]["status"], json!("pending"));

    // Through an identity provider, say: any sign-in after the link was made.
    let signed_in = app.domain.sign_in_with_password("hedy@example.com", PASSWORD).await.unwrap();
    assert!(matches!(signed_in, Some(PasswordChecked::SignedIn(_))));
    assert!(app.domain.live_sign_in_link(&secret).await.unwrap().is_none(), "the link is spent");
    assert!(app.domain.sign_in_with_link(&secret, Some((PASSWORD, PASSWORD))).await.unwrap().is_none());
    let listed = app.list("/v0/invitations").await;
    assert_eq!((&listed[0]["status"], &listed[0]["used_at"]), (&json!("used"), &Value::Null));
}
