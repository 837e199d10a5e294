//! `/v0/groups`: groups of users and their members, admin only (docs/api.md section 5i,
//! docs/design/groups.md). A user's JSON in `/v0/users` stays Firezone's: memberships are
//! read through the groups.

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use ferrozone_domain::group::{Group, Member};
use ferrozone_domain::service::groups::{GroupInput, MemberInput};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::dto::Time;
use crate::routes::{uuid_path, ReadAttributes};
use ferrozone_http::error::ApiError;
use ferrozone_http::extract::{Auth, JsonObject, PathId};
use ferrozone_http::{reply, AppState};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_groups, create_group))
        .routes(routes!(get_group, update_group, replace_group, delete_group))
        .routes(routes!(list_members, add_member))
        .routes(routes!(remove_member))
}

/// A group of users.
#[derive(Serialize, ToSchema)]
pub struct GroupDto {
    pub id: Uuid,
    #[schema(example = "Engineering")]
    pub name: String,
    pub description: String,
    /// Where the group comes from: `manual` (made in the API or the console).
    #[schema(example = "manual")]
    pub source: String,
    pub member_count: i64,
    pub inserted_at: Time,
    pub updated_at: Time,
}

impl From<Group> for GroupDto {
    fn from(g: Group) -> Self {
        Self {
            id: g.id,
            name: g.name,
            description: g.description,
            source: g.source,
            member_count: g.member_count,
            inserted_at: Time(g.inserted_at),
            updated_at: Time(g.updated_at),
        }
    }
}

/// A member of a group.
#[derive(Serialize, ToSchema)]
pub struct MemberDto {
    pub user_id: Uuid,
    pub email: String,
    /// Where the membership comes from: `manual`.
    pub source: String,
    /// Since when the user is a member.
    pub inserted_at: Time,
}

impl From<Member> for MemberDto {
    fn from(m: Member) -> Self {
        Self { user_id: m.user_id, email: m.email, source: m.source, inserted_at: Time(m.inserted_at) }
    }
}

/// `{"data": group}`
#[derive(Serialize, ToSchema)]
pub struct GroupData {
    pub data: GroupDto,
}

/// `{"data": [groups…]}`, by name.
#[derive(Serialize, ToSchema)]
pub struct GroupList {
    pub data: Vec<GroupDto>,
}

/// `{"data": member}`
#[derive(Serialize, ToSchema)]
pub struct MemberData {
    pub data: MemberDto,
}

/// `{"data": [members…]}`, by email.
#[derive(Serialize, ToSchema)]
pub struct MemberList {
    pub data: Vec<MemberDto>,
}

/// List groups
#[utoipa::path(get, path = "/v0/groups", tag = "groups",
    responses(
        (status = 200, body = GroupList),
        crate::responses::AdminErrors,
    ))]
async fn list_groups(State(app): State<AppState>, Auth(actor): Auth) -> Result<Response, ApiError> {
    let groups = app.domain.list_groups(&actor).await?;
    Ok(reply::json(StatusCode::OK, &GroupList { data: groups.into_iter().map(GroupDto::from).collect() }))
}

/// Create a group
///
/// A name is required and unique whatever its case (`Engineering` and `engineering` are one).
#[utoipa::path(post, path = "/v0/groups", tag = "groups",
    request_body = crate::wire::GroupEnvelope,
    responses(
        (status = 201, body = GroupData, headers(("location" = String, description = "/v0/groups/{id}"))),
        crate::responses::BodyErrors,
    ))]
async fn create_group(State(app): State<AppState>, Auth(actor): Auth, body: JsonObject) -> Result<Response, ApiError> {
    actor.require_admin()?;
    let input: GroupInput = body.read()?;
    let group = app.domain.create_group(&actor, &input).await?;
    Ok(reply::created(format!("/v0/groups/{}", group.id), &GroupData { data: group.into() }))
}

/// Show a group
#[utoipa::path(get, path = "/v0/groups/{id}", tag = "groups",
    params(("id" = String, Path, description = "Group UUID")),
    responses(
        (status = 200, body = GroupData),
        crate::responses::ItemErrors,
    ))]
async fn get_group(State(app): State<AppState>, Auth(actor): Auth, id: PathId) -> Result<Response, ApiError> {
    actor.require_admin()?;
    let group = app.domain.get_group(&actor, uuid_path(id)?).await?;
    Ok(reply::json(StatusCode::OK, &GroupData { data: group.into() }))
}

/// Update a group
///
/// A partial update: omitted attributes keep their value; `null` clears the description (a
/// name cannot be cleared).
#[utoipa::path(patch, path = "/v0/groups/{id}", tag = "groups",
    params(("id" = String, Path, description = "Group UUID")),
    request_body = crate::wire::GroupEnvelope,
    responses(
        (status = 200, body = GroupData),
        crate::responses::ItemBodyErrors,
    ))]
