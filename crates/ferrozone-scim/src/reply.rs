//! SCIM's answers: `application/scim+json`, never cached.

use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, LOCATION};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::Value;

/// The media type of every SCIM body (RFC 7644 section 3.1).
pub const SCIM_JSON: &str = "application/scim+json";

/// `body` in `application/scim+json`, serialised as the API's bodies are (one allocation
/// of the body's size: [`ferrozone_http::reply::to_bytes`]).
pub fn scim_json(status: StatusCode, body: &impl Serialize) -> Response {
    let bytes = ferrozone_http::reply::to_bytes(body).unwrap_or_default();
    let mut response = (status, bytes).into_response();
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(SCIM_JSON));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// A resource, with its `Location` when it was created.
pub fn resource(status: StatusCode, body: &Value) -> Response {
    let mut response = scim_json(status, body);
    if status == StatusCode::CREATED {
        if let Some(location) = body["meta"]["location"].as_str().and_then(|l| HeaderValue::from_str(l).ok()) {
            response.headers_mut().insert(LOCATION, location);
        }
    }
    response
}
