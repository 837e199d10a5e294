//! Ferrozone's HTTP API: the `/v0` admin REST API, health checks, the OpenAPI document and
//! the web sign-in.

mod dto;
mod error;
mod extract;
mod openapi;
mod qr;
mod reply;
mod routes;
mod stream;
mod telemetry;
mod web;

use std::sync::Arc;

use axum::Router;
use ferrozone_domain::Domain;

pub use error::ApiError;
pub use openapi::openapi_json;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub domain: Arc<Domain>,
    pub web: Arc<WebState>,
}

impl AppState {
    /// `secure_cookies`: give cookies the `Secure` attribute (users reach Ferrozone over HTTPS).
    pub fn new(domain: Arc<Domain>, secure_cookies: bool) -> Self {
        Self { domain, web: Arc::new(WebState { secure_cookies, throttle: web::throttle::Throttle::default() }) }
    }
}

/// The web sign-in's settings and this process's sign-in throttle.
#[derive(Debug)]
pub struct WebState {
    pub secure_cookies: bool,
    throttle: web::throttle::Throttle,
}

/// The whole HTTP application: routes, fallbacks, request ids, tracing and panic safety.
/// Serve it with `into_make_service_with_connect_info::<SocketAddr>()`: sign-in throttling
/// keys on the client's address.
pub fn app(state: AppState) -> Router {
    let (api, doc) = openapi::api();
    let router = Router::new()
        .merge(api)
        .merge(routes::health::routes())
        .merge(web::routes())
        .merge(openapi::routes(&doc))
        .fallback(error::not_found)
        .method_not_allowed_fallback(error::method_not_allowed)
        .with_state(state);
    telemetry::wrap(router)
}
