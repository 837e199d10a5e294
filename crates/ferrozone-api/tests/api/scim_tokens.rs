//! `/v0/scim_tokens`: the provisioning tokens, admin only.

use serde_json::json;

use crate::helpers::TestApp;

#[tokio::test]
async fn admins_create_list_and_revoke_provisioning_tokens() {
    let app = TestApp::new().await;
    let created = app.post("/v0/scim_tokens", &app.admin, json!({"scim_token": {"name": " Okta "}})).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let token = &created.body["data"];
    assert_eq!(token["name"], "Okta");
    assert_eq!(token["created_by"], app.admin_id.as_str());
    let secret = token["token"].as_str().unwrap();
    assert!(secret.starts_with("fzscim_") && secret.len() == 7 + 43, "{secret}");
    assert_eq!(app.get("/v0/users", secret).await.status, 401, "a provisioning token is no API token");

    let listed = app.get("/v0/scim_tokens", &app.admin).await;
    assert_eq!(listed.body["data"].as_array().unwrap().len(), 1);
    assert!(listed.body["data"][0].get("token").is_none(), "the secret is shown once");
    assert!(!listed.raw.windows(secret.len()).any(|w| w == secret.as_bytes()));

    let id = token["id"].as_str().unwrap();
    let revoked = app.delete(&format!("/v0/scim_tokens/{id}"), &app.admin).await;
    assert_eq!(revoked.status, 200, "{}", revoked.body);
    let at = revoked.body["data"]["revoked_at"].clone();
    assert!(at.is_string());
    assert_eq!(
        app.delete(&format!("/v0/scim_tokens/{id}"), &app.admin).await.body["data"]["revoked_at"],
        at,
        "the first time stays"
    );
    assert_eq!(app.delete("/v0/scim_tokens/01a2353f-0000-7000-8000-000000000000", &app.admin).await.status, 404);
}

#[tokio::test]
async fn only_admins_manage_provisioning_tokens_and_a_name_is_required() {
    let app = TestApp::new().await;
    let (_, user) = app.user("u@example.com", "unprivileged").await;
    assert_eq!(app.get("/v0/scim_tokens", &user).await.status, 403);
    assert_eq!(app.post("/v0/scim_tokens", &user, json!({"scim_token": {"name": "x"}})).await.status, 403);
    let blank = app.post("/v0/scim_tokens", &app.admin, json!({"scim_token": {"name": " "}})).await;
    assert_eq!((blank.status.as_u16(), blank.body["errors"]["name"].clone()), (422, json!(["can't be blank"])));
    let wrong = app.post("/v0/scim_tokens", &app.admin, json!({"scim_token": {"name": 3}})).await;
    assert_eq!(wrong.status, 422);
    assert_eq!(app.post("/v0/scim_tokens", &app.admin, json!({"name": "x"})).await.status, 400);
}
