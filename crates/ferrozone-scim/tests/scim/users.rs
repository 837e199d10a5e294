//! `/scim/v2/Users`: provisioning, finding, changing and deprovisioning users.

use axum::http::Method;
use ferrozone_domain::audit::{ActorKind, AuditQuery};
use ferrozone_domain::model::DisabledBy;
use ferrozone_domain::Principal;
use ferrozone_http::testing::TestResponse;
use serde_json::json;

use crate::{assert_scim_error, ferrozone_user, okta_user, patch_op, provisioned};

#[tokio::test]
async fn only_an_unrevoked_provisioning_token_reaches_scim() {
    let (app, token) = provisioned().await;
    assert_scim_error(&app.request(Method::GET, "/scim/v2/Users", None, None).await, 401, None);
    assert_scim_error(&app.get("/scim/v2/Users", &app.admin).await, 401, None);
    assert_scim_error(&app.get("/scim/v2/Users", "fzscim_forged").await, 401, None);
    assert_eq!(app.get("/scim/v2/Users", &token).await.status, 200);

    let (made, other) = app.domain.create_scim_token(&Principal::operator(), "second").await.unwrap();
    assert_eq!(app.get("/scim/v2/Users", &other).await.status, 200);
    app.domain.revoke_scim_token(&Principal::operator(), made.id).await.unwrap();
    assert_scim_error(&app.get("/scim/v2/Users", &other).await, 401, None);
    assert_eq!(app.get("/scim/v2/Users", &token).await.status, 200, "the other token still works");
    let listed = app.domain.list_scim_tokens(&Principal::operator()).await.unwrap();
    assert!(listed.iter().all(|t| t.token_hash.len() == 32 && t.token_hash != other.as_bytes()), "hashed");
    assert!(listed.iter().any(|t| t.last_used_at.is_some()), "use is recorded");
}

#[tokio::test]
async fn okta_provisions_finds_and_reads_a_user() {
    let (app, token) = provisioned().await;
    let found =
        app.get("/scim/v2/Users?filter=userName%20eq%20%22alice%40example.com%22&startIndex=1&count=100", &token).await;
    assert_eq!((found.body["totalResults"].clone(), found.body["Resources"].clone()), (json!(0), json!([])));

    let created = app.post("/scim/v2/Users", &token, okta_user("alice@example.com", "00u1")).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.body["id"].as_str().unwrap().to_owned();
    assert_eq!(created.header("location").unwrap(), format!("http://localhost:13000/scim/v2/Users/{id}"));
    assert_eq!(created.body["userName"], "alice@example.com");
    assert_eq!(created.body["externalId"], "00u1");
    assert_eq!(
        created.body["name"],
        json!({"givenName": "Alice", "familyName": "Anders", "formatted": "Alice Anders"})
    );
    assert_eq!(created.body["emails"], json!([{"value": "alice@example.com", "type": "work", "primary": true}]));
    assert_eq!(
        (created.body["active"].clone(), created.body["meta"]["resourceType"].clone()),
        (json!(true), json!("User"))
    );
    assert!(created.body.get("password").is_none());

    let user = ferrozone_user(&app, &id).await;
    assert_eq!((user.email.as_str(), user.password_hash.is_none()), ("alice@example.com", true), "no password set");

    for filter in ["userName eq \"ALICE@example.com\"", "externalId eq \"00u1\"", "displayName eq \"alice anders\""] {
        let query = filter.replace(' ', "%20").replace('"', "%22").replace('@', "%40");
        let found = app.get(&format!("/scim/v2/Users?filter={query}"), &token).await;
        assert_eq!(found.body["totalResults"], 1, "{filter}: {}", found.body);
        assert_eq!(found.body["Resources"][0]["id"], id.as_str());
    }
    let missed = app.get("/scim/v2/Users?filter=externalId%20eq%20%2200U1%22", &token).await;
    assert_eq!(missed.body["totalResults"], 0, "externalId compares exactly");
    assert_eq!(app.get(&format!("/scim/v2/Users/{id}"), &token).await.body, created.body);
    assert_scim_error(&app.get("/scim/v2/Users/01a2353f-0000-7000-8000-000000000000", &token).await, 404, None);
    assert_scim_error(
        &app.get("/scim/v2/Users?filter=userName%20sw%20%22a%22", &token).await,
        400,
        Some("invalidFilter"),
    );
}

