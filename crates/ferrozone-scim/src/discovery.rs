//! What the service provider says of itself (RFC 7643 sections 5 to 7, RFC 7644 section 4):
//! `ServiceProviderConfig`, `ResourceTypes` and `Schemas`, with the attributes Ferrozone
//! keeps. These answer a provisioning token too: a directory reads them with the token it
//! provisions with.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use ferrozone_domain::scim::MAX_PAGE;
use ferrozone_http::AppState;
use serde_json::{json, Value};

use crate::auth::Provisioner;
use crate::error::ScimError;
use crate::resource::{GROUP_SCHEMA, USER_SCHEMA};
use crate::users::base;
use crate::{list, reply};

const CONFIG_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig";
const RESOURCE_TYPE_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:ResourceType";
const SCHEMA_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:Schema";

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/ServiceProviderConfig", get(config))
        .route("/ResourceTypes", get(resource_types))
        .route("/ResourceTypes/{name}", get(resource_type))
        .route("/Schemas", get(schemas))
        .route("/Schemas/{id}", get(schema))
}

async fn config(State(app): State<AppState>, _: Provisioner) -> Response {
    let body = json!({
        "schemas": [CONFIG_SCHEMA],
        "documentationUri": "https://github.com/ferrozone/ferrozone/blob/main/docs/operations.md#groups-and-provisioning",
        "patch": {"supported": true},
        "bulk": {"supported": false, "maxOperations": 0, "maxPayloadSize": 0},
        "filter": {"supported": true, "maxResults": MAX_PAGE},
        "changePassword": {"supported": false},
        "sort": {"supported": false},
        "etag": {"supported": false},
        "authenticationSchemes": [{
            "type": "oauthbearertoken",
            "name": "Provisioning token",
            "description": "Authorization: Bearer fzscim_…, created by an administrator",
            "primary": true,
        }],
        "meta": {"resourceType": "ServiceProviderConfig", "location": format!("{}/ServiceProviderConfig", base(&app))},
    });
    reply::scim_json(StatusCode::OK, &body)
}

fn user_type(base: &str) -> Value {
    json!({
        "schemas": [RESOURCE_TYPE_SCHEMA], "id": "User", "name": "User", "endpoint": "/Users",
        "description": "A Ferrozone user", "schema": USER_SCHEMA,
        "meta": {"resourceType": "ResourceType", "location": format!("{base}/ResourceTypes/User")},
    })
}

fn group_type(base: &str) -> Value {
    json!({
        "schemas": [RESOURCE_TYPE_SCHEMA], "id": "Group", "name": "Group", "endpoint": "/Groups",
        "description": "A group of Ferrozone users", "schema": GROUP_SCHEMA,
        "meta": {"resourceType": "ResourceType", "location": format!("{base}/ResourceTypes/Group")},
    })
}

async fn resource_types(State(app): State<AppState>, _: Provisioner) -> Response {
    let base = base(&app);
    listed(vec![user_type(&base), group_type(&base)])
}

async fn resource_type(
    State(app): State<AppState>,
    _: Provisioner,
    Path(name): Path<String>,
) -> Result<Response, ScimError> {
    let base = base(&app);
    let found = match name.as_str() {
        "User" => user_type(&base),
        "Group" => group_type(&base),
        _ => return Err(ScimError::not_found("resource type")),
    };
    Ok(reply::scim_json(StatusCode::OK, &found))
}

async fn schemas(State(app): State<AppState>, _: Provisioner) -> Response {
    let base = base(&app);
    listed(vec![user_schema(&base), group_schema(&base)])
}

async fn schema(State(app): State<AppState>, _: Provisioner, Path(id): Path<String>) -> Result<Response, ScimError> {
    let base = base(&app);
    let found = match id.as_str() {
        USER_SCHEMA => user_schema(&base),
        GROUP_SCHEMA => group_schema(&base),
        _ => return Err(ScimError::not_found("schema")),
    };
    Ok(reply::scim_json(StatusCode::OK, &found))
}

fn listed(resources: Vec<Value>) -> Response {
    let total = resources.len() as u64;
    list::reply(total, ferrozone_domain::scim::Page { start_index: 1, count: MAX_PAGE }, &resources)
}

/// An attribute's description; `extra` overrides the defaults (a single, optional,
/// case-insensitive, read-write string returned by default).
fn attribute(name: &str, description: &str, extra: Value) -> Value {
    let mut attribute = json!({
        "name": name, "type": "string", "multiValued": false, "description": description,
        "required": false, "caseExact": false, "mutability": "readWrite", "returned": "default",
        "uniqueness": "none",
    });
    if let (Value::Object(attribute), Value::Object(extra)) = (&mut attribute, extra) {
        attribute.extend(extra);
    }
    attribute
}

fn user_schema(base: &str) -> Value {
    let sub = |name: &str, description: &str| attribute(name, description, json!({}));
    json!({
        "schemas": [SCHEMA_SCHEMA], "id": USER_SCHEMA, "name": "User", "description": "A Ferrozone user",
        "attributes": [
            attribute("userName", "Unique whatever its case; the email when it is one and no email is given",
                json!({"required": true, "uniqueness": "server"})),
            attribute("externalId", "The directory's id of the user", json!({"caseExact": true})),
            attribute("displayName", "The user's name as shown", json!({})),
            attribute("name", "The user's name", json!({"type": "complex", "subAttributes": [
                sub("givenName", "Given name"), sub("familyName", "Family name"),
                attribute("formatted", "Given and family name", json!({"mutability": "readOnly"})),
            ]})),
            attribute("emails", "The primary one (else the first) is the user's email", json!({
                "type": "complex", "multiValued": true, "subAttributes": [
                    sub("value", "An email address"), sub("type", "work, home or other"),
                    attribute("primary", "The user's email", json!({"type": "boolean"})),
                ]})),
            attribute("active", "false disables the user: sessions end and devices leave the VPN",
                json!({"type": "boolean"})),
        ],
        "meta": {"resourceType": "Schema", "location": format!("{base}/Schemas/{USER_SCHEMA}")},
    })
}

fn group_schema(base: &str) -> Value {
    json!({
        "schemas": [SCHEMA_SCHEMA], "id": GROUP_SCHEMA, "name": "Group", "description": "A group of users",
        "attributes": [
            attribute("displayName", "Unique whatever its case", json!({"required": true, "uniqueness": "server"})),
            attribute("externalId", "The directory's id of the group", json!({"caseExact": true})),
            attribute("members", "The group's members (users)", json!({
                "type": "complex", "multiValued": true, "subAttributes": [
                    attribute("value", "A user's id", json!({"mutability": "immutable"})),
                    attribute("display", "The user's userName", json!({"mutability": "readOnly"})),
                    attribute("$ref", "The user's location", json!({"type": "reference",
                        "referenceTypes": ["User"], "mutability": "readOnly"})),
                ]})),
        ],
        "meta": {"resourceType": "Schema", "location": format!("{base}/Schemas/{GROUP_SCHEMA}")},
    })
}
