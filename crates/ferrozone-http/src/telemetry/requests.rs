//! The request metrics: how often each route answered with each status, and how long it
//! took (docs/operations.md, "Monitoring").
//!
//! Every label is bounded, so the number of series cannot grow with the traffic: the route
//! is the router's template (`/v0/devices/{id}`, never the id), `unmatched` for a path no
//! route matches (whatever a scanner probes), the method one of the verbs the API knows
//! or `other`, the status its three digits.
//!
//! Measuring must cost next to nothing next to the request it measures, so the layer
//! wraps the route's future rather than cloning the route per request, and each series'
//! handles are registered with the recorder once, on the series' first request: later
//! requests find them without building a key or allocating a label.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, PoisonError, RwLock};
use std::task::{ready, Context, Poll};
use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::{Method, StatusCode};
use axum::response::Response;
use metrics::{Counter, Histogram};
use pin_project_lite::pin_project;
use tower::{Layer, Service};

/// Requests answered, by `route`, `method` and `status`.
pub const REQUESTS: &str = "ferrozone_http_requests_total";
/// Seconds from the request reaching the router to its response, by `route` and `method`.
pub const DURATION: &str = "ferrozone_http_request_duration_seconds";

/// The route label of a request that matched no route.
pub const UNMATCHED: &str = "unmatched";

/// Counts and times every request of the routes it wraps (the outermost layer of the app,
/// so that a panic turned into a 500 is counted as one).
///
/// The handles come from the recorder in use when a series is first seen (the global one
/// in `serve`, a test's local one in tests), so one app records into one recorder.
#[derive(Clone, Default)]
pub struct MeasureLayer {
    series: Arc<Series>,
}

impl<S> Layer<S> for MeasureLayer {
    type Service = Measure<S>;

    fn layer(&self, inner: S) -> Measure<S> {
        Measure { inner, series: self.series.clone() }
    }
}

/// A route measured by [`MeasureLayer`].
#[derive(Clone)]
pub struct Measure<S> {
    inner: S,
    series: Arc<Series>,
}

impl<S> Service<Request> for Measure<S>
where
    S: Service<Request, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Measured<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let route = req.extensions().get::<MatchedPath>().cloned();
        let method = method_label(req.method());
        let started = Instant::now();
        Measured { inner: self.inner.call(req), route, method, started, series: self.series.clone() }
    }
}

pin_project! {
    /// A route's response future, recording the response's status and time once it is ready.
    pub struct Measured<F> {
        #[pin]
        inner: F,
        route: Option<MatchedPath>,
        method: &'static str,
        started: Instant,
        series: Arc<Series>,
    }
}

impl<F, E> Future for Measured<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let result = ready!(this.inner.poll(cx));
        if let Ok(response) = &result {
            let route = this.route.as_ref().map_or(UNMATCHED, MatchedPath::as_str);
            this.series.record(route, this.method, response.status(), this.started.elapsed().as_secs_f64());
        }
        Poll::Ready(result)
    }
}

/// The handles of every series seen so far, by route template. Its size is bounded by the
/// labels': routes × methods × statuses.
#[derive(Default)]
struct Series {
    routes: RwLock<HashMap<Box<str>, RouteSeries>>,
}

/// One route's handles: a counter per method and status, a histogram per method. A route
/// answers few methods and statuses, so a short list beats a hash.
#[derive(Default)]
struct RouteSeries {
    requests: Vec<(&'static str, StatusCode, Counter)>,
    durations: Vec<(&'static str, Histogram)>,
}

impl RouteSeries {
    fn get(&self, method: &str, status: StatusCode) -> Option<(&Counter, &Histogram)> {
        let requests = self.requests.iter().find(|(m, s, _)| *m == method && *s == status)?;
        let durations = self.durations.iter().find(|(m, _)| *m == method)?;
        Some((&requests.2, &durations.1))
    }

    /// Registers the handles `route` lacks for `method` and `status` with the recorder.
    fn register(&mut self, route: &str, method: &'static str, status: StatusCode) {
        if !self.requests.iter().any(|(m, s, _)| *m == method && *s == status) {
            let status_label = status.as_str().to_owned();
            let counter =
                metrics::counter!(REQUESTS, "route" => route.to_owned(), "method" => method, "status" => status_label);
            self.requests.push((method, status, counter));
        }
        if !self.durations.iter().any(|(m, _)| *m == method) {
            let histogram = metrics::histogram!(DURATION, "route" => route.to_owned(), "method" => method);
            self.durations.push((method, histogram));
        }
    }
}

impl Series {
    fn record(&self, route: &str, method: &'static str, status: StatusCode, seconds: f64) {
        let count = |(requests, durations): (&Counter, &Histogram)| {
            requests.increment(1);
            durations.record(seconds);
        };
        // A panic while the lock is held cannot leave a series half-written: the worst is
        // a handle registered twice, which the recorder answers with the same series.
        let routes = self.routes.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(handles) = routes.get(route).and_then(|r| r.get(method, status)) {
            return count(handles);
        }
        drop(routes);
        let mut routes = self.routes.write().unwrap_or_else(PoisonError::into_inner);
        let series = routes.entry(route.into()).or_default();
        series.register(route, method, status);
        series.get(method, status).map(count);
    }
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
