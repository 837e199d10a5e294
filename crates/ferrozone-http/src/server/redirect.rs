//! The plain-HTTP side of an HTTPS server: a listener that only sends every request to
//! the same path and query on the external URL (308, which keeps the method and body).
//! The Location is built from the configured origin alone, never from the request's
//! `Host` header, so the listener cannot be made to redirect anywhere else.

use axum::body::Body;
use axum::http::{header, HeaderValue, Response, StatusCode, Uri};
use axum::Router;

/// The app of the redirect listener: every path, every method, to `origin` (such as
/// `https://vpn.example.com`, or with a port; no path).
pub fn router(origin: &str) -> Router {
    let origin = origin.trim_end_matches('/').to_owned();
    Router::new().fallback(move |uri: Uri| {
        let origin = origin.clone();
        async move { redirect(&origin, &uri) }
    })
}

/// 308 to `origin` with `uri`'s path and query.
pub fn redirect(origin: &str, uri: &Uri) -> Response<Body> {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::PERMANENT_REDIRECT;
    if let Ok(location) = HeaderValue::try_from(location(origin, uri)) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    response
}

/// `origin` followed by `uri`'s path and query; only those parts of the request are used
/// (a request in absolute form names a host too: it is ignored).
fn location(origin: &str, uri: &Uri) -> String {
    match uri.path_and_query().map(|pq| pq.as_str()) {
        Some(pq) if pq.starts_with('/') => format!("{origin}{pq}"),
        _ => format!("{origin}/"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn located(uri: &str) -> String {
        let uri: Uri = uri.parse().expect("a URI");
        let response = redirect("https://vpn.example.com:8443", &uri);
        assert_eq!(response.status(), StatusCode::PERMANENT_REDIRECT);
        response.headers()[header::LOCATION].to_str().expect("ASCII").to_owned()
    }

    #[test]
    fn the_path_and_query_are_kept_on_the_external_origin() {
        assert_eq!(located("/"), "https://vpn.example.com:8443/");
        assert_eq!(located("/sign_in?next=%2Fdevices&x=1"), "https://vpn.example.com:8443/sign_in?next=%2Fdevices&x=1");
    }

    #[test]
    fn a_host_named_in_the_request_is_never_used() {
        assert_eq!(located("http://evil.example/steal?x=1"), "https://vpn.example.com:8443/steal?x=1");
        assert_eq!(located("*"), "https://vpn.example.com:8443/");
    }
}
