//! The OpenAPI 3.1 document, generated from the routes and served at `/v0/openapi.json`.

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::OpenApi as Document;
use utoipa::{Modify, OpenApi};

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

/// The API routes with their finished document.
pub fn api() -> (axum::Router<AppState>, Document) {
    let (router, mut doc) = crate::routes::api().split_for_parts();
    link_created(&mut doc);
    (router, doc)
}

/// Links from each create's 201 to the operations on the created record, so that clients
/// (and stateful API testers) know where the new id leads. Runs on the finished document:
/// `Modify` hooks run before the routes are merged in.
fn link_created(doc: &mut Document) {
    use utoipa::openapi::link::LinkBuilder;
    use utoipa::openapi::RefOr;
    for (collection, ops) in [
        ("/v0/devices", ["get_device", "update_device", "replace_device", "delete_device"]),
        ("/v0/users", ["get_user", "update_user", "replace_user", "delete_user"]),
    ] {
        let created = doc
            .paths
            .paths
            .get_mut(collection)
            .and_then(|item| item.post.as_mut())
            .and_then(|op| op.responses.responses.get_mut("201"));
        let Some(RefOr::T(response)) = created else { continue };
        for op in ops {
            let link = LinkBuilder::new().operation_id(op).parameter("id", "$response.body#/data/id").build();
            response.links.insert(op.to_owned(), RefOr::T(link));
        }
    }
}

pub fn routes(doc: Arc<Document>) -> Router<AppState> {
    Router::new().route(
        "/v0/openapi.json",
        get(move || {
            let doc = Arc::clone(&doc);
            async move { document(&doc) }
        }),
    )
}

fn document(doc: &Document) -> Response {
    reply::json(StatusCode::OK, doc)
}

/// The document as pretty JSON, for `ferrozone openapi`.
pub fn openapi_json() -> String {
    let (_, doc) = api();
    doc.to_pretty_json().unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}
