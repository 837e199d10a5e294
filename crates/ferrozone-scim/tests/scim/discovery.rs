//! What the service provider says of itself.

use serde_json::json;

use crate::provisioned;

#[tokio::test]
async fn the_provider_describes_what_it_supports() {
    let (app, token) = provisioned().await;
    let config = app.get("/scim/v2/ServiceProviderConfig", &token).await;
    assert_eq!(config.body["schemas"], json!(["urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"]));
    assert_eq!(
        (config.body["patch"]["supported"].clone(), config.body["filter"]["supported"].clone()),
        (json!(true), json!(true))
    );
    assert_eq!(
        (config.body["bulk"]["supported"].clone(), config.body["etag"]["supported"].clone()),
        (json!(false), json!(false))
    );

    let types = app.get("/scim/v2/ResourceTypes", &token).await;
    let endpoints: Vec<&str> =
        types.body["Resources"].as_array().unwrap().iter().map(|t| t["endpoint"].as_str().unwrap()).collect();
    assert_eq!(endpoints, ["/Users", "/Groups"]);
    assert_eq!(
        app.get("/scim/v2/ResourceTypes/Group", &token).await.body["schema"],
        "urn:ietf:params:scim:schemas:core:2.0:Group"
    );

    let schemas = app.get("/scim/v2/Schemas", &token).await;
    assert_eq!(schemas.body["totalResults"], 2);
    let user = app.get("/scim/v2/Schemas/urn:ietf:params:scim:schemas:core:2.0:User", &token).await;
    let names: Vec<&str> =
        user.body["attributes"].as_array().unwrap().iter().map(|a| a["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["userName", "externalId", "displayName", "name", "emails", "active"]);
    assert_eq!(app.get("/scim/v2/Schemas/nothing", &token).await.status, 404);
    assert_eq!(app.get("/scim/v2/ServiceProviderConfig", "nothing").await.status, 401);
}
