//! One HTTP/1.1 connection, plain or TLS: the app behind the request deadlines, the
//! connection's watchdog, and graceful closing when the server stops.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{header, HeaderValue, Request, Response, StatusCode};
use axum::Router;
use hyper::body::{Body as _, Incoming};
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tower::ServiceExt;

use super::body::{DeadlineBody, Tracked};
use super::caps::Slot;
use super::deadline::Deadline;
use super::tls::Acceptor;
use super::watchdog::{Activity, Watched};
use super::Limits;
use crate::telemetry::ClientAddress;

/// An accepted connection, admitted by the caps.
pub struct Connection {
    pub stream: TcpStream,
    pub remote: SocketAddr,
    pub activity: Arc<Activity>,
    /// Holds the connection's place under the caps until the connection ends.
    pub slot: Slot,
    /// The TLS side, when the server speaks HTTPS.
    pub tls: Option<Arc<Acceptor>>,
}

/// Serves one connection until the client closes it, a deadline passes, or the server
/// stops (then the request in flight, if any, is answered first). A TLS handshake comes
/// first, under the same watch as a request head: the header timeout counts from the
/// connection's start to the end of the first head.
pub async fn serve(connection: Connection, app: Router, limits: Arc<Limits>, mut close: watch::Receiver<()>) {
    let Connection { stream, remote, activity, slot: _slot, tls } = connection;
    let _ = stream.set_nodelay(true);
    let io = Watched::new(stream, activity.clone());
    let Some(tls) = tls else {
        return serve_http(io, remote, Served { app, limits, hsts: None }, activity, close).await;
    };
    let handshake = tokio::select! {
        stream = tls.accept(io) => stream,
        reason = activity.expired(&limits) => {
            tracing::debug!(reason, "closing a connection whose TLS handshake did not end in time");
            None
        }
        () = activity.evicted() => None,
        _ = close.changed() => None,
    };
    if let Some(stream) = handshake {
        serve_http(stream, remote, Served { app, limits, hsts: Some(tls.hsts.clone()) }, activity, close).await;
    }
}

/// HTTP/1.1 on `io` (plain, or after a TLS handshake): the requests, the connection's
/// deadlines, and graceful closing.
async fn serve_http<S>(
    io: S,
    remote: SocketAddr,
    served: Served,
    activity: Arc<Activity>,
    mut close: watch::Receiver<()>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let io = TokioIo::new(io);
    let limits = served.limits.clone();
    let service = {
        let activity = activity.clone();
        let client = ClientAddress(remote.ip().to_string().into());
        hyper::service::service_fn(move |req| handle(req, remote, client.clone(), served.clone(), activity.clone()))
    };
    // No timer for hyper: the head timeout is the watchdog's (`Activity`), which also
    // covers the idle wait and stalled responses. hyper's own would arm one more timer for
    // every request head (docs/benchmarks.md, "Against a baseline").
    let conn = http1::Builder::new().serve_connection(io, service);
    tokio::pin!(conn);
    let expired = activity.expired(&limits);
    tokio::pin!(expired);
    let mut closing = false;
    loop {
        // In order, the connection first: it is what wakes the task on nearly every poll.
        tokio::select! {
            biased;
            served = conn.as_mut() => {
                if let Err(e) = served {
                    tracing::debug!(error = %e, "HTTP connection ended with an error");
                }
                break;
            }
            _ = close.changed(), if !closing => {
                closing = true;
                conn.as_mut().graceful_shutdown();
            }
            reason = &mut expired => {
                tracing::debug!(reason, "closing an HTTP connection past its deadline");
                break;
            }
            () = activity.evicted() => {
                tracing::debug!("closing a waiting HTTP connection to make room for a new one");
                break;
            }
        }
    }
}

/// What every request of a connection is served with.
#[derive(Clone)]
struct Served {
    app: Router,
    limits: Arc<Limits>,
    /// The Strict-Transport-Security header of every response, over TLS only.
    hsts: Option<HeaderValue>,
}

/// One request: the client's address for the handlers, the body's deadline, the
/// handler's deadline, HSTS over TLS, and the response body counted until done.
async fn handle(
    req: Request<Incoming>,
    remote: SocketAddr,
    client: ClientAddress,
    served: Served,
    activity: Arc<Activity>,
) -> Result<Response<Tracked>, Infallible> {
    let Served { app, limits, hsts } = served;
    let guard = activity.request_started();
    let (mut parts, body) = req.into_parts();
    parts.extensions.insert(ConnectInfo(remote));
    parts.extensions.insert(client);
    let api = crate::api_path::is_api_path(parts.uri.path());
    let body =
        if body.is_end_stream() { Body::empty() } else { Body::new(DeadlineBody::new(body, limits.body_timeout)) };
    let req = Request::from_parts(parts, body);
    let mut response = match Deadline::new(app.oneshot(req), limits.request_timeout).await {
        Some(Ok(response)) => response,
        Some(Err(never)) => match never {},
        None => {
            tracing::warn!(timeout_secs = limits.request_timeout.as_secs(), "a request passed its deadline");
            timed_out(api)
        }
    };
    if let Some(policy) = &hsts {
        super::hsts::insert(response.headers_mut(), policy);
    }
    Ok(response.map(|body| Tracked::new(body, guard)))
}

/// The page of a request that passed its deadline: fixed, so that the transport renders
/// no template (and needs none of the pages' assets).
const TIMED_OUT_PAGE: &str = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
    <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>Try again · Ferrozone</title>\n\
    </head>\n<body>\n<main>\n<h1>Try again</h1>\n\
    <p>The server took too long to answer. Please try again in a moment.</p>\n</main>\n</body>\n</html>\n";

/// 503 with `Retry-After`: JSON under `/v0`, a short page elsewhere.
fn timed_out(api: bool) -> Response<Body> {
    let mut response = if api {
        let mut response = Response::new(Body::from(r#"{"error":"service_unavailable"}"#));
        *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json; charset=utf-8"));
        crate::api_path::add_api_headers(headers);
        response
    } else {
        crate::page::html(StatusCode::SERVICE_UNAVAILABLE, TIMED_OUT_PAGE.to_owned())
    };
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    response
}
