//! SCIM's errors (RFC 7644 section 3.12): a JSON body with the `Error` schema, the status
//! as a string, a `scimType` where the RFC names one, and a `detail` that says what to fix.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use ferrozone_domain::validate::TAKEN;
use ferrozone_domain::DomainError;
use serde_json::json;

use crate::reply;

pub const ERROR_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:Error";

/// An error answer.
#[derive(Debug)]
pub struct ScimError {
    pub status: StatusCode,
    pub scim_type: Option<&'static str>,
    pub detail: String,
}

impl ScimError {
    pub fn new(status: StatusCode, scim_type: Option<&'static str>, detail: impl Into<String>) -> Self {
        Self { status, scim_type, detail: detail.into() }
    }

    /// 400 `invalidValue`: a value that is missing, of the wrong type or out of bounds.
    pub fn invalid_value(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, Some("invalidValue"), detail)
    }

    /// 400 `invalidSyntax`: a body that is not the JSON object the request needs.
    pub fn invalid_syntax(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, Some("invalidSyntax"), detail)
    }

    /// 400 `invalidFilter`.
    pub fn invalid_filter(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, Some("invalidFilter"), detail)
    }

    /// 400 `invalidPath`.
    pub fn invalid_path(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, Some("invalidPath"), detail)
    }

    /// 400 `mutability`: an attempt to change what cannot change.
    pub fn mutability(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, Some("mutability"), detail)
    }

    pub fn not_found(what: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, None, format!("{what} not found"))
    }

    /// `e`, with a `NotFound` naming `what` was not found.
    pub fn naming(what: &'static str) -> impl Fn(DomainError) -> Self {
        move |e| match e {
            DomainError::NotFound => Self::not_found(what),
            e => e.into(),
        }
    }

    pub fn unauthorized() -> Self {
        Self::new(StatusCode::UNAUTHORIZED, None, "a provisioning token is required: Authorization: Bearer fzscim_…")
    }
}

impl From<DomainError> for ScimError {
    fn from(e: DomainError) -> Self {
        match e {
            DomainError::NotFound => Self::not_found("resource"),
            DomainError::Invalid(errors) => {
                let taken = errors.iter().any(|(_, messages)| messages.iter().any(|m| m == TAKEN));
                let detail = errors
                    .iter()
                    .map(|(field, messages)| format!("{field} {}", messages.join(", ")))
                    .collect::<Vec<_>>()
                    .join("; ");
                if taken {
                    Self::new(StatusCode::CONFLICT, Some("uniqueness"), detail)
                } else {
                    Self::invalid_value(detail)
                }
            }
            DomainError::Busy(what) => {
                Self::new(StatusCode::SERVICE_UNAVAILABLE, None, format!("{what}: try again in a moment"))
            }
            DomainError::Unavailable(_) => {
                Self::new(StatusCode::SERVICE_UNAVAILABLE, None, "the database is unavailable: try again in a moment")
            }
            DomainError::Forbidden | DomainError::Disallowed(_) => {
                Self::new(StatusCode::FORBIDDEN, None, "not allowed with a provisioning token")
            }
            DomainError::Internal(e) => {
                tracing::error!(error = format!("{e:#}"), "a SCIM request failed");
                Self::new(StatusCode::INTERNAL_SERVER_ERROR, None, "internal error")
            }
        }
    }
}

impl IntoResponse for ScimError {
    fn into_response(self) -> Response {
        let mut body = json!({
            "schemas": [ERROR_SCHEMA],
            "status": self.status.as_u16().to_string(),
            "detail": self.detail,
        });
        if let Some(scim_type) = self.scim_type {
            body["scimType"] = json!(scim_type);
        }
        let mut response = reply::scim_json(self.status, &body);
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(axum::http::header::WWW_AUTHENTICATE, "Bearer".parse().expect("a header"));
        }
        response
    }
}
