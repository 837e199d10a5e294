//! `GET /metrics`: this process's metrics in Prometheus's text format, for a scraper
//! (docs/design/metrics.md, "Metrics"; docs/operations.md, "Monitoring").
//!
//! Two ways to serve it: on the API listener to a scraper that sends the metrics token
//! ([`MetricsExport::token`]), or on a listener of its own that serves nothing else, without
//! authentication ([`metrics_app`]), for a network only the scraper reaches. The metrics
//! token is no API token: it opens `/metrics` and nothing else, so a scraper holds no
//! admin power.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use ferrozone_domain::service::tokens::Refusal;
use zeroize::Zeroizing;

use crate::cookies::same_secret;
use crate::error::{self, ApiError};
use crate::extract::bearer_token;

/// The content type of Prometheus's text exposition format.
const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Renders the metrics as Prometheus text, afresh at each scrape.
pub type Render = Arc<dyn Fn() -> String + Send + Sync>;

/// How this process exports its metrics: what renders them, and the token `/metrics`
/// on the API listener takes (without one, the API listener has no `/metrics`).
#[derive(Clone)]
pub struct MetricsExport {
    pub render: Render,
    pub token: Option<Arc<Zeroizing<String>>>,
}

impl std::fmt::Debug for MetricsExport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsExport").field("token", &self.token.as_ref().map(|_| "…")).finish_non_exhaustive()
    }
}

/// The `/metrics` route of the API listener, for `export` with a token; no route without.
pub fn api_route<S: Clone + Send + Sync + 'static>(export: &MetricsExport) -> Router<S> {
    let Some(token) = export.token.clone() else { return Router::new() };
    let render = export.render.clone();
    Router::new().route("/metrics", get(move |headers: HeaderMap| async move { with_token(&headers, &token, &render) }))
}

/// The app of the metrics listener (`FERROZONE_METRICS_LISTEN`): `GET /metrics` without
/// authentication, 404 for every other path.
pub fn metrics_app(render: Render) -> Router {
    Router::new()
        .route("/metrics", get(|State(render): State<Render>| async move { text(&render) }))
        .fallback(error::not_found)
        .method_not_allowed_fallback(error::method_not_allowed)
        .with_state(render)
}

/// The metrics for a request bearing `token`; 401 (as the API answers) for any other.
fn with_token(headers: &HeaderMap, token: &str, render: &Render) -> Response {
    match bearer_token(headers) {
        None => ApiError::Unauthenticated.into_response(),
        Some(sent) if !same_secret(Some(sent), token) => ApiError::Refused(Refusal::InvalidToken).into_response(),
        Some(_) => text(render),
    }
}

fn text(render: &Render) -> Response {
    let mut response = (StatusCode::OK, render()).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(TEXT_FORMAT));
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
