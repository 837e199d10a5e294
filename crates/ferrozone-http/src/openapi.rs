//! The OpenAPI 3.1 document, generated from the routes and served at `/v0/openapi.json`.

use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::OpenApi as Document;
use utoipa::{Modify, OpenApi};

use serde_json::{json, Map, Value};

use crate::{reply, AppState};

#[derive(OpenApi)]
#[openapi(
    info(title = "Ferrozone API", description = "Administrative REST API of Ferrozone, a WireGuard VPN control plane. \
        Wire-compatible with the Firezone 0.x `/v0` API."),
    modifiers(&BearerAuth),
    security(("bearer" = [])),
    tags((name = "devices", description = "WireGuard devices of users"), (name = "users", description = "Accounts"))
)]
pub struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, doc: &mut Document) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).bearer_format("fz_…").build()),
        );
    }
}

/// The API routes with their finished document, as JSON.
pub fn api() -> (axum::Router<AppState>, Value) {
    let (router, doc) = crate::routes::api().split_for_parts();
    let mut doc = serde_json::to_value(&doc).unwrap_or_else(|e| json!({"error": e.to_string()}));
    link_created(&mut doc);
    (router, doc)
}

/// Links from each create's 201 to the operations on the created record, so that clients
/// (and stateful API testers) know where the new id leads. Added to the JSON form: utoipa's
/// `Modify` hooks run before routes are merged in, and its `Link` serialises `operationId`
/// under the wrong name.
fn link_created(doc: &mut Value) {
    let device_ops: &[&str] = &["get_device", "update_device", "replace_device", "delete_device", "get_device_config"];
    let user_ops: &[&str] = &["get_user", "update_user", "replace_user", "delete_user"];
    for (collection, ops) in [("/v0/devices", device_ops), ("/v0/users", user_ops)] {
        let pointer = format!("/paths/{}/post/responses/201", collection.replace('/', "~1"));
        let Some(Value::Object(response)) = doc.pointer_mut(&pointer) else { continue };
        let links: Map<String, Value> = ops
            .iter()
            .map(|op| (op.to_string(), json!({"operationId": op, "parameters": {"id": "$response.body#/data/id"}})))
            .collect();
        response.insert("links".into(), Value::Object(links));
    }
}

/// Serves the document, rendered once.
pub fn routes(doc: &Value) -> Router<AppState> {
    let body = axum::body::Bytes::from(serde_json::to_vec(doc).unwrap_or_default());
    Router::new().route(
        "/v0/openapi.json",
        get(move || {
            let body = body.clone();
            async move { ([(header::CONTENT_TYPE, reply::JSON_UTF8)], body).into_response() }
        }),
    )
}

/// The document as pretty JSON, for `ferrozone openapi`.
pub fn openapi_json() -> String {
    let (_, doc) = api();
    serde_json::to_string_pretty(&doc).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}
