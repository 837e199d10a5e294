//! `/v0/users`. `{id}` is a user's UUID or email.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use ferrozone_domain::input::{NewUser, UserChanges};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::dto::{PageMetadata, UserData, UserDto, UserList};
use crate::routes::ReadAttributes;
use ferrozone_http::cursor::users as users_page;
use ferrozone_http::error::ApiError;
use ferrozone_http::extract::{Auth, JsonObject, PathId};
use ferrozone_http::{reply, AppState};

mod disabling;
mod sessions;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_users, create_user))
        .routes(routes!(get_user, update_user, replace_user, delete_user))
        .routes(routes!(sessions::list_sessions, sessions::end_sessions))
        .routes(routes!(disabling::disable_user))
        .routes(routes!(disabling::enable_user))
}

/// List users
///
/// Ordered by creation. Without parameters the whole collection is returned. With `limit`,
/// `page_cursor` or `q`, one page (of `limit`, 50 when omitted) and
/// `metadata.next_page_cursor`.
#[utoipa::path(get, path = "/v0/users", tag = "users",
    params(
        ("q" = Option<String>, Query, description = "Only users whose email contains this text (any case)"),
        ("limit" = Option<u32>, Query, description = "Page size, 1 to 1000", minimum = 1, maximum = 1000),
        ("page_cursor" = Option<String>, Query, description = "`next_page_cursor` of the previous page"),
    ),
    responses(
        (status = 200, body = UserList),
        (status = 400, body = crate::dto::ErrorBody),
        crate::responses::AdminErrors,
    ))]
async fn list_users(
    State(app): State<AppState>,
    Auth(actor): Auth,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    // Authorization before validation: an unprivileged caller gets 403 whatever it sent.
    actor.require_admin()?;
    let Some(query) = users_page::parse_query(raw.as_deref().unwrap_or_default())? else {
        let users = app.domain.list_users(&actor).await?;
        let data = users.into_iter().map(UserDto::from).collect();
        return Ok(reply::json(StatusCode::OK, &UserList { data, metadata: None }));
    };
    let limit = query.limit;
    let users = app.domain.list_users_page(&actor, query).await?;
    let next_page_cursor = users_page::next_cursor(&users, limit);
    let data = users.into_iter().map(|listed| UserDto::from(listed.user)).collect();
    Ok(reply::json(StatusCode::OK, &UserList { data, metadata: Some(PageMetadata { limit, next_page_cursor }) }))
}

/// Create a user
///
/// With `password` (and `password_confirmation`) for password sign-in; with `email` and
/// `role` only to allow a provider sign-in in advance.
#[utoipa::path(post, path = "/v0/users", tag = "users",
    request_body = crate::wire::UserEnvelope,
    responses(
        (status = 201, body = UserData, headers(("location" = String, description = "/v0/users/{id}"))),
        crate::responses::BodyErrors,
    ))]
async fn create_user(State(app): State<AppState>, Auth(actor): Auth, body: JsonObject) -> Result<Response, ApiError> {
    // Authorization before validation: an unprivileged caller gets 403 whatever it sent.
    actor.require_admin()?;
    let input: NewUser = body.read()?;
    let user = app.domain.create_user(&actor, &input).await?;
    Ok(reply::created(format!("/v0/users/{}", user.id), &UserData { data: user.into() }))
}

/// Show a user
#[utoipa::path(get, path = "/v0/users/{id}", tag = "users",
    params(("id" = String, Path, description = "User UUID or email")),
    responses(
        (status = 200, body = UserData),
        crate::responses::ItemErrors,
    ))]
async fn get_user(State(app): State<AppState>, Auth(actor): Auth, id: PathId) -> Result<Response, ApiError> {
    let user = app.domain.get_user(&actor, &user_key(id)?).await?;
    Ok(reply::json(StatusCode::OK, &UserData { data: user.into() }))
}

/// Update a user
///
/// A partial update; `{"user": {}}` changes nothing. `disabled_at` is read-only and
/// ignored, like every other read-only or unknown key: `POST /v0/users/{id}/disable` and
/// `/enable` change it.
#[utoipa::path(patch, path = "/v0/users/{id}", tag = "users",
    params(("id" = String, Path, description = "User UUID or email")),
    request_body = crate::wire::UserEnvelope,
    responses(
        (status = 200, body = UserData),
        crate::responses::ItemBodyErrors,
    ))]
async fn update_user(
    State(app): State<AppState>,
    Auth(actor): Auth,
    id: PathId,
    body: JsonObject,
) -> Result<Response, ApiError> {
    actor.require_admin()?;
    let key = user_key(id)?;
    let changes: UserChanges = body.read()?;
    let user = app.domain.update_user(&actor, &key, &changes).await?;
    Ok(reply::json(StatusCode::OK, &UserData { data: user.into() }))
}

/// Update a user (PUT)
///
/// The same partial update as PATCH, for clients written for Firezone.
#[utoipa::path(put, path = "/v0/users/{id}", tag = "users",
    params(("id" = String, Path, description = "User UUID or email")),
    request_body = crate::wire::UserEnvelope,
    responses(
        (status = 200, body = UserData),
        crate::responses::ItemBodyErrors,
    ))]
async fn replace_user(state: State<AppState>, auth: Auth, id: PathId, body: JsonObject) -> Result<Response, ApiError> {
    update_user(state, auth, id, body).await
}

/// Delete a user
///
/// Deletes the user's devices and API tokens too. The last admin cannot be deleted.
#[utoipa::path(delete, path = "/v0/users/{id}", tag = "users",
    params(("id" = String, Path, description = "User UUID or email")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, body = crate::dto::AuthErrors), (status = 403, body = crate::dto::ErrorBody),
        (status = 404, body = crate::dto::ErrorBody), (status = 422, body = crate::dto::ValidationErrors),
    ))]
async fn delete_user(State(app): State<AppState>, Auth(actor): Auth, id: PathId) -> Result<StatusCode, ApiError> {
    app.domain.delete_user(&actor, &user_key(id)?).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A path segment that is not valid UTF-8 names no user: 404.
pub(crate) fn user_key(id: PathId) -> Result<String, ApiError> {
    id.map(|Path(id)| id).map_err(|_| ApiError::NotFound)
}
