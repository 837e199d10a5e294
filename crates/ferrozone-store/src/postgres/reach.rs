//! One direct connection before the pool is built, so that a server that cannot be
//! reached says why at once: the pool would only say "timed out" after its acquire timeout.

use std::time::Duration;

use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection};

/// How long the first connection may take: a server on the network answers far sooner.
pub(crate) const FIRST_CONNECTION_TIMEOUT: Duration = Duration::from_secs(2);

/// Connects once with `options` and closes the connection; the error says, in words,
/// what stood in the way.
pub(crate) async fn check(options: &PgConnectOptions) -> anyhow::Result<()> {
    match tokio::time::timeout(FIRST_CONNECTION_TIMEOUT, options.connect()).await {
        Ok(Ok(connection)) => {
            let _ = connection.close().await;
            Ok(())
        }
        // The explanation carries the driver's words where they add anything.
        Ok(Err(error)) => Err(anyhow::anyhow!(explain(&error, options))),
        Err(_) => anyhow::bail!(
            "no answer from {} within {} s (a wrong host, or a firewall that drops the packets)",
            address(options),
            FIRST_CONNECTION_TIMEOUT.as_secs()
        ),
    }
}

/// What an operator should read for `error`.
fn explain(error: &sqlx::Error, options: &PgConnectOptions) -> String {
    match error {
        sqlx::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
            format!("connection refused: is PostgreSQL running and listening on {}?", address(options))
        }
        sqlx::Error::Io(io) if is_unresolved(io) => {
            format!("the host name {} could not be resolved ({io})", options.get_host())
        }
        sqlx::Error::Database(db) => match db.code().as_deref() {
            Some("28P01") => format!("authentication failed for user {}: wrong password", options.get_username()),
            Some("28000") => format!("the server refused user {}: {}", options.get_username(), db.message()),
            Some("3D000") => {
                format!("database {} does not exist on {}", options.get_database().unwrap_or("?"), address(options))
            }
            _ => format!("the server refused the connection: {}", db.message()),
        },
        sqlx::Error::Tls(tls) => format!("TLS failed: {tls}"),
        other => format!("cannot connect: {other}"),
    }
}

/// Whether `io` is a failed host name lookup: the resolver's error has no kind of its own.
fn is_unresolved(io: &std::io::Error) -> bool {
    let text = io.to_string().to_ascii_lowercase();
    ["failed to lookup address", "name or service not known", "no address associated", "nodename nor servname"]
        .iter()
        .any(|needle| text.contains(needle))
}

fn address(options: &PgConnectOptions) -> String {
    format!("{}:{}", options.get_host(), options.get_port())
}
