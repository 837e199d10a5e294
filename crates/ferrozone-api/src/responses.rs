//! The error responses of the `/v0` routes in the OpenAPI document, one set per kind of
//! route, written once instead of in every route's annotation. The bodies are those of
//! docs/api.md section 4 (401), section 7 (400, 403, 404, 413, 415) and section 5 (422).

use std::collections::BTreeMap;

use utoipa::openapi::{RefOr, Response};
use utoipa::IntoResponses;

use crate::dto::{AuthErrors, ErrorBody, ValidationErrors};

/// A route for admins without a body or an id: `GET /v0/users`, `GET /v0/rules`,
/// `GET /v0/configuration`.
#[allow(dead_code)]
#[derive(IntoResponses)]
pub enum AdminErrors {
    /// No token, an unknown or expired one, or its user is disabled.
    #[response(status = 401)]
    Unauthenticated(AuthErrors),
    /// The token's user may not do this.
    #[response(status = 403)]
    Forbidden(ErrorBody),
}

/// An admin's question in the query string: `GET /v0/rules/check`.
#[allow(dead_code)]
#[derive(IntoResponses)]
pub enum QueryErrors {
    /// No token, an unknown or expired one, or its user is disabled.
    #[response(status = 401)]
    Unauthenticated(AuthErrors),
    /// The token's user may not do this.
    #[response(status = 403)]
    Forbidden(ErrorBody),
    /// Invalid parameters, each with its messages.
    #[response(status = 422)]
    Invalid(ValidationErrors),
}

/// The gateway's enrolment (`POST /gateway/v1/enrol`): no bearer token, the body carries the
/// enrolment token.
#[allow(dead_code)]
#[derive(IntoResponses)]
pub enum EnrolErrors {
    /// A body that is not a JSON object.
    #[response(status = 400)]
    BadRequest(ErrorBody),
    /// The enrolment token is unknown, used, expired or of a revoked gateway.
    #[response(status = 401)]
    Unauthenticated(AuthErrors),
    /// A body above the size limit.
    #[response(status = 413)]
    TooLarge(ErrorBody),
    /// A body that is not `application/json`.
    #[response(status = 415)]
    UnsupportedMediaType(ErrorBody),
    /// Invalid fields, each with its messages.
    #[response(status = 422)]
    Invalid(ValidationErrors),
}

/// What a gateway's own requests (`/gateway/v1/…`) may be refused with.
#[allow(dead_code)]
#[derive(IntoResponses)]
pub enum GatewayErrors {
    /// No session header, or a body that is not a JSON object.
    #[response(status = 400)]
    BadRequest(ErrorBody),
    /// The credential is unknown or its gateway revoked.
    #[response(status = 401)]
    Unauthenticated(AuthErrors),
    /// Another process holds this gateway's session.
    #[response(status = 409)]
    Conflict(ErrorBody),
    /// A body above the size limit.
    #[response(status = 413)]
    TooLarge(ErrorBody),
    /// Invalid statistics.
    #[response(status = 422)]
    Invalid(ValidationErrors),
    /// The state could not be read or built yet.
    #[response(status = 503)]
    Unavailable(ErrorBody),
}

/// A route naming one item by its id, without a body: reads and deletes.
#[allow(dead_code)]
#[derive(IntoResponses)]
pub enum ItemErrors {
    /// No token, an unknown or expired one, or its user is disabled.
    #[response(status = 401)]
    Unauthenticated(AuthErrors),
    /// The token's user may not do this.
    #[response(status = 403)]
    Forbidden(ErrorBody),
    /// No such item, or one the token's user may not see.
    #[response(status = 404)]
    NotFound(ErrorBody),
}

/// A route taking a JSON body: creates, and the configuration's PATCH and PUT.
#[allow(dead_code)]
#[derive(IntoResponses)]
pub enum BodyErrors {
    /// A body that is not a JSON object of the expected envelope.
    #[response(status = 400)]
    BadRequest(ErrorBody),
    /// No token, an unknown or expired one, or its user is disabled.
    #[response(status = 401)]
    Unauthenticated(AuthErrors),
    /// The token's user may not do this.
    #[response(status = 403)]
    Forbidden(ErrorBody),
    /// A body above the size limit.
    #[response(status = 413)]
    TooLarge(ErrorBody),
    /// A body that is not `application/json`.
    #[response(status = 415)]
    UnsupportedMediaType(ErrorBody),
    /// Invalid fields, each with its messages.
    #[response(status = 422)]
    Invalid(ValidationErrors),
}

/// A route naming one item by its id and taking a JSON body: updates and replaces. Its
/// answers are those of [`BodyErrors`] and [`ItemErrors`] together, written once there.
pub struct ItemBodyErrors;

impl IntoResponses for ItemBodyErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        let mut all = BodyErrors::responses();
        all.extend(ItemErrors::responses());
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statuses<T: IntoResponses>() -> Vec<String> {
        T::responses().into_keys().collect()
    }

    #[test]
    fn an_item_with_a_body_answers_as_both() {
        assert_eq!(statuses::<ItemBodyErrors>(), ["400", "401", "403", "404", "413", "415", "422"]);
        let (body, item, both) = (BodyErrors::responses(), ItemErrors::responses(), ItemBodyErrors::responses());
        let json = |r: Option<&RefOr<Response>>| serde_json::to_value(r.unwrap()).unwrap();
        for (status, response) in &both {
            let from = if status == "404" { &item } else { &body };
            assert_eq!(json(Some(response)), json(from.get(status)), "{status}");
        }
        // Where both sets answer, they say the same.
        for status in ["401", "403"] {
            assert_eq!(json(body.get(status)), json(item.get(status)), "{status}");
        }
    }
}
