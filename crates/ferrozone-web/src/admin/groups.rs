//! The console's groups (docs/web.md, "Groups"): the list with a form that adds one
//! (`GET/POST /admin/groups`), and a group's page (`/admin/groups/{id}`): its name and
//! description, where it comes from, its members (added by email, removed one at a time),
//! the rules that name it, and Delete. Each calls the use case of its `/v0/groups` operation.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use ferrozone_domain::group::{Group, Member, MANUAL};
use ferrozone_domain::input::Patch;
use ferrozone_domain::service::groups::{GroupInput, MemberInput};
use ferrozone_domain::DomainError;
use std::collections::HashMap;
use uuid::Uuid;

use super::rules::RuleRow;
use crate::checked_form::{CheckedForm, Fields};
use crate::format::sentences;
use crate::page_error::PageError;
use crate::viewer::{AdminViewer, Nav, Section, Viewer};
use crate::{html, query_value, redirect};
use ferrozone_http::AppState;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/admin/groups", get(list).post(create))
        .route("/admin/groups/{id}", get(show).post(update))
        .route("/admin/groups/{id}/members", post(add_member))
        .route("/admin/groups/{id}/members/{user_id}/remove", post(remove_member))
        .route("/admin/groups/{id}/delete", post(delete))
}

/// A name and a description as sent, with their messages.
#[derive(Default)]
struct GroupForm {
    name: String,
    description: String,
    name_error: String,
    description_error: String,
}

impl GroupForm {
    fn from(fields: &Fields) -> Self {
        let field = |name: &str| fields.get(name).map(|v| v.trim().to_owned()).unwrap_or_default();
        GroupForm { name: field("name"), description: field("description"), ..GroupForm::default() }
    }

    fn of(group: &Group) -> Self {
        GroupForm { name: group.name.clone(), description: group.description.clone(), ..GroupForm::default() }
    }

    fn input(&self) -> GroupInput {
        GroupInput {
            name: Patch::Value(self.name.clone()),
            description: Patch::Value(self.description.clone()),
            ..GroupInput::default()
        }
    }

    /// The form again with the domain's messages at its fields.
    fn refused(mut self, errors: &ferrozone_domain::error::Errors) -> Self {
        self.name_error = sentences("Name", errors.get("name").unwrap_or_default());
        self.description_error = sentences("Description", errors.get("description").unwrap_or_default());
        self
    }
}

#[derive(askama::Template)]
#[template(path = "admin/groups.html")]
struct ListPage<'a> {
    nav: Nav<'a>,
    groups: Vec<Group>,
    form: GroupForm,
    notice: Option<&'static str>,
}

#[derive(askama::Template)]
#[template(path = "admin/group.html")]
struct GroupPage<'a> {
    nav: Nav<'a>,
    group: Group,
    form: GroupForm,
    members: Vec<Member>,
    /// The email typed into "Add a member", and its message.
    email: String,
    email_error: String,
    rules: Vec<RuleRow>,
    notice: Option<&'static str>,
}

impl GroupPage<'_> {
    /// Whether the group was made here; one from an identity provider or SCIM is kept there.
    fn manual(&self) -> bool {
        self.group.source == MANUAL
    }

    fn source(&self, source: &str) -> String {
        source_label(source)
    }

    /// The group's name as a query value, for the link that adds a rule for it.
    fn name_in_query(&self) -> String {
        form_urlencoded::byte_serialize(self.group.name.as_bytes()).collect()
    }
}

impl ListPage<'_> {
    fn source(&self, source: &str) -> String {
        source_label(source)
    }
}

/// Where a group or a membership comes from, in words: here, the directory (SCIM), or the
/// identity provider with that id.
pub(super) fn source_label(source: &str) -> String {
    match source {
        MANUAL => "Added here".to_owned(),
        ferrozone_domain::scim::SOURCE => "From the directory (SCIM)".to_owned(),
        provider => format!("From {provider}"),
    }
}

