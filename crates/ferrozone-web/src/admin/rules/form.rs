//! Adding, editing and deleting a rule: `POST /v0/rules`, `PATCH` and `DELETE
//! /v0/rules/{id}` as forms, the domain's messages (overlaps included) at their fields and
//! the values kept. The user is named by email, the group by name; both blank means every
//! user.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use ferrozone_domain::error::Errors;
use ferrozone_domain::input::{NewRule, Patch, RuleChanges};
use ferrozone_domain::DomainError;
use uuid::Uuid;

use crate::checked_form::{CheckedForm, Fields};
use crate::format::sentence;
use crate::html;
use crate::page_error::PageError;
use crate::viewer::{AdminViewer, Nav, Section, Viewer};
use crate::{query_value, redirect};
use ferrozone_http::AppState;

/// The form's values as sent (or as stored, to edit).
#[derive(Default)]
struct Values {
    destination: String,
    action: String,
    /// `""` (every protocol), `tcp` or `udp`.
    port_type: String,
    port_range: String,
    email: String,
    /// A group's name.
    group: String,
}

impl Values {
    fn from(fields: &Fields) -> Self {
        let field = |name: &str| fields.get(name).map(|v| v.trim().to_owned()).unwrap_or_default();
        Values {
            destination: field("destination"),
            action: field("action"),
            port_type: field("port_type"),
            port_range: field("port_range"),
            email: field("email"),
            group: field("group"),
        }
    }
}

/// The messages of each field, as sentences.
#[derive(Default)]
struct FieldErrors {
    destination: Vec<String>,
    action: Vec<String>,
    port_type: Vec<String>,
    port_range: Vec<String>,
    email: Vec<String>,
    group: Vec<String>,
    base: Vec<String>,
}

impl FieldErrors {
    fn from(errors: &Errors) -> Self {
        let of = |fields: &[&str], name: &str| -> Vec<String> {
            let messages = fields.iter().flat_map(|field| errors.get(field).unwrap_or_default());
            messages.map(|message| sentence(name, message)).collect()
        };
        FieldErrors {
            destination: of(&["destination"], "Destination"),
            action: of(&["action"], "Action"),
            port_type: of(&["port_type"], "Protocol"),
            port_range: of(&["port_range"], "Port range"),
            email: of(&["user", "user_id"], "User"),
            group: of(&["group", "group_id"], "Group"),
            base: of(&["base"], ""),
        }
    }
}

#[derive(askama::Template)]
#[template(path = "admin/rule_form.html")]
struct FormPage<'a> {
    nav: Nav<'a>,
    /// `None` while adding.
    id: Option<Uuid>,
    values: Values,
    errors: FieldErrors,
    /// Every group's name, offered by the group field.
    group_names: Vec<String>,
}

impl FormPage<'_> {
    fn action_path(&self) -> String {
        self.id.map_or_else(|| "/admin/rules/new".to_owned(), |id| format!("/admin/rules/{id}"))
    }
}

async fn form_page<'a>(
    app: &AppState,
    viewer: &'a Viewer,
    id: Option<Uuid>,
    values: Values,
    errors: FieldErrors,
) -> Result<FormPage<'a>, DomainError> {
    let groups = app.domain.list_groups(viewer.principal()).await?;
    let group_names = groups.into_iter().map(|group| group.name).collect();
    Ok(FormPage { nav: viewer.nav(Section::AdminRules), id, values, errors, group_names })
}

/// `GET /admin/rules/new`: an empty form (drop, every user, every protocol); `?group=NAME`
/// (a group's page links so) names the group already.
pub(super) async fn new(
    State(app): State<AppState>,
    AdminViewer(viewer): AdminViewer,
    RawQuery(raw): RawQuery,
) -> Result<Response, PageError> {
    let group = query_value(raw.as_deref(), "group");
    let values = Values { action: "drop".to_owned(), group, ..Values::default() };
    let page = form_page(&app, &viewer, None, values, FieldErrors::default()).await?;
    Ok(html::response(StatusCode::OK, page))
}

/// `GET /admin/rules/{id}`: the form holding the stored rule.
pub(super) async fn edit(
    State(app): State<AppState>,
    AdminViewer(viewer): AdminViewer,
    Path(id): Path<String>,
) -> Result<Response, PageError> {
    let id = Uuid::parse_str(&id).map_err(|_| DomainError::NotFound)?;
    let rule = app.domain.get_rule(viewer.principal(), id).await?;
    let email = match rule.user_id {
        Some(user) => app.domain.find_user(&user.to_string()).await.map(|u| u.email).unwrap_or_default(),
        None => String::new(),
    };
    let group = match rule.group_id {
        Some(group) => app.domain.get_group(viewer.principal(), group).await.map(|g| g.name).unwrap_or_default(),
        None => String::new(),
    };
    let (port_type, port_range) = match rule.ports {
        Some(ports) => (ports.port_type.as_str().to_owned(), ports.range),
        None => (String::new(), String::new()),
    };
    let action = rule.action.as_str().to_owned();
    let values = Values { destination: rule.destination, action, port_type, port_range, email, group };
    let page = form_page(&app, &viewer, Some(id), values, FieldErrors::default()).await?;
    Ok(html::response(StatusCode::OK, page))
}

