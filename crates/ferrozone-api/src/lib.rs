//! The `/v0` face of Ferrozone's HTTP service: the administrative REST API (routes, wire
//! types, response bodies), its OpenAPI document and the health checks. It stands on
//! ferrozone-http and knows nothing of the web pages.

mod dto;
mod openapi;
mod responses;
mod routes;
mod stream;
pub mod wire;

use axum::Router;
use ferrozone_http::AppState;

pub use openapi::openapi_json;

/// The API's routes: `/v0` with its document at `/v0/openapi.json`, and the health checks
/// `/livez` and `/healthz`.
pub fn routes() -> Router<AppState> {
    let (api, doc) = openapi::api();
    Router::new().merge(api).merge(routes::health::routes()).merge(openapi::routes(&doc))
}