async fn list(
    AdminViewer(viewer): AdminViewer,
    State(app): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Result<Response, PageError> {
    let notice = (query_value(raw.as_deref(), "done") == "deleted").then_some("The group was deleted.");
    render_list(&app, &viewer, GroupForm::default(), notice, StatusCode::OK).await
}

async fn render_list(
    app: &AppState,
    viewer: &Viewer,
    form: GroupForm,
    notice: Option<&'static str>,
    status: StatusCode,
) -> Result<Response, PageError> {
    let groups = app.domain.list_groups(viewer.principal()).await?;
    Ok(html::response(status, ListPage { nav: viewer.nav(Section::AdminGroups), groups, form, notice }))
}

async fn create(
    AdminViewer(viewer): AdminViewer,
    State(app): State<AppState>,
    CheckedForm(fields): CheckedForm,
) -> Result<Response, PageError> {
    let form = GroupForm::from(&fields);
    match app.domain.create_group(viewer.principal(), &form.input()).await {
        Ok(group) => Ok(redirect(&format!("/admin/groups/{}?done=created", group.id))),
        Err(DomainError::Invalid(errors)) => {
            render_list(&app, &viewer, form.refused(&errors), None, StatusCode::UNPROCESSABLE_ENTITY).await
        }
        Err(e) => Err(e.into()),
    }
}

fn group_id(id: &str) -> Result<Uuid, PageError> {
    Uuid::parse_str(id).map_err(|_| DomainError::NotFound.into())
}

/// What a group's page shows besides the group: the form, the typed email, a notice.
#[derive(Default)]
struct Shown {
    form: Option<GroupForm>,
    email: String,
    email_error: String,
    notice: Option<&'static str>,
}

async fn show(
    AdminViewer(viewer): AdminViewer,
    State(app): State<AppState>,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
) -> Result<Response, PageError> {
    let notice = match query_value(raw.as_deref(), "done").as_str() {
        "created" => Some("The group was created."),
        "updated" => Some("The group was saved."),
        "added" => Some("The member was added."),
        "removed" => Some("The member was removed."),
        _ => None,
    };
    render(&app, &viewer, group_id(&id)?, Shown { notice, ..Shown::default() }, StatusCode::OK).await
}

async fn render(
    app: &AppState,
    viewer: &Viewer,
    id: Uuid,
    shown: Shown,
    status: StatusCode,
) -> Result<Response, PageError> {
    let actor = viewer.principal();
    let group = app.domain.get_group(actor, id).await?;
    let members = app.domain.group_members(actor, id).await?;
    let mut rules = app.domain.list_rules(actor).await?;
    rules.retain(|rule| rule.group_id == Some(id));
    rules.sort_by_key(|rule| (ferrozone_domain::egress::lookup_step(rule), rule.id));
    let names = HashMap::from([(group.id, group.name.clone())]);
    let rules = rules.iter().map(|rule| RuleRow::new(rule, &HashMap::new(), &names)).collect();
    let form = shown.form.unwrap_or_else(|| GroupForm::of(&group));
    let page = GroupPage {
        nav: viewer.nav(Section::AdminGroups),
        group,
        form,
        members,
        email: shown.email,
        email_error: shown.email_error,
        rules,
        notice: shown.notice,
    };
    Ok(html::response(status, page))
}

async fn update(
    AdminViewer(viewer): AdminViewer,
    State(app): State<AppState>,
    Path(id): Path<String>,
    CheckedForm(fields): CheckedForm,
) -> Result<Response, PageError> {
    let id = group_id(&id)?;
    let form = GroupForm::from(&fields);
    match app.domain.update_group(viewer.principal(), id, &form.input()).await {
        Ok(_) => Ok(redirect(&format!("/admin/groups/{id}?done=updated"))),
        Err(DomainError::Invalid(errors)) => {
            let shown = Shown { form: Some(form.refused(&errors)), ..Shown::default() };
            render(&app, &viewer, id, shown, StatusCode::UNPROCESSABLE_ENTITY).await
        }
        Err(e) => Err(e.into()),
    }
}

/// `POST /admin/groups/{id}/members`: the user named by `email` joins the group.
async fn add_member(
    AdminViewer(viewer): AdminViewer,
    State(app): State<AppState>,
    Path(id): Path<String>,
    CheckedForm(fields): CheckedForm,
) -> Result<Response, PageError> {
    let id = group_id(&id)?;
    let email = fields.get("email").map(|v| v.trim().to_owned()).unwrap_or_default();
    let refused = |message: &str| Shown { email: email.clone(), email_error: message.to_owned(), ..Shown::default() };
    let user = match app.domain.find_user(&email).await {
        Ok(user) if !email.is_empty() => user,
        Ok(_) | Err(DomainError::NotFound) => {
            let shown = refused("No user has this email.");
            return render(&app, &viewer, id, shown, StatusCode::UNPROCESSABLE_ENTITY).await;
        }
        Err(e) => return Err(e.into()),
    };
    let input = MemberInput { user_id: Some(user.id.to_string()), ..MemberInput::default() };
    match app.domain.add_group_member(viewer.principal(), id, &input).await {
        Ok(_) => Ok(redirect(&format!("/admin/groups/{id}?done=added"))),
        Err(DomainError::Invalid(_)) => {
            render(&app, &viewer, id, refused("No user has this email."), StatusCode::UNPROCESSABLE_ENTITY).await
        }
        Err(e) => Err(e.into()),
    }
}

async fn remove_member(
    AdminViewer(viewer): AdminViewer,
    State(app): State<AppState>,
    Path((id, user_id)): Path<(String, String)>,
    _: CheckedForm,
) -> Result<Response, PageError> {
    let id = group_id(&id)?;
    let user = Uuid::parse_str(&user_id).map_err(|_| PageError::from(DomainError::NotFound))?;
    match app.domain.remove_group_member(viewer.principal(), id, user).await {
        // Removed meanwhile by another admin: what was asked is done.
        Ok(()) | Err(DomainError::NotFound) => Ok(redirect(&format!("/admin/groups/{id}?done=removed"))),
        Err(e) => Err(e.into()),
    }
}

async fn delete(
    AdminViewer(viewer): AdminViewer,
    State(app): State<AppState>,
    Path(id): Path<String>,
    _: CheckedForm,
) -> Result<Response, PageError> {
    let id = group_id(&id)?;
    app.domain.delete_group(viewer.principal(), id).await?;
    Ok(redirect("/admin/groups?done=deleted"))
}
