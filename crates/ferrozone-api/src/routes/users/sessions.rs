//! `/v0/users/{id}/sessions`: an administrator's view of a user's browser sessions, and
//! signing the user out everywhere.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;

use super::user_key;
use crate::dto::{SessionDto, SessionList};
use ferrozone_http::error::ApiError;
use ferrozone_http::extract::{Auth, PathId};
use ferrozone_http::{reply, AppState};

/// List a user's sessions
///
/// The browser sessions that have not expired, newest first. API tokens are not sessions
/// (see `/v0/api_tokens`).
#[utoipa::path(get, path = "/v0/users/{id}/sessions", tag = "users",
    params(("id" = String, Path, description = "User UUID or email")),
    responses(
        (status = 200, body = SessionList),
        crate::responses::ItemErrors,
    ))]
pub(super) async fn list_sessions(
    State(app): State<AppState>,
    Auth(actor): Auth,
    id: PathId,
) -> Result<Response, ApiError> {
    let (_, sessions) = app.domain.user_sessions(&actor, &user_key(id)?).await?;
    let data = sessions.into_iter().map(SessionDto::from).collect();
    Ok(reply::json(StatusCode::OK, &SessionList { data }))
}

/// Sign a user out everywhere
///
/// Ends every browser session of the user; their API tokens stay valid.
#[utoipa::path(delete, path = "/v0/users/{id}/sessions", tag = "users",
    params(("id" = String, Path, description = "User UUID or email")),
    responses(
        (status = 204, description = "Every session ended"),
        crate::responses::ItemErrors,
    ))]
pub(super) async fn end_sessions(
    State(app): State<AppState>,
    Auth(actor): Auth,
    id: PathId,
) -> Result<StatusCode, ApiError> {
    app.domain.sign_out_user(&actor, &user_key(id)?).await?;
    Ok(StatusCode::NO_CONTENT)
}
