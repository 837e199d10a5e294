//! `GET /admin/invitations`: invite someone (email, role, lifetime, and whether to email the
//! link), and the newest invitations with their status and their email's delivery, each
//! pending one with a Revoke button. `POST /admin/invitations` shows the new link once.
//! docs/design/invitations.md.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use ferrozone_domain::error::Errors;
use ferrozone_domain::service::sign_in_links::{Invitation, NewInvitation};
use ferrozone_domain::sign_in_link::{Delivery, LinkStatus, ListedLink};
use ferrozone_domain::{DomainError, Role, Timestamp};
use uuid::Uuid;

use crate::checked_form::{CheckedForm, Fields};
use crate::format::{sentences, When};
use crate::page_error::PageError;
use crate::viewer::{AdminViewer, Nav, Section};
use crate::{html, query_value, redirect};
use ferrozone_http::error::ApiError;
use ferrozone_http::AppState;

/// The lifetimes the form offers, in days; the first is the default.
const LIFETIMES: [(u32, &str); 3] = [(7, "7 days"), (1, "1 day"), (30, "30 days")];

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/admin/invitations", get(page).post(create))
        .route("/admin/invitations/{id}/revoke", post(revoke))
}

#[derive(askama::Template)]
#[template(path = "admin/invitations.html")]
struct InvitationsPage<'a> {
    nav: Nav<'a>,
    form: Form,
    /// Email can be sent: the form offers it.
    email_enabled: bool,
    rows: Vec<Row>,
    notice: Option<&'static str>,
}

/// The form's values and messages.
#[derive(Default)]
struct Form {
    email: String,
    admin: bool,
    days: u32,
    send_email: bool,
    email_error: String,
    role_error: String,
    send_email_error: String,
    expires_error: String,
    base_error: String,
}

impl Form {
    fn with_errors(mut self, errors: &Errors) -> Self {
        let of = |field: &str, label: &str| sentences(label, errors.get(field).unwrap_or_default());
        self.email_error = of("email", "Email");
        self.role_error = of("role", "Role");
        self.send_email_error = of("send_email", "The invitation");
        self.expires_error = of("expires_in_hours", "The lifetime");
        self.base_error = of("base", "");
        self
    }
}

struct Row {
    id: String,
    user_id: String,
    email: String,
    status: LinkStatus,
    /// While it matters: pending or expired.
    expires: Option<When>,
    delivery: String,
    delivery_failed: bool,
}

#[derive(askama::Template)]
#[template(path = "admin/invitation_created.html")]
struct CreatedPage<'a> {
    nav: Nav<'a>,
    email: String,
    url: String,
    expires: When,
    emailed: bool,
    user_created: bool,
    user_id: String,
}

async fn page(
    AdminViewer(viewer): AdminViewer,
    State(app): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Result<Response, PageError> {
    let notice = (query_value(raw.as_deref(), "revoked") == "1")
        .then_some("The invitation was revoked: its link no longer works.");
    let email_enabled = app.domain.email_enabled();
    let form = Form { days: LIFETIMES[0].0, send_email: email_enabled, ..Form::default() };
    render(&app, &viewer, form, notice, StatusCode::OK).await
}

async fn render(
    app: &AppState,
    viewer: &crate::viewer::Viewer,
    form: Form,
    notice: Option<&'static str>,
    status: StatusCode,
) -> Result<Response, PageError> {
    let listed = app.domain.list_invitations(viewer.principal()).await?;
    let now = Timestamp::now();
    let rows = listed.into_iter().map(|listed| row(listed, now)).collect();
    let page = InvitationsPage {
        nav: viewer.nav(Section::AdminUsers),
        form,
        email_enabled: app.domain.email_enabled(),
        rows,
        notice,
    };
    Ok(html::response(status, page))
}

fn row(listed: ListedLink, now: Timestamp) -> Row {
    let (delivery, delivery_failed) = delivery(listed.delivery.as_ref());
    let status = listed.status(now);
    let expiring = matches!(status, LinkStatus::Pending | LinkStatus::Expired);
    Row {
        id: listed.link.id.to_string(),
        user_id: listed.link.user_id.to_string(),
        status,
        expires: expiring.then(|| When::new(listed.link.expires_at, now)),
        email: listed.email,
        delivery,
        delivery_failed,
    }
}

/// What became of the email, in words, and whether it failed for good.
fn delivery(delivery: Option<&Delivery>) -> (String, bool) {
    let Some(delivery) = delivery else { return ("Not emailed".to_owned(), false) };
    let error = delivery.last_error.as_deref().unwrap_or("unknown error");
    if delivery.sent_at.is_some() {
        ("Sent".to_owned(), false)
    } else if delivery.gave_up_at.is_some() {
        (format!("Not delivered: {error}"), true)
    } else if delivery.attempts > 0 {
        (format!("Retrying after {} failed attempts: {error}", delivery.attempts), false)
    } else {
        ("Queued".to_owned(), false)
    }
}

async fn create(
    AdminViewer(viewer): AdminViewer,
    State(app): State<AppState>,
    CheckedForm(fields): CheckedForm,
) -> Result<Response, PageError> {
    let form = form_of(&fields, app.domain.email_enabled());
    let input = NewInvitation {
        email: Some(form.email.clone()),
        role: Some(if form.admin { Role::Admin } else { Role::Unprivileged }),
        send_email: Some(form.send_email),
        expires_in_hours: Some(i64::from(form.days) * 24),
        ..NewInvitation::default()
    };
    match app.domain.invite(viewer.principal(), &input, &app.web.external_url).await {
        Ok(invitation) => Ok(created(&viewer, invitation)),
        Err(DomainError::Invalid(errors)) => {
            render(&app, &viewer, form.with_errors(&errors), None, StatusCode::UNPROCESSABLE_ENTITY).await
        }
        Err(e) => Err(e.into()),
    }
}

/// The form's fields; a lifetime not offered falls back to the default.
fn form_of(fields: &Fields, email_enabled: bool) -> Form {
    let field = |name: &str| fields.get(name).map(String::as_str).unwrap_or_default();
    let days = field("expires_in_days").parse().ok().filter(|d| LIFETIMES.iter().any(|(n, _)| n == d));
    Form {
        email: field("email").to_owned(),
        admin: field("role") == "admin",
        days: days.unwrap_or(LIFETIMES[0].0),
        send_email: email_enabled && field("send_email") == "on",
        ..Form::default()
    }
}

fn created(viewer: &crate::viewer::Viewer, invitation: Invitation) -> Response {
    let page = CreatedPage {
        nav: viewer.nav(Section::AdminUsers),
        url: invitation.url.as_str().to_owned(),
        expires: When::new(invitation.link.expires_at, Timestamp::now()),
        emailed: invitation.emailed,
        user_created: invitation.user_created,
        user_id: invitation.link.user_id.to_string(),
        email: invitation.email,
    };
    html::response(StatusCode::CREATED, page)
}

/// Revokes a pending invitation (one already used, revoked or expired: nothing to do).
async fn revoke(
    AdminViewer(viewer): AdminViewer,
    State(app): State<AppState>,
    Path(id): Path<String>,
    _: CheckedForm,
) -> Result<Response, PageError> {
    let id = Uuid::parse_str(&id).map_err(|_| PageError::from(ApiError::NotFound))?;
    match app.domain.revoke_invitation(viewer.principal(), id).await {
        Ok(()) | Err(DomainError::NotFound) => Ok(redirect("/admin/invitations?revoked=1")),
        Err(e) => Err(e.into()),
    }
}
