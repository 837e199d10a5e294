//! The per-request wrapper of every route, written as a tower service rather than
//! `axum::middleware::from_fn`, which clones the rest of the route's stack and boxes a
//! future on every request. It does two things in one future, since each wrapper costs
//! every request a future of its own: it runs the request inside its audit scope, and adds
//! the `/v0` response headers.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use axum::extract::ConnectInfo;
use axum::http::{Request, Response};
use ferrozone_domain::audit::{context, Actor, Origin};
use pin_project_lite::pin_project;
use tower::Service;

use super::X_REQUEST_ID;

/// The client's address as text, formatted once per connection by the transport, so that
/// each request's audit scope copies it rather than formats it.
#[derive(Clone)]
pub struct ClientAddress(pub Arc<str>);

/// Wraps every route: see the module's documentation.
#[derive(Clone)]
pub struct RequestFrame<S>(pub S);

impl<S, B, R> Service<Request<B>> for RequestFrame<S>
where
    S: Service<Request<B>, Response = Response<R>>,
{
    type Response = Response<R>;
    type Error = S::Error;
    type Future = Framed<context::Scoped<S::Future>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let api = crate::api_path::is_api_path(req.uri().path());
        let context = context::Context::new(Actor::anonymous(), origin(&req));
        Framed { inner: context::scoped(context, || self.0.call(req)), api }
    }
}

/// Where a request comes from, for its audit scope: the client's address (the socket
/// peer, as the logs and throttles see it) and the request id of its log lines. Nobody is
/// known to act until authentication names the actor ([`super::record_actor`]).
fn origin<B>(req: &Request<B>) -> Origin {
    let extensions = req.extensions();
    let client_address = match extensions.get::<ClientAddress>() {
        Some(ClientAddress(text)) => Some(text.to_string()),
        None => extensions.get::<ConnectInfo<SocketAddr>>().map(|ConnectInfo(addr)| addr.ip().to_string()),
    };
    let request_id = req.headers().get(&X_REQUEST_ID).and_then(|v| v.to_str().ok()).map(str::to_owned);
    Origin { client_address, request_id }
}

pin_project! {
    /// A route's response future, which gets the `/v0` headers when `api`.
    pub struct Framed<F> {
        #[pin]
        inner: F,
        api: bool,
    }
}

impl<F, R, E> Future for Framed<F>
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