#[tokio::test]
async fn lists_page_by_start_index_and_count() {
    let (app, token) = provisioned().await;
    for n in 0..5 {
        let made = app.post("/scim/v2/Users", &token, json!({"userName": format!("u{n}@example.com")})).await;
        assert_eq!(made.status, 201, "{}", made.body);
    }
    let page = app.get("/scim/v2/Users?startIndex=2&count=2", &token).await;
    assert_eq!(page.body["schemas"], json!(["urn:ietf:params:scim:api:messages:2.0:ListResponse"]));
    assert_eq!((page.body["totalResults"].clone(), page.body["startIndex"].clone()), (json!(5), json!(2)));
    let names: Vec<&str> =
        page.body["Resources"].as_array().unwrap().iter().map(|u| u["userName"].as_str().unwrap()).collect();
    assert_eq!(names, ["u1@example.com", "u2@example.com"], "in the order they were provisioned");
    let counted = app.get("/scim/v2/Users?count=0", &token).await;
    assert_eq!((counted.body["totalResults"].clone(), counted.body["itemsPerPage"].clone()), (json!(5), json!(0)));
    let past = app.get("/scim/v2/Users?startIndex=9", &token).await;
    assert_eq!((past.body["totalResults"].clone(), past.body["Resources"].clone()), (json!(5), json!([])));
    assert_scim_error(&app.get("/scim/v2/Users?count=many", &token).await, 400, Some("invalidValue"));
}

/// docs/design/scim.md, "Paging": a page resumes from where the page before it ended only
/// while nobody was provisioned or removed; after a removal, `startIndex` counts again.
#[tokio::test]
async fn a_walk_by_start_index_counts_from_the_users_there_are_now() {
    let (app, token) = provisioned().await;
    let mut ids = Vec::new();
    for n in 0..6 {
        let made = app.post("/scim/v2/Users", &token, json!({"userName": format!("u{n}@example.com")})).await;
        ids.push(made.body["id"].as_str().unwrap().to_owned());
    }
    let names = |page: &TestResponse| -> Vec<String> {
        page.body["Resources"].as_array().unwrap().iter().map(|u| u["userName"].as_str().unwrap().to_owned()).collect()
    };
    assert_eq!(
        names(&app.get("/scim/v2/Users?startIndex=1&count=2", &token).await),
        ["u0@example.com", "u1@example.com"]
    );
    assert_eq!(
        names(&app.get("/scim/v2/Users?startIndex=3&count=2", &token).await),
        ["u2@example.com", "u3@example.com"]
    );
    assert_eq!(app.delete(&format!("/scim/v2/Users/{}", ids[0]), &token).await.status, 204);
    let after_removal = app.get("/scim/v2/Users?startIndex=5&count=2", &token).await;
    assert_eq!(after_removal.body["totalResults"], 5);
    assert_eq!(names(&after_removal), ["u5@example.com"], "the fifth of the users there are now");
    let made = app.post("/scim/v2/Users", &token, json!({"userName": "u6@example.com"})).await;
    assert_eq!(made.status, 201);
    let grown = app.get("/scim/v2/Users?startIndex=6&count=2", &token).await;
    assert_eq!((grown.body["totalResults"].clone(), names(&grown)), (json!(6), vec!["u6@example.com".to_owned()]));
}

