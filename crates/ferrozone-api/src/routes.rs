//! Route tables, one module per resource. Routes are registered through `utoipa_axum`, so
//! a route cannot exist without its entry in the OpenAPI document ([`crate::openapi`]
//! gathers them).

pub mod audit;
pub mod configuration;
pub mod devices;
pub mod gateway_protocol;
pub mod gateways;
pub mod groups;
pub mod health;
pub mod invitations;
pub mod me;
pub mod rules;
pub mod scim_tokens;
pub mod server;
pub mod tokens;
pub mod totp;
pub mod users;
pub mod webhooks;

use axum::extract::Path;
use uuid::Uuid;

use crate::wire::Attributes;
use ferrozone_http::error::ApiError;
use ferrozone_http::extract::{JsonObject, PathId};

/// The UUID a path names: one that is not a UUID names nothing, a 404 as an unknown one.
pub(crate) fn uuid_path(id: PathId) -> Result<Uuid, ApiError> {
    id.ok().and_then(|Path(id)| Uuid::parse_str(&id).ok()).ok_or(ApiError::NotFound)
}

/// A request body read as a resource's attributes.
pub trait ReadAttributes {
    /// The attributes under `T::KEY` (`{"device": {…}}`) as `T`: a body whose `T::KEY` is
    /// missing or not an object is a 400.
    fn read<T: Attributes>(self) -> Result<T, ApiError>;
}

impl ReadAttributes for JsonObject {
    fn read<T: Attributes>(self) -> Result<T, ApiError> {
        self.wrapped(T::KEY).map(T::parse)
    }
}
