//! The `/v0` face of Ferrozone's HTTP service: the administrative REST API (routes, wire
//! types, response bodies), its OpenAPI document and the health checks. It stands on
//! ferrozone-http and knows nothing of the web pages.
//!
//! The reading of request bodies ([`wire`]) needs none of the rest: without the default
//! feature `routes` the crate is that alone, which is what the fuzz target of API bodies
//! builds (docs/fuzzing.md).

pub mod wire;

#[cfg(feature = "routes")]
mod dto;
#[cfg(feature = "routes")]
mod openapi;
#[cfg(feature = "routes")]
mod responses;
#[cfg(feature = "routes")]
mod routes;
#[cfg(feature = "routes")]
mod stream;

#[cfg(feature = "routes")]
pub use openapi::openapi_json;

/// The API's routes: `/v0` with its document at `/v0/openapi.json`, and the health checks
/// `/livez` and `/healthz`.
#[cfg(feature = "routes")]
pub fn routes() -> axum::Router<ferrozone_http::AppState> {
    let (api, doc) = openapi::api();
    axum::Router::new().merge(api).merge(routes::health::routes()).merge(openapi::routes(&doc))
}
