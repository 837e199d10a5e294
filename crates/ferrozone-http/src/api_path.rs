//! What sets the `/v0` API's answers apart, wherever they are made (a route, a fallback, the
//! transport's own refusals): their paths, and the headers every one of them carries.

use axum::http::{header, HeaderMap, HeaderValue};

/// Whether `path` is under the `/v0` API or the gateways' protocol (`/gateway/`, whose
/// answers carry credentials): their responses are JSON and never cached.
pub fn is_api_path(path: &str) -> bool {
    path == "/v0" || path.starts_with("/v0/") || path.starts_with("/gateway/")
}

/// Every response under `/v0` (errors and 404s included) is not to be stored by any cache
/// (it may carry keys) nor sniffed as another content type.
pub fn add_api_headers(headers: &mut HeaderMap) {
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
}
