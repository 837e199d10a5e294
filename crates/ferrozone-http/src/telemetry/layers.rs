//! The frame of every request, written as one tower service: its request id, its span and
//! log line, its audit scope, the `/v0` response headers and panic safety.
//!
//! One service rather than a stack of tower-http layers (request id, trace, propagation,
//! panic catching) and `axum::middleware::from_fn`: each layer makes a future of its own
//! per request, and each future holds the ones inside it, so every request moved the whole
//! nest once per layer (docs/benchmarks.md, "Against a baseline").

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::body::Body;
use axum::extract::{ConnectInfo, MatchedPath};
use axum::http::{HeaderMap, HeaderValue, Request, Response};
use axum::response::IntoResponse;
use ferrozone_domain::audit::{context, Actor, Origin};
use pin_project_lite::pin_project;
use tower::Service;
use tracing::Span;

use super::{is_usable_request_id, X_REQUEST_ID};
use crate::api_path;
use crate::error::ApiError;

/// The target of the request's log lines, the module that has always written them: log
/// filters and the tools reading the lines name it.
const LOG_TARGET: &str = "ferrozone_http::telemetry";

/// The client's address as text, formatted once per connection by the transport, so that
/// each request's audit scope copies it rather than formats it.
#[derive(Clone)]
pub struct ClientAddress(pub Arc<str>);

/// Wraps every route: see the module's documentation.
#[derive(Clone)]
pub struct RequestFrame<S>(pub S);

impl<S> Service<Request<Body>> for RequestFrame<S>
where
    S: Service<Request<Body>, Response = Response<Body>, Error = Infallible>,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Framed<context::Scoped<S::Future>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<Body>) -> Self::Future {
        let start = Instant::now();
        let request_id = settle_request_id(req.headers_mut());
        let api = api_path::is_api_path(req.uri().path());
        let span = make_span(&req, &request_id);
        let context = context::Context::new(Actor::anonymous(), origin(&req, &request_id));
        let inner = span.in_scope(|| catch_unwind(AssertUnwindSafe(|| context::scoped(context, || self.0.call(req)))));
        Framed { inner: inner.ok(), span, start, request_id, api }
    }
}

/// The request's id: the client's, when it is one usable value ([`is_usable_request_id`]),
/// or a fresh UUID, set on the request for the handlers.
fn settle_request_id(headers: &mut HeaderMap) -> HeaderValue {
    let mut given = headers.get_all(&X_REQUEST_ID).iter();
    if let (Some(id), None) = (given.next(), given.next()) {
        if is_usable_request_id(id.as_bytes()) {
            return id.clone();
        }
    }
    let mut text = uuid::Uuid::encode_buffer();
    let fresh = HeaderValue::from_str(uuid::Uuid::new_v4().hyphenated().encode_lower(&mut text))
        .expect("a UUID is a valid header value");
    headers.insert(X_REQUEST_ID, fresh.clone());
    fresh
}

/// The span of one request: method, matched route (not the raw URI, which may carry
/// emails or ids), the request id, and, once authenticated, the actor
/// ([`super::record_actor`]).
fn make_span(req: &Request<Body>, request_id: &HeaderValue) -> Span {
    let route = req.extensions().get::<MatchedPath>().map_or("(unmatched)", MatchedPath::as_str);
    let request_id = request_id.to_str().unwrap_or("");
    tracing::info_span!("request", method = %req.method(), route, request_id, actor = tracing::field::Empty)
}

/// Where a request comes from, for its audit scope: the client's address (the socket
/// peer, as the logs and throttles see it) and the request id of its log lines. Nobody is
/// known to act until authentication names the actor ([`super::record_actor`]).
fn origin(req: &Request<Body>, request_id: &HeaderValue) -> Origin {
    let extensions = req.extensions();
    let client_address = match extensions.get::<ClientAddress>() {
        Some(ClientAddress(text)) => Some(text.to_string()),
        None => extensions.get::<ConnectInfo<SocketAddr>>().map(|ConnectInfo(addr)| addr.ip().to_string()),
    };
    let request_id = request_id.to_str().ok().map(str::to_owned);
    Origin { client_address, request_id }
}

pin_project! {
    /// A route's response future inside the request's span and audit scope; `inner` is
    /// `None` when the route panicked as it was called.
    pub struct Framed<F> {
        #[pin]
        inner: Option<F>,
        span: Span,
        start: Instant,
        request_id: HeaderValue,
        api: bool,
    }
}