async fn update_group(
    State(app): State<AppState>,
    Auth(actor): Auth,
    id: PathId,
    body: JsonObject,
) -> Result<Response, ApiError> {
    actor.require_admin()?;
    let id = uuid_path(id)?;
    let input: GroupInput = body.read()?;
    let group = app.domain.update_group(&actor, id, &input).await?;
    Ok(reply::json(StatusCode::OK, &GroupData { data: group.into() }))
}

/// Update a group (PUT)
///
/// The same partial update as PATCH, as the other resources have it.
#[utoipa::path(put, path = "/v0/groups/{id}", tag = "groups",
    params(("id" = String, Path, description = "Group UUID")),
    request_body = crate::wire::GroupEnvelope,
    responses(
        (status = 200, body = GroupData),
        crate::responses::ItemBodyErrors,
    ))]
async fn replace_group(state: State<AppState>, auth: Auth, id: PathId, body: JsonObject) -> Result<Response, ApiError> {
    update_group(state, auth, id, body).await
}

/// Delete a group
///
/// Its memberships go with it; its members' accounts stay.
#[utoipa::path(delete, path = "/v0/groups/{id}", tag = "groups",
    params(("id" = String, Path, description = "Group UUID")),
    responses(
        (status = 204, description = "Deleted"),
        crate::responses::ItemErrors,
    ))]
async fn delete_group(State(app): State<AppState>, Auth(actor): Auth, id: PathId) -> Result<StatusCode, ApiError> {
    actor.require_admin()?;
    app.domain.delete_group(&actor, uuid_path(id)?).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// List a group's members
#[utoipa::path(get, path = "/v0/groups/{id}/members", tag = "groups",
    params(("id" = String, Path, description = "Group UUID")),
    responses(
        (status = 200, body = MemberList),
        crate::responses::ItemErrors,
    ))]
async fn list_members(State(app): State<AppState>, Auth(actor): Auth, id: PathId) -> Result<Response, ApiError> {
    actor.require_admin()?;
    let members = app.domain.group_members(&actor, uuid_path(id)?).await?;
    Ok(reply::json(StatusCode::OK, &MemberList { data: members.into_iter().map(MemberDto::from).collect() }))
}

/// Add a member
///
/// `{"member": {"user_id": …}}`: 201 when the user became a member, 200 when it was one
/// already (nothing changes); an unknown user is 422 at `user_id`. Answers the membership.
#[utoipa::path(post, path = "/v0/groups/{id}/members", tag = "groups",
    params(("id" = String, Path, description = "Group UUID")),
    request_body = crate::wire::MemberEnvelope,
    responses(
        (status = 201, body = MemberData, description = "Added"),
        (status = 200, body = MemberData, description = "A member already"),
        crate::responses::ItemBodyErrors,
    ))]
async fn add_member(
    State(app): State<AppState>,
    Auth(actor): Auth,
    id: PathId,
    body: JsonObject,
) -> Result<Response, ApiError> {
    actor.require_admin()?;
    let id = uuid_path(id)?;
    let input: MemberInput = body.read()?;
    let (member, added) = app.domain.add_group_member(&actor, id, &input).await?;
    let status = if added { StatusCode::CREATED } else { StatusCode::OK };
    Ok(reply::json(status, &MemberData { data: member.into() }))
}

/// Remove a member
///
/// 404 when the user is not a member of the group.
#[utoipa::path(delete, path = "/v0/groups/{id}/members/{user_id}", tag = "groups",
    params(
        ("id" = String, Path, description = "Group UUID"),
        ("user_id" = String, Path, description = "The member's user UUID"),
    ),
    responses(
        (status = 204, description = "Removed"),
        (status = 422, body = crate::dto::ValidationErrors,
            description = "A membership an identity provider keeps: `user_id: [\"is kept by idp:<id> and ends there\"]`"),
        crate::responses::ItemErrors,
    ))]
async fn remove_member(
    State(app): State<AppState>,
    Auth(actor): Auth,
    ids: Result<Path<(String, String)>, PathRejection>,
) -> Result<StatusCode, ApiError> {
    actor.require_admin()?;
    let parse = |id: &str| Uuid::parse_str(id).ok();
    let (group, user) =
        ids.ok().and_then(|Path((group, user))| Some((parse(&group)?, parse(&user)?))).ok_or(ApiError::NotFound)?;
    app.domain.remove_group_member(&actor, group, user).await?;
    Ok(StatusCode::NO_CONTENT)
}
