//! The HTTP server's limits: deadlines and connection caps (docs/operations.md).

use std::time::Duration;

use clap::Args;
use ferrozone_http::server::Limits;

/// Deadlines for each phase of a request and caps on open connections.
#[derive(Debug, Clone, Args)]
pub struct HttpLimits {
    /// Seconds a client has to send a request's head, from connecting (or from the first
    /// byte of a later request on the same connection); then the connection is closed.
    #[arg(long, global = true, env = "FERROZONE_HTTP_HEADER_TIMEOUT", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub http_header_timeout: u64,
    /// Seconds a keep-alive connection may wait for its next request before it is closed.
    #[arg(long, global = true, env = "FERROZONE_HTTP_IDLE_TIMEOUT", default_value_t = 60,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub http_idle_timeout: u64,
    /// Seconds from a request's head to its response; past them the answer is 503.
    #[arg(long, global = true, env = "FERROZONE_HTTP_REQUEST_TIMEOUT", default_value_t = 60,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub http_request_timeout: u64,
    /// Seconds from a request's head to the last byte of its body; past them it is refused.
    #[arg(long, global = true, env = "FERROZONE_HTTP_BODY_TIMEOUT", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub http_body_timeout: u64,
    /// Most HTTP connections open at once (lowered to fit the open-file limit).
    #[arg(long, global = true, env = "FERROZONE_HTTP_MAX_CONNECTIONS", default_value_t = 4096,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub http_max_connections: u64,
    /// Most HTTP connections open at once from one client address (IPv6: one /64); 0 for no
    /// cap (behind a reverse proxy every client has the proxy's address).
    #[arg(long, global = true, env = "FERROZONE_HTTP_MAX_CONNECTIONS_PER_ADDRESS", default_value_t = 256,
          value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub http_max_connections_per_address: u64,
}

impl HttpLimits {
    pub fn limits(&self) -> Limits {
        let count = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        Limits {
            header_timeout: Duration::from_secs(self.http_header_timeout),
            idle_timeout: Duration::from_secs(self.http_idle_timeout),
            request_timeout: Duration::from_secs(self.http_request_timeout),
            body_timeout: Duration::from_secs(self.http_body_timeout),
            max_connections: count(self.http_max_connections),
            max_connections_per_address: count(self.http_max_connections_per_address),
        }
    }
}
