//! Two per-request wrappers of every route, written as tower services rather than
//! `axum::middleware::from_fn`, which clones the rest of the route's stack and boxes a
//! future on every request: the `/v0` response headers, and the audit scope.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use axum::extract::ConnectInfo;
use axum::http::{Request, Response};
use ferrozone_domain::audit::{context, Actor, Origin};
use pin_project_lite::pin_project;
use tower::Service;

/// Adds [`crate::api_path::add_api_headers`] to every response under `/v0`, errors and 404s included.
#[derive(Clone)]
pub struct ApiHeaders<S>(pub S);

impl<S, B, R> Service<Request<B>> for ApiHeaders<S>
where
    S: Service<Request<B>, Response = Response<R>>,
{
    type Response = Response<R>;
    type Error = S::Error;
    type Future = WithApiHeaders<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let api = crate::api_path::is_api_path(req.uri().path());
        WithApiHeaders { inner: self.0.call(req), api }
    }
}

pin_project! {
    /// A response future that gets the `/v0` headers when `api`.
    pub struct WithApiHeaders<F> {
        #[pin]
        inner: F,
        api: bool,
    }
}

impl<F, R, E> Future for WithApiHeaders<F>
where
    F: Future<Output = Result<Response<R>, E>>,
{
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let mut result = ready!(this.inner.poll(cx));
        if let (true, Ok(response)) = (*this.api, &mut result) {
            crate::api_path::add_api_headers(response.headers_mut());
        }
        Poll::Ready(result)
    }
}

/// Runs each request inside an audit scope ([`context::scoped`]): what it writes is
/// recorded from the client's address (the socket peer, as the logs and throttles see it)
/// with the request id of its log lines, by nobody known until authentication names the
/// actor ([`super::record_actor`]).
#[derive(Clone)]
pub struct AuditScope<S>(pub S);

impl<S, B> Service<Request<B>> for AuditScope<S>
where
    S: Service<Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = context::Scoped<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let origin = Origin {
            client_address: req
                .extensions()
                .get::<ConnectInfo<SocketAddr>>()
                .map(|ConnectInfo(addr)| addr.ip().to_string()),
            request_id: req.headers().get("x-request-id").and_then(|v| v.to_str().ok()).map(str::to_owned),
        };
        context::scoped(context::Context::new(Actor::anonymous(), origin), || self.0.call(req))
    }
}
