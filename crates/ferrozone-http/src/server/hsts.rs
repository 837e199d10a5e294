//! HTTP Strict Transport Security (RFC 6797) on every response served over HTTPS: browsers
//! that have seen it use HTTPS alone for the host until `max-age` seconds have passed, so a
//! network attacker cannot turn a later visit into plain HTTP. Subdomains are left out
//! (`includeSubDomains`): they need not be Ferrozone's to decide.

use axum::http::{header, HeaderValue};
use axum::response::Response;
use axum::Router;

/// `app` with `Strict-Transport-Security: max-age=<max_age>` on every response. A
/// `max_age` of 0 is still sent: it tells browsers to forget an earlier policy.
pub fn hsts(app: Router, max_age: u64) -> Router {
    let Ok(value) = HeaderValue::try_from(format!("max-age={max_age}")) else {
        return app;
    };
    app.layer(axum::middleware::map_response(move |mut response: Response| {
        let value = value.clone();
        async move {
            response.headers_mut().insert(header::STRICT_TRANSPORT_SECURITY, value);
            response
        }
    }))
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use axum::routing::get;
    use tower::ServiceExt;

    use super::*;

    async fn header_of(app: Router, path: &str) -> (StatusCode, Option<HeaderValue>) {
        let request = Request::get(path).body(Body::empty()).expect("a request");
        let response = app.oneshot(request).await.expect("a response");
        (response.status(), response.headers().get(header::STRICT_TRANSPORT_SECURITY).cloned())
    }

    #[tokio::test]
    async fn every_response_carries_the_policy_errors_included() {
        let app = hsts(Router::new().route("/", get(|| async { "ok" })), 63_072_000);
        let expected = Some(HeaderValue::from_static("max-age=63072000"));
        assert_eq!(header_of(app.clone(), "/").await, (StatusCode::OK, expected.clone()));
        assert_eq!(header_of(app, "/missing").await, (StatusCode::NOT_FOUND, expected));
    }

    #[tokio::test]
    async fn zero_is_sent_to_clear_the_policy() {
        let app = hsts(Router::new().route("/", get(|| async { "ok" })), 0);
        assert_eq!(header_of(app, "/").await.1, Some(HeaderValue::from_static("max-age=0")));
    }
}
