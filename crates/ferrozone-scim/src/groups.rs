//! `/scim/v2/Groups` (docs/design/scim.md, "Groups"): Ferrozone groups whose source is
//! SCIM. A create takes over a group of the same name made by hand or by a sign-in (so the
//! rules an administrator wrote for it apply to the directory's members); its SCIM members
//! are the memberships SCIM made, and memberships made otherwise are neither shown nor
//! changed. A `PUT` without `members` keeps them: a rename never empties a group.

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use ferrozone_domain::scim::{MembersChange, ScimGroup, ScimGroupWrite, ScimMember};
use ferrozone_http::AppState;
use serde_json::{json, Map, Value};
use uuid::Uuid;

use crate::auth::Provisioner;
use crate::error::ScimError;
use crate::list::{self, ListQuery};
use crate::patch::{self, Op, Operation};
use crate::resource::{self, GROUP_SCHEMA};
use crate::users::base;
use crate::{filter, reply};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/Groups", get(list_groups).post(create_group))
        .route("/Groups/{id}", get(get_group).put(replace_group).patch(patch_group).delete(delete_group))
}

async fn list_groups(
    State(app): State<AppState>,
    _: Provisioner,
    query: Result<Query<std::collections::HashMap<String, String>>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ScimError> {
    let query: ListQuery = list::query(query)?;
    let filter = filter::groups(query.filter.as_deref())?;
    let listed = app.domain.scim_groups(&filter, query.page()).await?;
    let members = if query.without_members {
        None
    } else {
        let ids: Vec<Uuid> = listed.resources.iter().map(|g| g.group.id).collect();
        Some(app.domain.scim_members(&ids).await?)
    };
    let base = base(&app);
    let resources: Vec<Value> = listed
        .resources
        .iter()
        .map(|group| {
            let of_group = members.as_ref().map(|all| {
                all.iter().filter(|(id, _)| *id == group.group.id).map(|(_, m)| m.clone()).collect::<Vec<_>>()
            });
            representation(group, of_group.as_deref(), &base)
        })
        .collect();
    Ok(list::reply(listed.total, query.page(), &resources))
}

async fn get_group(State(app): State<AppState>, _: Provisioner, Path(id): Path<String>) -> Result<Response, ScimError> {
    let group = app.domain.scim_group(id_of(&id)?).await.map_err(ScimError::naming("group"))?;
    shown(&app, &group, StatusCode::OK).await
}

async fn create_group(
    State(app): State<AppState>,
    _: Provisioner,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ScimError> {
    let object = resource::object(&headers, &body)?;
    let (name, external_id) = name_and_external_id(&object)?;
    let members = match resource::get(&object, "members") {
        None | Some(Value::Null) => Vec::new(),
        Some(value) => member_ids(value)?,
    };
    let (group, _) = app.domain.create_scim_group(&name, external_id.as_deref(), &members).await?;
    shown(&app, &group, StatusCode::CREATED).await
}

async fn replace_group(
    State(app): State<AppState>,
    _: Provisioner,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ScimError> {
    let id = id_of(&id)?;
    let object = resource::object(&headers, &body)?;
    let (name, external_id) = name_and_external_id(&object)?;
    let mut write = ScimGroupWrite { name: Some(name), external_id: Some(external_id), members: Vec::new() };
    if let Some(value) = resource::get(&object, "members").filter(|v| !v.is_null()) {
        write.members.push(MembersChange::Replace(member_ids(value)?));
    }
    let (group, _) = app.domain.write_scim_group(id, &write).await.map_err(ScimError::naming("group"))?;
    shown(&app, &group, StatusCode::OK).await
}

async fn patch_group(
    State(app): State<AppState>,
    _: Provisioner,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ScimError> {
    let id = id_of(&id)?;
    let operations = patch::operations(&resource::object(&headers, &body)?)?;
    let write = changes(&operations)?;
    let (group, _) = app.domain.write_scim_group(id, &write).await.map_err(ScimError::naming("group"))?;
    shown(&app, &group, StatusCode::OK).await
}

/// Deletes the group, with its memberships and the rules that name it.
async fn delete_group(
    State(app): State<AppState>,
    _: Provisioner,
    Path(id): Path<String>,
) -> Result<StatusCode, ScimError> {
    app.domain.delete_scim_group(id_of(&id)?).await.map_err(ScimError::naming("group"))?;
    Ok(StatusCode::NO_CONTENT)
}

async fn shown(app: &AppState, group: &ScimGroup, status: StatusCode) -> Result<Response, ScimError> {
    let members: Vec<ScimMember> =
        app.domain.scim_members(&[group.group.id]).await?.into_iter().map(|(_, member)| member).collect();
    Ok(reply::resource(status, &representation(group, Some(&members), &base(app))))
}

fn id_of(text: &str) -> Result<Uuid, ScimError> {
    Uuid::parse_str(text).map_err(|_| ScimError::not_found("group"))
}

/// The group as SCIM shows it; without `members` when they were not asked for.
fn representation(group: &ScimGroup, members: Option<&[ScimMember]>, base: &str) -> Value {
    let id = group.group.id;
    let mut shown = json!({
        "schemas": [GROUP_SCHEMA],
        "id": id,
        "displayName": group.group.name,
        "meta": {
            "resourceType": "Group",
            "created": group.group.inserted_at.to_string(),
            "lastModified": group.group.updated_at.to_string(),
            "location": format!("{base}/Groups/{id}"),
        },
    });
    if let Some(external_id) = &group.external_id {
        shown["externalId"] = json!(external_id);
    }
    if let Some(members) = members {
        let members: Vec<Value> = members
            .iter()
            .map(|m| json!({"value": m.user_id, "display": m.user_name, "$ref": format!("{base}/Users/{}", m.user_id)}))
            .collect();
        shown["members"] = Value::Array(members);
    }
    shown
}

/// A group body's `displayName` (required) and `externalId`.
fn name_and_external_id(object: &Map<String, Value>) -> Result<(String, Option<String>), ScimError> {
    let name = resource::text(object, "displayname", "displayName")?
        .ok_or_else(|| ScimError::invalid_value("`displayName` is required"))?;
    Ok((name, resource::text(object, "externalid", "externalId")?))
}

/// The users of a `members` value: a list of `{"value": id}`.
fn member_ids(value: &Value) -> Result<Vec<Uuid>, ScimError> {
    let list = match value {
        Value::Array(list) => list.as_slice(),
        single @ Value::Object(_) => std::slice::from_ref(single),
        _ => return Err(ScimError::invalid_value("`members` is a list of {\"value\": user id}")),
    };
    list.iter()
        .map(|member| {
            let value = member.as_object().and_then(|m| resource::get(m, "value")).and_then(Value::as_str);
            let value = value.ok_or_else(|| ScimError::invalid_value("each of `members` has a `value`: a user id"))?;
            Uuid::parse_str(value.trim())
                .map_err(|_| ScimError::invalid_value(format!("members {value} is not a SCIM user")))
        })
        .collect()
}

/// What a group's PATCH changes, in the order its operations say.
fn changes(operations: &[Operation]) -> Result<ScimGroupWrite, ScimError> {
    let mut write = ScimGroupWrite::default();
    for operation in operations {
        match &operation.path {
            None => {
                let Some(Value::Object(values)) = &operation.value else {
                    return Err(ScimError::invalid_value("an add or a replace without a path has an object value"));
                };
                for (name, value) in values {
                    let path = patch::parse_path(name)?;
                    attribute(&mut write, operation.op, &path, Some(value))?;
                }
            }
            Some(path) => attribute(&mut write, operation.op, path, operation.value.as_ref())?,
        }
    }
    Ok(write)
}

fn attribute(write: &mut ScimGroupWrite, op: Op, path: &patch::Path, value: Option<&Value>) -> Result<(), ScimError> {
    let text = |value: Option<&Value>| -> Result<Option<String>, ScimError> {
        let mut object = Map::new();
        object.insert("v".into(), value.cloned().unwrap_or(Value::Null));
        resource::text(&object, "v", &path.attribute)
    };
    match (path.attribute.as_str(), op, &path.filter) {
        ("displayname", Op::Remove, _) => return Err(ScimError::mutability("a group keeps its `displayName`")),
        ("displayname", _, _) => {
            write.name = Some(text(value)?.ok_or_else(|| ScimError::invalid_value("`displayName` is required"))?);
        }
        ("externalid", Op::Remove, _) => write.external_id = Some(None),
        ("externalid", _, _) => write.external_id = Some(text(value)?),
        ("members", op, Some(filter)) => {
            let matches_value = filter.attribute == "value";
            let id = filter.value.as_str().and_then(|v| Uuid::parse_str(v.trim()).ok());
            match (op, matches_value, id) {
                (Op::Remove, true, Some(id)) => write.members.push(MembersChange::Remove(vec![id])),
                (Op::Remove, true, None) => {}
                _ => return Err(ScimError::invalid_path("members are removed with `members[value eq \"<id>\"]`")),
            }
        }
        ("members", Op::Add, None) => write.members.push(MembersChange::Add(member_ids(required(value)?)?)),
        ("members", Op::Replace, None) => write.members.push(MembersChange::Replace(member_ids(required(value)?)?)),
        // Microsoft Entra ID names the members to remove in the value.
        ("members", Op::Remove, None) => write.members.push(match value {
            Some(value) => MembersChange::Remove(member_ids(value)?),
            None => MembersChange::Replace(Vec::new()),
        }),
        // `id`, `schemas`, `meta` and attributes Ferrozone does not keep.
        _ => {}
    }
    Ok(())
}

fn required(value: Option<&Value>) -> Result<&Value, ScimError> {
    value.ok_or_else(|| ScimError::invalid_value("members to add or replace are given in `value`"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(body: Value) -> Result<ScimGroupWrite, ScimError> {
        changes(&patch::operations(body.as_object().unwrap()).unwrap())
    }

    #[test]
    fn the_membership_patches_directories_send() {
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        let okta = write(json!({"Operations": [
            {"op": "add", "path": "members", "value": [{"value": a.to_string(), "display": "a"}]},
            {"op": "remove", "path": format!("members[value eq \"{b}\"]")}]}))
        .unwrap();
        assert_eq!(okta.members, [MembersChange::Add(vec![a]), MembersChange::Remove(vec![b])]);
        let entra = write(json!({"Operations": [
            {"op": "Remove", "path": "members", "value": [{"value": b.to_string()}]},
            {"op": "Replace", "path": "displayName", "value": "Eng"}]}))
        .unwrap();
        assert_eq!((entra.members, entra.name.as_deref()), (vec![MembersChange::Remove(vec![b])], Some("Eng")));
        let rename =
            write(json!({"Operations": [{"op": "replace", "value": {"id": a.to_string(), "displayName": "Ops"}}]}));
        assert_eq!(rename.unwrap(), ScimGroupWrite { name: Some("Ops".into()), ..ScimGroupWrite::default() });
        let emptied = write(json!({"Operations": [{"op": "remove", "path": "members"}]})).unwrap();
        assert_eq!(emptied.members, [MembersChange::Replace(vec![])]);
    }

    #[test]
    fn a_group_keeps_its_name_and_members_are_users() {
        assert_eq!(
            write(json!({"Operations": [{"op": "remove", "path": "displayName"}]})).unwrap_err().scim_type,
            Some("mutability")
        );
        let error =
            write(json!({"Operations": [{"op": "add", "path": "members", "value": [{"value": "x"}]}]})).unwrap_err();
        assert_eq!(error.scim_type, Some("invalidValue"));
    }
}
