//! Serving the app over TCP with hyper, in plain HTTP or over TLS: one task per connection,
//! a deadline for every phase of a request (TLS handshake and head, body, handler,
//! keep-alive idle), and caps on connections per process and per client address. A refused connection is closed at once; refusals are logged once
//! per period with a count, never once per connection.

mod body;
mod caps;
mod conn;
mod deadline;
mod hsts;
mod nofile;
pub mod redirect;
mod tls;
mod watchdog;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::watch;

use self::caps::{Caps, RateLog};
pub use self::tls::{certificate_names, CertificateError, CertificateFiles, Tls, ACME_TLS_ALPN};

/// How long an accept that failed for want of resources (EMFILE, ENOBUFS) waits before the
/// next try: the pending connection stays in the backlog, so retrying at once would spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// The HTTP server's limits (`FERROZONE_HTTP_*`, docs/operations.md).
#[derive(Debug, Clone)]
pub struct Limits {
    /// From a connection's start, or from the first byte of a later request, to the end of
    /// that request's head.
    pub header_timeout: Duration,
    /// How long a keep-alive connection may wait for its next request.
    pub idle_timeout: Duration,
    /// From a request's head to its response's head; past it the answer is 503.
    pub request_timeout: Duration,
    /// From a request's head to the last byte of its body; past it reading the body fails.
    pub body_timeout: Duration,
    /// Connections served at once by this process (lowered to fit the open-file limit).
    pub max_connections: usize,
    /// Connections served at once per client address (IPv6: per /64); 0 for no cap.
    pub max_connections_per_address: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            request_timeout: Duration::from_secs(60),
            body_timeout: Duration::from_secs(30),
            max_connections: 4096,
            max_connections_per_address: 256,
        }
    }
}

/// Serves `app` on `listener` until `shutdown` completes, then lets open connections finish
/// their current request (idle ones close at once) and returns when all are closed.
/// With `tls`, every connection is TLS: its handshake must end within the header timeout,
/// which counts on to the end of the first request's head.
/// Raises the process's open-file soft limit to its hard limit first.
pub async fn serve<F>(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    tls: Option<Tls>,
    shutdown: F,
) -> std::io::Result<()>
where
    F: Future<Output = ()> + Send,
{
    let acceptor = tls.map(tls::Acceptor::new).transpose().map_err(std::io::Error::other)?.map(Arc::new);
    let limits = Arc::new(nofile::fit(limits));
    tracing::info!(
        max_connections = limits.max_connections,
        max_connections_per_address = limits.max_connections_per_address,
        tls = acceptor.is_some(),
        "accepting HTTP connections"
    );
    let caps = Caps::new(limits.max_connections, limits.max_connections_per_address);
    let accept_errors = RateLog::new("accepting a connection failed; retrying");
    let (close_tx, close_rx) = watch::channel(());
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let (stream, remote) = match accepted {
            Ok(accepted) => accepted,
            Err(e) if is_connection_error(&e) => continue,
            Err(e) => {
                accept_errors.note(&e.to_string());
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        // A refused stream is dropped here: closed at once.
        let activity = watchdog::Activity::new();
        if let Some(slot) = caps.admit(remote.ip(), &activity) {
            let connection = conn::Connection { stream, remote, activity, slot, tls: acceptor.clone() };
            tokio::spawn(conn::serve(connection, app.clone(), limits.clone(), close_rx.clone()));
        }
    }
    drop(listener);
    drop(close_rx);
    close_tx.send_replace(());
    close_tx.closed().await;
    Ok(())
}

/// Errors of one connection that do not concern the listener.
fn is_connection_error(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    matches!(e.kind(), ConnectionRefused | ConnectionAborted | ConnectionReset)
}

#[cfg(test)]
mod tests;
