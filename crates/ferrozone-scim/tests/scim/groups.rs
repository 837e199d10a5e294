//! `/scim/v2/Groups`: groups a directory pushes, and their members.

use ferrozone_domain::group::MANUAL;
use ferrozone_domain::service::groups::GroupInput;
use ferrozone_domain::Principal;
use serde_json::{json, Value};

use crate::{assert_scim_error, okta_user, patch_op, provisioned, TestApp};

async fn scim_user(app: &TestApp, token: &str, name: &str) -> String {
    let made = app.post("/scim/v2/Users", token, okta_user(&format!("{name}@example.com"), name)).await;
    assert_eq!(made.status, 201, "{}", made.body);
    made.body["id"].as_str().unwrap().to_owned()
}

fn member_ids(group: &Value) -> Vec<String> {
    let mut ids: Vec<String> =
        group["members"].as_array().unwrap().iter().map(|m| m["value"].as_str().unwrap().to_owned()).collect();
    ids.sort();
    ids
}

fn sorted(mut ids: Vec<String>) -> Vec<String> {
    ids.sort();
    ids
}

#[tokio::test]
async fn okta_pushes_a_group_and_its_members() {
    let (app, token) = provisioned().await;
    let (a, b, c) =
        (scim_user(&app, &token, "a").await, scim_user(&app, &token, "b").await, scim_user(&app, &token, "c").await);
    let body = json!({"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "displayName": "Engineering",
        "members": [{"value": a, "display": "a@example.com"}]});
    let created = app.post("/scim/v2/Groups", &token, body).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.body["id"].as_str().unwrap().to_owned();
    assert_eq!(created.header("location").unwrap(), format!("http://localhost:13000/scim/v2/Groups/{id}"));
    assert_eq!(created.body["members"][0]["display"], "a@example.com");

    let add = patch_op(json!([{"op": "add", "path": "members", "value": [{"value": b}, {"value": c}]}]));
    assert_eq!(
        member_ids(&app.patch(&format!("/scim/v2/Groups/{id}"), &token, add).await.body),
        sorted(vec![a.clone(), b.clone(), c.clone()])
    );
    let remove = patch_op(json!([{"op": "remove", "path": format!("members[value eq \"{a}\"]")}]));
    assert_eq!(
        member_ids(&app.patch(&format!("/scim/v2/Groups/{id}"), &token, remove).await.body),
        sorted(vec![b.clone(), c.clone()])
    );

    let group = app.domain.get_group(&Principal::operator(), id.parse().unwrap()).await.unwrap();
    assert_eq!((group.source.as_str(), group.member_count), ("scim", 2));
    let members = app.domain.group_members(&Principal::operator(), group.id).await.unwrap();
    assert!(members.iter().all(|m| m.source == "scim"), "{members:?}");

    let found =
        app.get("/scim/v2/Groups?filter=displayName%20eq%20%22engineering%22&excludedAttributes=members", &token).await;
    assert_eq!(found.body["totalResults"], 1, "{}", found.body);
    assert!(found.body["Resources"][0].get("members").is_none(), "members left out when excluded");
    let listed = app.get("/scim/v2/Groups", &token).await;
    assert_eq!(member_ids(&listed.body["Resources"][0]), sorted(vec![b.clone(), c.clone()]));

    let rename = json!({"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "id": id, "displayName": "Eng"});
    let renamed = app.put(&format!("/scim/v2/Groups/{id}"), &token, rename).await;
    assert_eq!(
        (renamed.body["displayName"].clone(), member_ids(&renamed.body)),
        (json!("Eng"), sorted(vec![b.clone(), c.clone()])),
        "a PUT without members keeps them"
    );
    let replace = json!({"displayName": "Eng", "members": [{"value": a}]});
    assert_eq!(member_ids(&app.put(&format!("/scim/v2/Groups/{id}"), &token, replace).await.body), vec![a.clone()]);
}

#[tokio::test]
async fn entra_changes_members_its_way() {
    let (app, token) = provisioned().await;
    let (a, b) = (scim_user(&app, &token, "ea").await, scim_user(&app, &token, "eb").await);
    let id = app.post("/scim/v2/Groups", &token, json!({"displayName": "Sales", "externalId": "g-1"})).await.body["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let add = patch_op(json!([{"op": "Add", "path": "members", "value": [{"value": a}, {"value": b}]}]));
    assert_eq!(app.patch(&format!("/scim/v2/Groups/{id}"), &token, add).await.status, 200);
    let remove = patch_op(json!([{"op": "Remove", "path": "members", "value": [{"value": a}]}]));
    let removed = app.patch(&format!("/scim/v2/Groups/{id}"), &token, remove).await;
    assert_eq!(member_ids(&removed.body), vec![b.clone()]);
    let found = app.get("/scim/v2/Groups?filter=externalId%20eq%20%22g-1%22", &token).await;
    assert_eq!(found.body["Resources"][0]["id"], id.as_str());

    let stranger = patch_op(json!([{"op": "Add", "path": "members", "value": [{"value": app.admin_id}]}]));
    assert_scim_error(&app.patch(&format!("/scim/v2/Groups/{id}"), &token, stranger).await, 400, Some("invalidValue"));
    assert_eq!(member_ids(&app.get(&format!("/scim/v2/Groups/{id}"), &token).await.body), vec![b], "nothing written");
}

#[tokio::test]
async fn a_group_made_by_hand_is_taken_over_with_its_rules_and_its_members() {
    let (app, token) = provisioned().await;
    let input = GroupInput { name: ferrozone_domain::input::Patch::Value("Ops".into()), ..GroupInput::default() };
    let manual = app.domain.create_group(&Principal::operator(), &input).await.unwrap();
    let (kept, _) = app.user("kept@example.com", "unprivileged").await;
    let member = ferrozone_domain::service::groups::MemberInput { user_id: Some(kept.clone()), ..Default::default() };
    app.domain.add_group_member(&Principal::operator(), manual.id, &member).await.unwrap();
    let a = scim_user(&app, &token, "oa").await;

    let taken = app.post("/scim/v2/Groups", &token, json!({"displayName": "ops", "members": [{"value": a}]})).await;
    assert_eq!(
        (taken.status.as_u16(), taken.body["id"].as_str()),
        (201, Some(manual.id.to_string().as_str())),
        "{}",
        taken.body
    );
    assert_eq!(member_ids(&taken.body), vec![a], "SCIM shows its own members");
    let members = app.domain.group_members(&Principal::operator(), manual.id).await.unwrap();
    assert!(
        members.iter().any(|m| m.user_id.to_string() == kept && m.source == MANUAL),
        "the hand-made membership stays"
    );
    assert_scim_error(
        &app.post("/scim/v2/Groups", &token, json!({"displayName": "OPS"})).await,
        409,
        Some("uniqueness"),
    );

    assert_eq!(app.delete(&format!("/scim/v2/Groups/{}", manual.id), &token).await.status, 204);
    assert!(app.domain.get_group(&Principal::operator(), manual.id).await.is_err(), "deleted with its memberships");
    assert_scim_error(&app.get(&format!("/scim/v2/Groups/{}", manual.id), &token).await, 404, None);
}

#[tokio::test]
async fn group_requests_are_checked() {
    let (app, token) = provisioned().await;
    assert_scim_error(&app.post("/scim/v2/Groups", &token, json!({"members": []})).await, 400, Some("invalidValue"));
    let id =
        app.post("/scim/v2/Groups", &token, json!({"displayName": "G"})).await.body["id"].as_str().unwrap().to_owned();
    let no_name = patch_op(json!([{"op": "remove", "path": "displayName"}]));
    assert_scim_error(&app.patch(&format!("/scim/v2/Groups/{id}"), &token, no_name).await, 400, Some("mutability"));
    let wrong = json!({"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "Operations": []});
    assert_scim_error(&app.patch(&format!("/scim/v2/Groups/{id}"), &token, wrong).await, 400, Some("invalidSyntax"));
    assert_scim_error(
        &app.get("/scim/v2/Groups?filter=members%20eq%20%22x%22", &token).await,
        400,
        Some("invalidFilter"),
    );
}
