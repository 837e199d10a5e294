//! `POST /v0/users/{id}/disable` and `/enable`: Ferrozone's own operations (the
//! specification keeps `disabled_at` read-only: `PATCH`/`PUT` ignore it). The use case is
//! [`ferrozone_domain::Domain::set_user_disabled`], shared with the admin console and
//! `ferrozone user disable|enable` (docs/design/users.md, "Users and admins").

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;

use super::user_key;
use crate::dto::UserData;
use ferrozone_http::error::ApiError;
use ferrozone_http::extract::{Auth, PathId};
use ferrozone_http::{reply, AppState};

/// Disable a user
///
/// Beyond Firezone, admins only. Sets `disabled_at` (the server's time) and `disabled_by`,
/// ends the user's browser sessions, takes its devices off the VPN and refuses its API
/// tokens (401 `user_disabled`) until it is enabled. A disabled user is answered as it is,
/// its first `disabled_at` and `disabled_by` kept. 422 for oneself, and for the last admin
/// that is not disabled.
#[utoipa::path(post, path = "/v0/users/{id}/disable", tag = "users",
    params(("id" = String, Path, description = "User UUID or email")),
    responses(
        (status = 200, body = UserData),
        (status = 422, description = "Oneself, or the last enabled admin", body = crate::dto::ValidationErrors),
        crate::responses::ItemErrors,
    ))]
pub(super) async fn disable_user(state: State<AppState>, auth: Auth, id: PathId) -> Result<Response, ApiError> {
    set_disabled(state, auth, id, true).await
}

/// Enable a user
///
/// Beyond Firezone, admins only. Clears `disabled_at` and `disabled_by`: the user's
/// unexpired API tokens work again and its devices return to the VPN; its ended sessions
/// do not come back. An enabled user is answered as it is.
#[utoipa::path(post, path = "/v0/users/{id}/enable", tag = "users",
    params(("id" = String, Path, description = "User UUID or email")),
    responses(
        (status = 200, body = UserData),
        crate::responses::ItemErrors,
    ))]
pub(super) async fn enable_user(state: State<AppState>, auth: Auth, id: PathId) -> Result<Response, ApiError> {
    set_disabled(state, auth, id, false).await
}

async fn set_disabled(
    State(app): State<AppState>,
    Auth(actor): Auth,
    id: PathId,
    disabled: bool,
) -> Result<Response, ApiError> {
    // Authorization before the look-up: an unprivileged caller gets 403 for any id.
    actor.require_admin()?;
    let (user, _) = app.domain.set_user_disabled(&actor, &user_key(id)?, disabled).await?;
    Ok(reply::json(StatusCode::OK, &UserData { data: user.into() }))
}
