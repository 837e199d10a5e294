//! The OpenAPI 3.1 document, generated from the routes and served at `/v0/openapi.json`.

use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::OpenApi as Document;
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;

use serde_json::{json, Map, Value};

use ferrozone_http::{reply, AppState};

#[derive(OpenApi)]
#[openapi(
    info(title = "Ferrozone API", description = "Administrative REST API of Ferrozone, a WireGuard VPN control plane. \
        Wire-compatible with the Firezone 0.x `/v0` API."),
    modifiers(&BearerAuth),
    security(("bearer" = [])),
    tags((name = "devices", description = "WireGuard devices of users"), (name = "users", description = "Accounts"),
        (name = "rules", description = "Egress rules (Firezone-compatible)"),
        (name = "tokens", description = "Personal API tokens (Ferrozone's own)"),
        (name = "configuration", description = "Server-wide settings (Firezone's singleton)"),
        (name = "me", description = "The caller's own account (Ferrozone's own)"),
        (name = "totp", description = "Two-factor sign-in with an authenticator app (Ferrozone's own)"),
        (name = "server", description = "This process: version, start-up settings, data plane (Ferrozone's own)"),
        (name = "webhooks", description = "Endpoints that receive the audit events, signed (Ferrozone's own)"),
        (name = "invitations", description = "Single-use sign-in links for new people, by email (Ferrozone's own)"),
        (name = "gateways", description = "Gateways on other hosts: the registry and enrolment (Ferrozone's own)"),
        (name = "groups", description = "Groups of users and their members (Ferrozone's own)"),
        (name = "provisioning", description = "Tokens for SCIM provisioning at /scim/v2 (Ferrozone's own)"),
        (name = "audit", description = "The audit log: who changed what, from where and when (Ferrozone's own)"))
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
    let (router, doc) = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(crate::routes::devices::routes())
        .merge(crate::routes::users::routes())
        .merge(crate::routes::rules::routes())
        .merge(crate::routes::tokens::routes())
        .merge(crate::routes::configuration::routes())
        .merge(crate::routes::me::routes())
        .merge(crate::routes::totp::routes())
        .merge(crate::routes::server::routes())
        .merge(crate::routes::webhooks::routes())
        .merge(crate::routes::invitations::routes())
        .merge(crate::routes::gateways::routes())
        .merge(crate::routes::groups::routes())
        .merge(crate::routes::scim_tokens::routes())
        .merge(crate::routes::gateway_protocol::routes())
        .merge(crate::routes::audit::routes())
        .split_for_parts();
    // utoipa's document is plain data (strings, maps, numbers): it always serialises.
    let mut doc = serde_json::to_value(&doc).expect("the OpenAPI document serialises to JSON");
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
    let rule_ops: &[&str] = &["get_rule", "update_rule", "replace_rule", "delete_rule"];
    let gateway_ops: &[&str] = &["get_gateway", "revoke_gateway"];
    let group_ops: &[&str] = &["get_group", "update_group", "replace_group", "delete_group", "list_members"];
    let collections = [
        ("/v0/devices", device_ops),
        ("/v0/users", user_ops),
        ("/v0/rules", rule_ops),
        ("/v0/gateways", gateway_ops),
        ("/v0/groups", group_ops),
    ];
    for (collection, ops) in collections {
        let pointer = format!("/paths/{}/post/responses/201", collection.replace('/', "~1"));
        let Some(Value::Object(response)) = doc.pointer_mut(&pointer) else { continue };
        let links: Map<String, Value> = ops
            .iter()
            .map(|op| (op.to_string(), json!({"operationId": op, "parameters": {"id": "$response.body#/data/id"}})))
            .collect();
        response.insert("links".into(), Value::Object(links));
    }
}

/// Serves the document, rendered once (when the application is built, at start-up).
pub fn routes(doc: &Value) -> Router<AppState> {
    let body = render(doc);
    Router::new().route(
        "/v0/openapi.json",
        get(move || {
            let body = body.clone();
            async move { ([(header::CONTENT_TYPE, reply::JSON_UTF8)], body).into_response() }
        }),
    )
}

/// The document's body. It cannot fail for a `Value` (its keys are strings): should it
/// ever, start-up stops here rather than serve an empty or error body with a 200.
fn render(doc: &impl serde::Serialize) -> axum::body::Bytes {
    axum::body::Bytes::from(serde_json::to_vec(doc).expect("the OpenAPI document renders as JSON"))
}

/// The document as pretty JSON, for `ferrozone openapi`.
pub fn openapi_json() -> String {
    let (_, doc) = api();
    serde_json::to_string_pretty(&doc).expect("the OpenAPI document renders as JSON")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A document that cannot be written as JSON (a map with a non-string key).
    fn unwritable() -> std::collections::HashMap<(u8, u8), u8> {
        std::collections::HashMap::from([((1, 2), 3)])
    }

    #[test]
    #[should_panic(expected = "the OpenAPI document renders as JSON")]
    fn a_document_that_cannot_render_stops_start_up() {
        render(&unwritable());
    }

    #[test]
    fn the_served_body_is_the_document() {
        let (_, doc) = api();
        let served: Value = serde_json::from_slice(&render(&doc)).expect("JSON");
        assert_eq!(served, doc);
        assert!(served.get("error").is_none() && served["openapi"].as_str().is_some_and(|v| v.starts_with("3.1")));
    }
}
