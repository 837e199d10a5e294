//! Ferrozone's HTTP API: the `/v0` admin REST API, health checks and the OpenAPI document.

mod dto;
mod error;
mod extract;
mod openapi;
mod qr;
mod reply;
mod routes;
mod stream;
mod telemetry;

use std::sync::Arc;

use axum::Router;
use ferrozone_domain::Domain;

pub use error::ApiError;
pub use openapi::openapi_json;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub domain: Arc<Domain>,
}

/// The whole HTTP application: routes, fallbacks, request ids, tracing and panic safety.
pub fn app(state: AppState) -> Router {
    let (api, doc) = openapi::api();
    let router = Router::new()
        .merge(api)
        .merge(routes::health::routes())
        .merge(openapi::routes(&doc))
        .fallback(error::not_found)
        .method_not_allowed_fallback(error::method_not_allowed)
        .with_state(state);
    telemetry::wrap(router)
}
