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
    let (_, doc) = crate::routes::api().split_for_parts();
    doc.to_pretty_json().unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}