impl<F> Future for Framed<F>
where
    F: Future<Output = Result<Response<Body>, Infallible>>,
{
    type Output = Result<Response<Body>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let _entered = this.span.enter();
        let mut response = match this.inner.as_pin_mut() {
            Some(inner) => match catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
                Ok(Poll::Pending) => return Poll::Pending,
                Ok(Poll::Ready(Ok(response))) => response,
                Ok(Poll::Ready(Err(never))) => match never {},
                Err(_) => panicked(),
            },
            None => panicked(),
        };
        let headers = response.headers_mut();
        headers.entry(X_REQUEST_ID).or_insert_with(|| this.request_id.clone());
        if *this.api {
            api_path::add_api_headers(headers);
        }
        let latency_ms = this.start.elapsed().as_secs_f64() * 1000.0;
        tracing::info!(target: LOG_TARGET, status = response.status().as_u16(), latency_ms, "request");
        Poll::Ready(Ok(response))
    }
}

/// The answer of a route that panicked: a plain 500, its cause in the log.
fn panicked() -> Response<Body> {
    tracing::error!(target: LOG_TARGET, "a request handler panicked");
    ApiError::Internal(anyhow::anyhow!("handler panicked")).into_response()
}

#[cfg(test)]
mod tests {
    use axum::http::{header, StatusCode};
    use axum::routing::{get, get_service};
    use axum::Router;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    use super::*;

    /// A handler whose future panics.
    async fn panics_when_polled() -> &'static str {
        panic!("planted: in the future")
    }

    /// A route whose service panics in `call`, before it makes a future.
    fn panics_when_called(_: Request<Body>) -> std::future::Ready<Result<Response<Body>, Infallible>> {
        panic!("planted: in call")
    }

    fn app() -> Router {
        let router = Router::new()
            .route("/v0/answer", get(|| async { "42" }))
            .route("/page", get(|| async { "a page" }))
            .route("/v0/panics", get(panics_when_polled))
            .route("/panics-when-called", get_service(tower::service_fn(panics_when_called)));
        crate::telemetry::wrap(router, false)
    }

    async fn get_path(path: &str, request_id: Option<&str>) -> Response<Body> {
        let mut req = Request::get(path);
        if let Some(id) = request_id {
            req = req.header(&X_REQUEST_ID, id);
        }
        app().oneshot(req.body(Body::empty()).unwrap()).await.unwrap()
    }

    fn id_of(res: &Response<Body>) -> &str {
        res.headers().get(&X_REQUEST_ID).expect("a request id").to_str().unwrap()
    }

    #[tokio::test]
    async fn every_answer_carries_its_request_id_and_the_v0_headers_under_v0_only() {
        let res = get_path("/v0/answer", Some("trace-7")).await;
        assert_eq!(id_of(&res), "trace-7", "a usable id is kept");
        assert_eq!(res.headers()[header::CACHE_CONTROL], "no-store");
        assert_eq!(res.headers()[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        let page = get_path("/page", Some("a b")).await;
        let fresh = uuid::Uuid::parse_str(id_of(&page)).expect("an unusable id is replaced by a UUID");
        assert_eq!(fresh.get_version_num(), 4);
        assert!(!page.headers().contains_key(header::CACHE_CONTROL), "no /v0 headers outside /v0");
        let (a, b) = (get_path("/page", None).await, get_path("/page", None).await);
        assert_ne!(id_of(&a), id_of(&b), "each request gets its own id");
    }

    #[tokio::test]
    async fn a_route_that_panics_in_its_future_or_in_its_call_is_answered_500_json() {
        for path in ["/v0/panics", "/panics-when-called"] {
            let res = get_path(path, Some("panic-1")).await;
            assert_eq!(res.status(), StatusCode::INTERNAL_SERVER_ERROR, "{path}");
            assert_eq!(id_of(&res), "panic-1", "{path}");
            assert_eq!(path.starts_with("/v0/"), res.headers().contains_key(header::CACHE_CONTROL), "{path}");
            let body = res.into_body().collect().await.unwrap().to_bytes();
            let body: serde_json::Value = serde_json::from_slice(&body).expect("a JSON body");
            assert_eq!(body["error"], "internal_error", "{path}");
        }
    }
}
