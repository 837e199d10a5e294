//! `GET/POST /admin/users/{id}/delete`: a page naming what goes with the user (its devices,
//! API tokens and rules), and the deletion it confirms.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use ferrozone_domain::store::Belongings;
use ferrozone_domain::DomainError;

use super::super::super::html;
use super::super::super::page_error::PageError;
use super::super::super::redirect;
use super::super::super::viewer::{AdminViewer, Nav, Section, Viewer};
use super::refusal;
use super::show::user_id;
use crate::checked_form::CheckedForm;
use ferrozone_http::AppState;

#[derive(askama::Template)]
#[template(path = "admin/user_delete.html")]
struct DeletePage<'a> {
    nav: Nav<'a>,
    id: String,
    email: &'a str,
    belongings: Belongings,
    errors: Vec<String>,
}

pub(super) async fn confirm(
    State(app): State<AppState>,
    AdminViewer(viewer): AdminViewer,
    Path(id): Path<String>,
) -> Result<Response, PageError> {
    render(&app, &viewer, &id, StatusCode::OK, Vec::new()).await
}

async fn render(
    app: &AppState,
    viewer: &Viewer,
    id: &str,
    status: StatusCode,
    errors: Vec<String>,
) -> Result<Response, PageError> {
    let id = user_id(id)?;
    let user = app.domain.get_user(viewer.principal(), &id.to_string()).await?;
    let belongings = app.domain.user_belongings(viewer.principal(), id).await?;
    let page =
        DeletePage { nav: viewer.nav(Section::AdminUsers), id: id.to_string(), email: &user.email, belongings, errors };
    Ok(html::response(status, page))
}

/// Deletes the user, then to the list; the domain's refusal (the last admin) stays here.
pub(super) async fn delete(
    State(app): State<AppState>,
    AdminViewer(viewer): AdminViewer,
    Path(id): Path<String>,
    _: CheckedForm,
) -> Result<Response, PageError> {
    let uuid = user_id(&id)?;
    if viewer.user().id == uuid {
        let errors = vec!["You cannot delete yourself.".to_owned()];
        return render(&app, &viewer, &id, StatusCode::UNPROCESSABLE_ENTITY, errors).await;
    }
    match app.domain.delete_user(viewer.principal(), &id).await {
        Ok(()) => Ok(redirect("/admin/users?done=deleted")),
        Err(DomainError::NotFound) => Err(DomainError::NotFound.into()),
        Err(e) => {
            let errors = refusal(e, &[])?;
            render(&app, &viewer, &id, StatusCode::UNPROCESSABLE_ENTITY, errors).await
        }
    }
}
