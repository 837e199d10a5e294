//! The provisioning token: `Authorization: Bearer fzscim_…`, created by an admin, and good
//! for `/scim/v2` alone (an API token is refused here, and this token by `/v0`). The actor
//! of what it does is SCIM, named by the token's id in the audit log.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use ferrozone_http::extract::bearer_token;
use ferrozone_http::AppState;

use crate::error::ScimError;

/// A request authenticated by a provisioning token (named as its actor).
pub struct Provisioner;

impl FromRequestParts<AppState> for Provisioner {
    type Rejection = ScimError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ScimError> {
        let secret = bearer_token(&parts.headers).ok_or_else(ScimError::unauthorized)?;
        let token = state.domain.scim_token(secret).await?.ok_or_else(ScimError::unauthorized)?;
        ferrozone_http::telemetry::record_provisioner(token.id);
        Ok(Provisioner)
    }
}
