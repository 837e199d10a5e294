//! JSON responses with the content type the API promises.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

pub const JSON_UTF8: &str = "application/json; charset=utf-8";

/// Serialises `body` with `status` and `Content-Type: application/json; charset=utf-8`.
pub fn json(status: StatusCode, body: &impl Serialize) -> Response {
    match serde_json::to_vec(body) {
        Ok(bytes) => (status, [(header::CONTENT_TYPE, HeaderValue::from_static(JSON_UTF8))], bytes).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "serialising a response failed");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                [(header::CONTENT_TYPE, HeaderValue::from_static(JSON_UTF8))],
                br#"{"error":"internal_error"}"#.as_slice(),
            )
                .into_response()
        }
    }
}

/// 201 with a `Location` header.
pub fn created(location: String, body: &impl Serialize) -> Response {
    let mut response = json(StatusCode::CREATED, body);
    if let Ok(value) = HeaderValue::from_str(&location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response
}