/// The user the form names: `None` for every user; a refusal at the field when no user has
/// that email.
async fn user_id(app: &AppState, email: &str) -> Result<Option<String>, Errors> {
    if email.is_empty() {
        return Ok(None);
    }
    match app.domain.find_user(email).await {
        Ok(user) => Ok(Some(user.id.to_string())),
        Err(_) => Err(Errors::one("user", "No user has this email.")),
    }
}

/// Whom the form names: a user (by email), a group (by name, whatever its case), or
/// neither; each refusal at its field.
async fn scope(app: &AppState, viewer: &Viewer, values: &Values) -> Result<(Option<String>, Option<String>), Errors> {
    if !values.email.is_empty() && !values.group.is_empty() {
        return Err(Errors::one("group", "Name a user or a group, not both."));
    }
    let user_id = user_id(app, &values.email).await?;
    if values.group.is_empty() {
        return Ok((user_id, None));
    }
    let groups = app
        .domain
        .list_groups(viewer.principal())
        .await
        .map_err(|_| Errors::one("group", "Groups could not be read."))?;
    let key = values.group.to_lowercase();
    match groups.into_iter().find(|group| group.name.to_lowercase() == key) {
        Some(group) => Ok((None, Some(group.id.to_string()))),
        None => Err(Errors::one("group", "No group has this name.")),
    }
}

/// `POST /admin/rules/new`: creates the rule and goes back to the list.
pub(super) async fn create(
    State(app): State<AppState>,
    AdminViewer(viewer): AdminViewer,
    CheckedForm(fields): CheckedForm,
) -> Result<Response, PageError> {
    let values = Values::from(&fields);
    let result = match scope(&app, &viewer, &values).await {
        Ok((user_id, group_id)) => {
            let some = |s: &str| (!s.is_empty()).then(|| s.to_owned());
            let input = NewRule {
                destination: some(&values.destination),
                action: some(&values.action),
                port_type: some(&values.port_type),
                port_range: some(&values.port_range),
                user_id,
                group_id,
                ..NewRule::default()
            };
            app.domain.create_rule(viewer.principal(), &input).await.map(|_| ())
        }
        Err(errors) => Err(DomainError::Invalid(errors)),
    };
    answer(&app, result, &viewer, None, values, "created").await
}

/// `POST /admin/rules/{id}`: saves every field of the form (a blank one clears it).
pub(super) async fn update(
    State(app): State<AppState>,
    AdminViewer(viewer): AdminViewer,
    Path(id): Path<String>,
    CheckedForm(fields): CheckedForm,
) -> Result<Response, PageError> {
    let id = Uuid::parse_str(&id).map_err(|_| DomainError::NotFound)?;
    let values = Values::from(&fields);
    let result = match scope(&app, &viewer, &values).await {
        Ok((user_id, group_id)) => {
            let patch = |s: &str| if s.is_empty() { Patch::Null } else { Patch::Value(s.to_owned()) };
            let changes = RuleChanges {
                destination: patch(&values.destination),
                action: patch(&values.action),
                port_type: patch(&values.port_type),
                port_range: patch(&values.port_range),
                user_id: user_id.map_or(Patch::Null, Patch::Value),
                group_id: group_id.map_or(Patch::Null, Patch::Value),
                ..RuleChanges::default()
            };
            app.domain.update_rule(viewer.principal(), id, &changes).await.map(|_| ())
        }
        Err(errors) => Err(DomainError::Invalid(errors)),
    };
    answer(&app, result, &viewer, Some(id), values, "updated").await
}

/// Back to the list after a change; the form again (422) with the messages otherwise.
async fn answer(
    app: &AppState,
    result: Result<(), DomainError>,
    viewer: &Viewer,
    id: Option<Uuid>,
    values: Values,
    done: &str,
) -> Result<Response, PageError> {
    match result {
        Ok(()) => Ok(redirect(&format!("/admin/rules?done={done}"))),
        Err(DomainError::Invalid(errors)) => {
            let page = form_page(app, viewer, id, values, FieldErrors::from(&errors)).await?;
            Ok(html::response(StatusCode::UNPROCESSABLE_ENTITY, page))
        }
        Err(e) => Err(e.into()),
    }
}

/// `POST /admin/rules/{id}/delete`.
pub(super) async fn delete(
    State(app): State<AppState>,
    AdminViewer(viewer): AdminViewer,
    Path(id): Path<String>,
    CheckedForm(_): CheckedForm,
) -> Result<Response, PageError> {
    let id = Uuid::parse_str(&id).map_err(|_| DomainError::NotFound)?;
    app.domain.delete_rule(viewer.principal(), id).await?;
    Ok(redirect("/admin/rules?done=deleted"))
}