#[tokio::test]
async fn a_user_needs_a_user_name_and_an_email_and_user_names_are_unique() {
    let (app, token) = provisioned().await;
    let refused = app.post("/scim/v2/Users", &token, json!({"userName": "carol"})).await;
    assert_scim_error(&refused, 400, Some("invalidValue"));
    assert!(refused.body["detail"].as_str().unwrap().contains("email"), "{}", refused.body);
    let refused = app.post("/scim/v2/Users", &token, json!({"emails": [{"value": "c@example.com"}]})).await;
    assert!(refused.body["detail"].as_str().unwrap().contains("userName"), "{}", refused.body);

    let by_name = json!({"userName": "carol", "emails": [{"value": "carol@example.com", "type": "work"}]});
    assert_eq!(app.post("/scim/v2/Users", &token, by_name).await.status, 201);
    let again = json!({"userName": "CAROL", "emails": [{"value": "carol2@example.com"}]});
    assert_scim_error(&app.post("/scim/v2/Users", &token, again).await, 409, Some("uniqueness"));
    let same_email = json!({"userName": "carol.c", "emails": [{"value": "Carol@example.com"}]});
    assert_scim_error(&app.post("/scim/v2/Users", &token, same_email).await, 409, Some("uniqueness"));
    let raw = app
        .raw(
            Method::POST,
            "/scim/v2/Users",
            &[("authorization", &format!("Bearer {token}")), ("content-type", "text/plain")],
            "{}",
        )
        .await;
    assert_scim_error(&raw, 415, None);
    let raw = app
        .raw(
            Method::POST,
            "/scim/v2/Users",
            &[("authorization", &format!("Bearer {token}")), ("content-type", "application/scim+json")],
            "{",
        )
        .await;
    assert_scim_error(&raw, 400, Some("invalidSyntax"));
}

#[tokio::test]
async fn a_user_that_exists_is_linked_not_duplicated() {
    let (app, token) = provisioned().await;
    let (id, _) = app.user("dana@example.com", "unprivileged").await;
    let created = app.post("/scim/v2/Users", &token, okta_user("dana@example.com", "00u2")).await;
    assert_eq!((created.status.as_u16(), created.body["id"].as_str()), (201, Some(id.as_str())), "{}", created.body);
    let listed = app.get("/scim/v2/Users", &token).await;
    assert_eq!(listed.body["totalResults"], 1, "only linked users are SCIM users");
}

#[tokio::test]
async fn entra_deactivates_and_reactivates_a_user() {
    let (app, token) = provisioned().await;
    let id = app.post("/scim/v2/Users", &token, okta_user("erin@example.com", "e1")).await.body["id"]
        .as_str()
        .unwrap()
        .to_owned();
    crate::device(&app, &id).await;
    assert_eq!(app.domain.active_peers().await.unwrap().len(), 1);

    let off = patch_op(json!([{"op": "Replace", "path": "active", "value": "False"}]));
    let patched = app.patch(&format!("/scim/v2/Users/{id}"), &token, off).await;
    assert_eq!((patched.status.as_u16(), patched.body["active"].clone()), (200, json!(false)), "{}", patched.body);
    let user = ferrozone_user(&app, &id).await;
    assert_eq!((user.disabled_at.is_some(), user.disabled_by), (true, Some(DisabledBy::Scim)));
    assert!(app.domain.active_peers().await.unwrap().is_empty(), "its device left the VPN");

    let on = patch_op(json!([{"op": "replace", "value": {"active": true}}]));
    assert_eq!(app.patch(&format!("/scim/v2/Users/{id}"), &token, on).await.body["active"], true);
    assert_eq!(app.domain.active_peers().await.unwrap().len(), 1, "back on the VPN");

    app.store.seal_audit_events().await.unwrap();
    let query = AuditQuery { limit: 50, ..AuditQuery::default() };
    let events = app.domain.audit_events(&Principal::operator(), &query).await.unwrap().events;
    assert!(
        events.iter().any(|e| e.event.action == "user.updated" && e.event.actor.kind == ActorKind::Scim),
        "audited as SCIM"
    );
}

#[tokio::test]
async fn the_directory_never_enables_a_user_someone_else_disabled() {
    let (app, token) = provisioned().await;
    let id = app.post("/scim/v2/Users", &token, okta_user("fay@example.com", "f1")).await.body["id"]
        .as_str()
        .unwrap()
        .to_owned();
    app.domain.set_user_disabled(&Principal::operator(), &id, true).await.unwrap();
    let replaced = app.put(&format!("/scim/v2/Users/{id}"), &token, okta_user("fay@example.com", "f1")).await;
    assert_eq!((replaced.status.as_u16(), replaced.body["active"].clone()), (200, json!(false)), "{}", replaced.body);
    assert_eq!(ferrozone_user(&app, &id).await.disabled_by, Some(DisabledBy::Cli), "the first reason stays");
}

