//! The request metrics: how often each route answered with each status, and how long it
//! took (docs/operations.md, "Monitoring").
//!
//! Every label is bounded, so the number of series cannot grow with the traffic: the route
//! is the router's template (`/v0/devices/{id}`, never the id), `unmatched` for a path no
//! route matches (whatever a scanner probes), the method one of the verbs the API knows
//! or `other`, the status its three digits.

use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;

/// Requests answered, by `route`, `method` and `status`.
pub const REQUESTS: &str = "ferrozone_http_requests_total";
/// Seconds from the request reaching the router to its response, by `route` and `method`.
pub const DURATION: &str = "ferrozone_http_request_duration_seconds";

/// The route label of a request that matched no route.
pub const UNMATCHED: &str = "unmatched";

/// Counts and times one request (the outermost layer of the app, so that a panic turned
/// into a 500 is counted as one).
pub async fn measure(req: Request, next: Next) -> Response {
    let route = req.extensions().get::<MatchedPath>().map_or(UNMATCHED.to_owned(), |p| p.as_str().to_owned());
    let method = method_label(req.method());
    let started = Instant::now();
    let response = next.run(req).await;
    let elapsed = started.elapsed();
    let status = response.status().as_str().to_owned();
    metrics::counter!(REQUESTS, "route" => route.clone(), "method" => method, "status" => status).increment(1);
    metrics::histogram!(DURATION, "route" => route, "method" => method).record(elapsed);
    response
}

/// The method as a label: the verbs the API and the web pages answer, else `other` (a
/// client may send any token as a method).
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_methods_share_one_label() {
        assert_eq!(method_label(&Method::PATCH), "PATCH");
        assert_eq!(method_label(&Method::TRACE), "other");
        assert_eq!(method_label(&Method::from_bytes(b"PURGE").unwrap_or_default()), "other");
    }
}
