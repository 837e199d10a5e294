//! Request ids, one log line per request, and panic safety.

use std::time::Duration;

use axum::body::Body;
use axum::extract::MatchedPath;
use axum::http::{Request, Response};
use axum::response::IntoResponse;
use axum::Router;
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;
use tracing::Span;

use crate::error::ApiError;

/// Wraps `router` in the request-id, tracing and panic layers (outermost first).
pub fn wrap(router: Router) -> Router {
    router.layer(
        ServiceBuilder::new()
            .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
            .layer(
                TraceLayer::new_for_http()
                    .make_span_with(make_span)
                    .on_request(())
                    .on_response(on_response)
                    .on_failure(()),
            )
            .layer(PropagateRequestIdLayer::x_request_id())
            .layer(CatchPanicLayer::custom(|_| {
                tracing::error!("a request handler panicked");
                ApiError::Internal(anyhow::anyhow!("handler panicked")).into_response()
            })),
    )
}

/// The span of one request: method, matched route (not the raw URI, which may carry
/// emails or ids), and the request id.
fn make_span(req: &Request<Body>) -> Span {
    let route = req.extensions().get::<MatchedPath>().map_or("(unmatched)", MatchedPath::as_str);
    let request_id = req.headers().get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or("");
    tracing::info_span!("request", method = %req.method(), route, request_id)
}

fn on_response<B>(res: &Response<B>, latency: Duration, _span: &Span) {
    let status = res.status().as_u16();
    let latency_ms = latency.as_secs_f64() * 1000.0;
    tracing::info!(status, latency_ms, "request");
}
