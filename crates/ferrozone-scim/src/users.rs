//! `/scim/v2/Users` (docs/design/scim.md, "Users"): each SCIM user is a Ferrozone user with
//! its SCIM profile. The email is the primary `emails` value (the first when none is
//! primary), or `userName` when it is an email; `active` follows the directory but for a
//! user someone else disabled. A password is never taken: provisioned users sign in
//! through the configured identity providers.

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use ferrozone_domain::scim::{ScimProfile, ScimUser, ScimUserWrite};
use ferrozone_domain::validate::user::is_email;
use ferrozone_http::AppState;
use serde::Serialize;
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::auth::Provisioner;
use crate::error::ScimError;
use crate::list;
use crate::resource::{self, USER_SCHEMA};
use crate::{filter, patch, reply};
use std::collections::HashMap;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/Users", get(list_users).post(create_user))
        .route("/Users/{id}", get(get_user).put(replace_user).patch(patch_user).delete(delete_user))
}

async fn list_users(
    State(app): State<AppState>,
    _: Provisioner,
    query: Result<Query<HashMap<String, String>>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ScimError> {
    let query = list::query(query)?;
    let filter = filter::users(query.filter.as_deref())?;
    let listed = app.domain.scim_users(&filter, query.page()).await?;
    let base = base(&app);
    let resources: Vec<Shown<'_>> = listed.resources.iter().map(|user| shown(user, &base)).collect();
    Ok(list::reply(listed.total, query.page(), &resources))
}

async fn get_user(State(app): State<AppState>, _: Provisioner, Path(id): Path<String>) -> Result<Response, ScimError> {
    let user = app.domain.scim_user(id_of(&id)?).await.map_err(ScimError::naming("user"))?;
    Ok(reply::resource(StatusCode::OK, &representation(&user, &base(&app))))
}

async fn create_user(
    State(app): State<AppState>,
    _: Provisioner,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ScimError> {
    let write = read(&resource::object(&headers, &body)?)?;
    let user = app.domain.create_scim_user(&write).await?;
    Ok(reply::resource(StatusCode::CREATED, &representation(&user, &base(&app))))
}

async fn replace_user(
    State(app): State<AppState>,
    _: Provisioner,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ScimError> {
    let id = id_of(&id)?;
    let write = read(&resource::object(&headers, &body)?)?;
    let user = app.domain.replace_scim_user(id, &write).await.map_err(ScimError::naming("user"))?;
    Ok(reply::resource(StatusCode::OK, &representation(&user, &base(&app))))
}

/// Applies the operations onto the user as SCIM shows it, and writes the result as a
/// replace does. Answers 200 with the user (RFC 7644 also allows 204; directories read
/// the answer).
async fn patch_user(
    State(app): State<AppState>,
    _: Provisioner,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ScimError> {
    let id = id_of(&id)?;
    let operations = patch::operations(&resource::object(&headers, &body)?)?;
    let stored = app.domain.scim_user(id).await.map_err(ScimError::naming("user"))?;
    let Value::Object(mut shown) = representation(&stored, "") else { unreachable!("a user is an object") };
    patch::apply(&mut shown, &operations)?;
    let write = read(&shown)?;
    let user = app.domain.replace_scim_user(id, &write).await.map_err(ScimError::naming("user"))?;
    Ok(reply::resource(StatusCode::OK, &representation(&user, &base(&app))))
}

/// Disables the user and ends its link: a later `GET` is 404; the user stays disabled in
/// Ferrozone for an administrator to delete.
async fn delete_user(
    State(app): State<AppState>,
    _: Provisioner,
    Path(id): Path<String>,
) -> Result<StatusCode, ScimError> {
    app.domain.delete_scim_user(id_of(&id)?).await.map_err(ScimError::naming("user"))?;
    Ok(StatusCode::NO_CONTENT)
}

/// `/scim/v2` under the external URL, for `meta.location`.
pub(crate) fn base(app: &AppState) -> String {
    format!("{}/scim/v2", app.web.external_url)
}

pub(crate) fn id_of(text: &str) -> Result<Uuid, ScimError> {
    Uuid::parse_str(text).map_err(|_| ScimError::not_found("user"))
}

/// The user as SCIM shows it, typed: a list of 1,000 users is written straight from these,
/// with no JSON tree built first.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Shown<'a> {
    schemas: [&'static str; 1],
    id: Uuid,
    #[serde(skip_serializing_if = "Option::is_none")]
    external_id: Option<&'a str>,
    user_name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<ShownName<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    display_name: Option<&'a str>,
    emails: [ShownEmail<'a>; 1],
    active: bool,
    meta: Meta,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ShownName<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    given_name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    family_name: Option<&'a str>,
    formatted: String,
}

#[derive(Serialize)]
struct ShownEmail<'a> {
    value: &'a str,
    r#type: &'static str,
    primary: bool,
}

/// A resource's `meta`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Meta {
    pub resource_type: &'static str,
    pub created: String,
    pub last_modified: String,
    pub location: String,
}

pub(crate) fn shown<'a>(user: &'a ScimUser, base: &str) -> Shown<'a> {
    let p = &user.profile;
    let (given, family) = (p.given_name.as_deref(), p.family_name.as_deref());
    let name = (given.is_some() || family.is_some()).then(|| ShownName {
        given_name: given,
        family_name: family,
        formatted: [given, family].into_iter().flatten().collect::<Vec<_>>().join(" "),
    });
    Shown {
        schemas: [USER_SCHEMA],
        id: user.user.id,
        external_id: p.external_id.as_deref(),
        user_name: &p.user_name,
        name,
        display_name: p.display_name.as_deref(),
        emails: [ShownEmail { value: &user.user.email, r#type: "work", primary: true }],
        active: user.active(),
        meta: Meta {
            resource_type: "User",
            created: user.inserted_at.to_string(),
            last_modified: user.last_modified().to_string(),
            location: format!("{base}/Users/{}", user.user.id),
        },
    }
}

/// [`shown`] as a JSON value, for a PATCH to apply its operations onto.
pub(crate) fn representation(user: &ScimUser, base: &str) -> Value {
    serde_json::to_value(shown(user, base)).unwrap_or_default()
}

/// What a create, a replace or a patched user writes.
pub(crate) fn read(object: &Map<String, Value>) -> Result<ScimUserWrite, ScimError> {
    let user_name = resource::text(object, "username", "userName")?
        .ok_or_else(|| ScimError::invalid_value("`userName` is required"))?;
    let name = match resource::get(object, "name") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(name)) => name.clone(),
        Some(_) => return Err(ScimError::invalid_value("`name` must be an object")),
    };
    let profile = ScimProfile {
        external_id: resource::text(object, "externalid", "externalId")?,
        display_name: resource::text(object, "displayname", "displayName")?,
        given_name: resource::text(&name, "givenname", "name.givenName")?,
        family_name: resource::text(&name, "familyname", "name.familyName")?,
        user_name,
    };
    let email = match primary_email(object)? {
        Some(email) => email,
        None if is_email(&profile.user_name) => profile.user_name.clone(),
        None => {
            return Err(ScimError::invalid_value(
                "a user needs an email: a primary `emails` value, or a `userName` that is an email",
            ))
        }
    };
    let active = match resource::get(object, "active") {
        None | Some(Value::Null) => true,
        Some(value) => resource::boolean(value, "active")?,
    };
    Ok(ScimUserWrite { profile, email, active })
}

/// The `emails` value marked primary, else the first one.
fn primary_email(object: &Map<String, Value>) -> Result<Option<String>, ScimError> {
    let emails = match resource::get(object, "emails") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(emails)) => emails,
        Some(_) => return Err(ScimError::invalid_value("`emails` must be a list")),
    };
    let primary = |e: &&Value| {
        e.as_object()
            .and_then(|e| resource::get(e, "primary"))
            .is_some_and(|p| resource::boolean(p, "primary").unwrap_or(false))
    };
    let Some(chosen) = emails.iter().find(primary).or_else(|| emails.first()) else { return Ok(None) };
    let value = chosen.as_object().map(|e| resource::text(e, "value", "emails.value")).transpose()?.flatten();
    match value {
        Some(email) if is_email(&email) => Ok(Some(email)),
        Some(email) => Err(ScimError::invalid_value(format!("`emails` value `{email}` is not an email address"))),
        None => Err(ScimError::invalid_value("each of `emails` has a `value`")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn the_email_is_the_primary_one_or_the_user_name() {
        let okta = object(json!({"userName": "alice@example.com", "emails": [
            {"value": "alice.home@example.com", "type": "home"},
            {"value": "alice@example.com", "type": "work", "primary": true}]}));
        assert_eq!(read(&okta).unwrap().email, "alice@example.com");
        let first = object(json!({"userName": "alice", "emails": [{"value": "a@example.com"}]}));
        assert_eq!(read(&first).unwrap().email, "a@example.com");
        let by_name = object(json!({"userName": "bob@example.com"}));
        assert_eq!(read(&by_name).unwrap().email, "bob@example.com");
        assert!(read(&by_name).unwrap().active, "active unless it says otherwise");
    }

    #[test]
    fn a_user_without_an_email_or_a_user_name_is_refused_naming_what_is_missing() {
        let error = read(&object(json!({"userName": "carol"}))).unwrap_err();
        assert_eq!((error.scim_type, error.detail.contains("email")), (Some("invalidValue"), true));
        let error = read(&object(json!({"emails": [{"value": "c@x", "primary": true}]}))).unwrap_err();
        assert!(error.detail.contains("userName"), "{}", error.detail);
        assert!(read(&object(json!({"userName": "c", "emails": [{"value": "nope"}]}))).is_err());
    }

    #[test]
    fn what_is_shown_reads_back_as_the_same_write() {
        let write = read(&object(json!({"userName": "Dee", "externalId": "00u9", "displayName": "Dee D",
            "name": {"givenName": "Dee", "familyName": "D"}, "emails": [{"value": "dee@example.com", "primary": "True"}],
            "active": false, "password": "never kept"})))
        .unwrap();
        let now = ferrozone_domain::Timestamp::from_secs(1);
        let mut user =
            ferrozone_domain::User::new(write.email.clone(), ferrozone_domain::Role::Unprivileged, None, now);
        user.disabled_at = Some(now);
        let shown =
            representation(&ScimUser { user, profile: write.profile.clone(), inserted_at: now, updated_at: now }, "");
        assert_eq!(read(shown.as_object().unwrap()).unwrap(), write);
        assert_eq!(shown["name"]["formatted"], "Dee D");
        assert!(shown.get("password").is_none());
    }
}
