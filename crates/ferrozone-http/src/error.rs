//! The API's error responses (docs/api.md section 2).

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use ferrozone_domain::service::tokens::Refusal;
use ferrozone_domain::{DomainError, Errors};
use serde_json::json;

use crate::reply;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("bad request: {0}")]
    BadRequest(String),
    #[error("unauthenticated")]
    Unauthenticated,
    #[error("refused token: {0:?}")]
    Refused(Refusal),
    #[error("forbidden")]
    Forbidden,
    #[error("forbidden: {0}")]
    Disallowed(&'static str),
    #[error("missing or invalid CSRF token")]
    Csrf,
    #[error("not found")]
    NotFound,
    #[error("method not allowed")]
    MethodNotAllowed,
    /// The request conflicts with the resource's state; the message says how.
    #[error("conflict: {0}")]
    Conflict(&'static str),
    #[error("payload too large")]
    PayloadTooLarge,
    /// A body of another content type than the route reads; the message says which to send.
    #[error("unsupported media type")]
    UnsupportedMediaType(&'static str),
    #[error("invalid attributes")]
    Invalid(Errors),
    #[error("service unavailable")]
    Unavailable(#[source] anyhow::Error),
    #[error("busy: {0}")]
    Busy(&'static str),
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
}

impl From<DomainError> for ApiError {
    fn from(e: DomainError) -> Self {
        match e {
            DomainError::NotFound => ApiError::NotFound,
            DomainError::Forbidden => ApiError::Forbidden,
            DomainError::Disallowed(why) => ApiError::Disallowed(why),
            DomainError::Invalid(errors) => ApiError::Invalid(errors),
            DomainError::Unavailable(e) => ApiError::Unavailable(e),
            DomainError::Busy(what) => ApiError::Busy(what),
            DomainError::Internal(e) => ApiError::Internal(e),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, body) = match &self {
            ApiError::BadRequest(message) => {
                (StatusCode::BAD_REQUEST, json!({"error": "bad_request", "message": message}))
            }
            ApiError::Unauthenticated => (StatusCode::UNAUTHORIZED, json!({"errors": {"auth": "unauthenticated"}})),
            ApiError::Refused(Refusal::InvalidToken) => {
                (StatusCode::UNAUTHORIZED, json!({"errors": {"auth": "invalid_token"}}))
            }
            ApiError::Refused(Refusal::UserDisabled) => {
                (StatusCode::UNAUTHORIZED, json!({"errors": {"auth": "user_disabled"}}))
            }
            ApiError::Forbidden => (StatusCode::FORBIDDEN, json!({"error": "forbidden"})),
            ApiError::Disallowed(why) => (StatusCode::FORBIDDEN, json!({"error": "forbidden", "message": why})),
            ApiError::Csrf => {
                (StatusCode::FORBIDDEN, json!({"error": "forbidden", "message": "missing or invalid CSRF token"}))
            }
            ApiError::NotFound => (StatusCode::NOT_FOUND, json!({"error": "not_found"})),
            ApiError::MethodNotAllowed => (StatusCode::METHOD_NOT_ALLOWED, json!({"error": "method_not_allowed"})),
            ApiError::Conflict(message) => (StatusCode::CONFLICT, json!({"error": "conflict", "message": message})),
            ApiError::PayloadTooLarge => (StatusCode::PAYLOAD_TOO_LARGE, json!({"error": "payload_too_large"})),
            ApiError::UnsupportedMediaType(message) => {
                (StatusCode::UNSUPPORTED_MEDIA_TYPE, json!({"error": "unsupported_media_type", "message": message}))
            }
            ApiError::Invalid(errors) => (StatusCode::UNPROCESSABLE_ENTITY, json!({"errors": errors})),
            ApiError::Unavailable(cause) => {
                tracing::warn!(error = %format!("{cause:#}"), "database unavailable");
                (StatusCode::SERVICE_UNAVAILABLE, json!({"error": "service_unavailable"}))
            }
            ApiError::Busy(what) => {
                (StatusCode::SERVICE_UNAVAILABLE, json!({"error": "service_unavailable", "message": what}))
            }
            ApiError::Internal(cause) => {
                tracing::error!(error = %format!("{cause:#}"), "internal error");
                (StatusCode::INTERNAL_SERVER_ERROR, json!({"error": "internal_error"}))
            }
        };
        let mut response = reply::json(status, &body);
        let headers = response.headers_mut();
        if status == StatusCode::UNAUTHORIZED {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if status == StatusCode::SERVICE_UNAVAILABLE {
            headers.insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
        }
        response
    }
}

pub async fn not_found() -> ApiError {
    ApiError::NotFound
}

pub async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}
