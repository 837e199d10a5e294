//! `/scim/v2` through HTTP, against a real router and a fresh migrated database: SQLite by
//! default, PostgreSQL when `FERROZONE_TEST_DATABASE_URL` is set. The bodies are the shapes
//! Okta and Microsoft Entra ID send (from their public SCIM documentation).

#![allow(clippy::unwrap_used)]

mod discovery;
mod groups;
mod users;

use axum::Router;
use ferrozone_domain::Principal;
use ferrozone_http::testing::{Faces, TestResponse};
use ferrozone_http::AppState;
use serde_json::{json, Value};

/// The SCIM face alone.
pub struct ScimFace;

impl Faces for ScimFace {
    fn routes() -> Router<AppState> {
        ferrozone_scim::routes().fallback(ferrozone_http::error::not_found)
    }
}

pub type TestApp = ferrozone_http::testing::TestApp<ScimFace>;

/// An app and a provisioning token for it.
pub async fn provisioned() -> (TestApp, String) {
    let app = TestApp::new().await;
    let (_, secret) = app.domain.create_scim_token(&Principal::operator(), "directory").await.unwrap();
    (app, secret.to_string())
}

/// An Okta-shaped user.
pub fn okta_user(user_name: &str, external_id: &str) -> Value {
    json!({
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
        "userName": user_name,
        "name": {"givenName": "Alice", "familyName": "Anders"},
        "emails": [{"primary": true, "value": user_name, "type": "work"}],
        "displayName": "Alice Anders",
        "externalId": external_id,
        "locale": "en-US",
        "groups": [],
        "password": "never-kept-1",
        "active": true,
    })
}

/// `{"Operations": operations}` as a PatchOp.
pub fn patch_op(operations: Value) -> Value {
    json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], "Operations": operations})
}

/// Asserts `res` is a SCIM error with this status and `scimType`.
#[track_caller]
pub fn assert_scim_error(res: &TestResponse, status: u16, scim_type: Option<&str>) {
    assert_eq!(res.status.as_u16(), status, "{}", res.body);
    assert_eq!(res.body["schemas"], json!(["urn:ietf:params:scim:api:messages:2.0:Error"]), "{}", res.body);
    assert_eq!(res.body["status"], json!(status.to_string()));
    assert_eq!(res.body["scimType"].as_str(), scim_type, "{}", res.body);
    assert!(res.body["detail"].as_str().is_some_and(|d| !d.is_empty()), "{}", res.body);
}

/// The user with `id` as `/v0/users` would show it, read through the domain.
pub async fn ferrozone_user(app: &TestApp, id: &str) -> ferrozone_domain::User {
    app.domain.find_user(id).await.unwrap()
}

/// A device of user `id`, made through the use case (this face serves no `/v0`).
pub async fn device(app: &TestApp, id: &str) {
    let input = ferrozone_domain::input::NewDevice {
        user_id: Some(id.to_owned()),
        public_key: Some(ferrozone_http::testing::key()),
        ..Default::default()
    };
    app.domain.create_device(&Principal::operator(), &input).await.unwrap();
}