#[tokio::test]
async fn the_last_enabled_admin_is_not_deactivated() {
    let (app, token) = provisioned().await;
    let linked = app.post("/scim/v2/Users", &token, json!({"userName": "admin@localhost"})).await;
    assert_eq!(linked.body["id"].as_str(), Some(app.admin_id.as_str()), "{}", linked.body);
    let off = patch_op(json!([{"op": "replace", "path": "active", "value": false}]));
    assert_scim_error(
        &app.patch(&format!("/scim/v2/Users/{}", app.admin_id), &token, off).await,
        400,
        Some("invalidValue"),
    );
    assert!(ferrozone_user(&app, &app.admin_id).await.disabled_at.is_none());
}

#[tokio::test]
async fn replace_and_patch_change_the_profile_and_the_email() {
    let (app, token) = provisioned().await;
    let id = app.post("/scim/v2/Users", &token, okta_user("gus@example.com", "g1")).await.body["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut body = okta_user("gus@example.com", "g1");
    body["emails"] = json!([{"value": "gus@corp.example", "primary": true}]);
    body["name"] = json!({"givenName": "Gus"});
    let replaced = app.put(&format!("/scim/v2/Users/{id}"), &token, body).await;
    assert_eq!(replaced.body["name"], json!({"givenName": "Gus", "formatted": "Gus"}), "{}", replaced.body);
    assert_eq!(ferrozone_user(&app, &id).await.email, "gus@corp.example");

    let entra = patch_op(json!([
        {"op": "Replace", "path": "emails[type eq \"work\"].value", "value": "gus@new.example"},
        {"op": "Add", "path": "name.familyName", "value": "Grant"},
        {"op": "Replace", "path": "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department", "value": "Ops"},
        {"op": "Replace", "path": "displayName", "value": "Gus G"},
    ]));
    let patched = app.patch(&format!("/scim/v2/Users/{id}"), &token, entra).await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert_eq!(
        (patched.body["displayName"].clone(), patched.body["name"]["familyName"].clone()),
        (json!("Gus G"), json!("Grant"))
    );
    assert_eq!(ferrozone_user(&app, &id).await.email, "gus@new.example");
    let bad = patch_op(json!([{"op": "replace", "path": "emails[type eq \"work\"].value", "value": "not an email"}]));
    assert_scim_error(&app.patch(&format!("/scim/v2/Users/{id}"), &token, bad).await, 400, Some("invalidValue"));
    assert_eq!(ferrozone_user(&app, &id).await.email, "gus@new.example", "nothing written");
    let path = patch_op(json!([{"op": "replace", "path": "emails[type eq", "value": "x"}]));
    assert_scim_error(&app.patch(&format!("/scim/v2/Users/{id}"), &token, path).await, 400, Some("invalidPath"));
}

#[tokio::test]
async fn a_delete_disables_the_user_and_ends_the_link() {
    let (app, token) = provisioned().await;
    let id = app.post("/scim/v2/Users", &token, okta_user("hal@example.com", "h1")).await.body["id"]
        .as_str()
        .unwrap()
        .to_owned();
    crate::device(&app, &id).await;
    let deleted = app.delete(&format!("/scim/v2/Users/{id}"), &token).await;
    assert_eq!(deleted.status, 204);
    assert_scim_error(&app.get(&format!("/scim/v2/Users/{id}"), &token).await, 404, None);
    assert_scim_error(&app.delete(&format!("/scim/v2/Users/{id}"), &token).await, 404, None);
    let user = ferrozone_user(&app, &id).await;
    assert_eq!(user.disabled_by, Some(DisabledBy::Scim), "kept, disabled, for an administrator to delete");
    assert!(app.domain.active_peers().await.unwrap().is_empty());
    let relinked = app.post("/scim/v2/Users", &token, okta_user("hal@example.com", "h1")).await;
    assert_eq!((relinked.status.as_u16(), relinked.body["active"].clone()), (201, json!(true)), "{}", relinked.body);
}

#[tokio::test]
async fn other_paths_answer_scim_errors() {
    let (app, token) = provisioned().await;
    assert_scim_error(&app.get("/scim/v2/Nothing", &token).await, 404, None);
}
