//! The console's users (docs/web.md, "Users"): the list with its search and paging here,
//! creating a user (`new`), a user's page with its actions (`show`), deleting (`delete`).

use super::hints::{hints, Hint};
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use ferrozone_domain::model::{DisabledBy, User};
use ferrozone_domain::store::{ListedUser, UserQuery};
use ferrozone_domain::{DomainError, Timestamp};
use uuid::Uuid;

use super::super::page_error::PageError;
use super::super::pager::Pager;
use super::super::viewer::{AdminViewer, Nav, Section};
use super::super::{format, html};
use ferrozone_http::cursor;
use ferrozone_http::cursor::users::{next_cursor, DEFAULT_LIMIT};
use ferrozone_http::AppState;

mod delete;
mod new;
mod show;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/admin/users", get(list))
        .route("/admin/users/new", get(new::form).post(new::create))
        .route("/admin/users/{id}", get(show::page))
        .route("/admin/users/{id}/role", post(show::set_role))
        .route("/admin/users/{id}/disable", post(show::disable))
        .route("/admin/users/{id}/enable", post(show::enable))
        .route("/admin/users/{id}/password", post(show::set_password))
        .route("/admin/users/{id}/sign_out", post(show::sign_out))
        .route("/admin/users/{id}/two_factor/reset", post(show::reset_two_factor))
        .route("/admin/users/{id}/delete", get(delete::confirm).post(delete::delete))
}

/// The list's query string: the search and the page.
#[derive(Default)]
struct ListParams {
    q: String,
    page_cursor: Option<String>,
    /// Set by the redirect after a deletion.
    deleted: bool,
}

impl ListParams {
    fn parse(raw: Option<&str>) -> Self {
        let mut params = Self::default();
        for (key, value) in form_urlencoded::parse(raw.unwrap_or_default().as_bytes()) {
            match key.as_ref() {
                "q" => params.q = value.into_owned(),
                "page_cursor" => params.page_cursor = Some(value.into_owned()),
                "done" => params.deleted = value == "deleted",
                _ => {}
            }
        }
        params
    }
}

/// A row of the list, ready to show.
struct Row {
    id: Uuid,
    email: String,
    admin: bool,
    status: Status,
    last_sign_in: Option<LastSignIn>,
    device_count: u64,
}

/// Whether a user may sign in, as the pages say it (in words, not colour only).
pub(super) struct Status {
    pub disabled_since: Option<String>,
    /// Who disabled the user, in words; `None` while enabled or when it is unknown.
    pub disabled_by: Option<String>,
    /// For a user the identity provider disabled: what to check before enabling it.
    pub provider_refused: bool,
}

impl Status {
    pub fn of(user: &User) -> Self {
        Self {
            disabled_since: user.disabled_at.map(format::date),
            disabled_by: user.disabled_by.as_ref().map(disabled_by),
            provider_refused: matches!(user.disabled_by, Some(DisabledBy::IdentityProvider(_))),
        }
    }
}

/// Who disabled a user, as the status says it.
fn disabled_by(by: &DisabledBy) -> String {
    match by {
        DisabledBy::Admin => "Disabled by an administrator".to_owned(),
        DisabledBy::Cli => "Disabled from the command line".to_owned(),
        DisabledBy::IdentityProvider(id) => format!("Disabled by the identity provider ({id})"),
        DisabledBy::Scim => "Disabled by the directory (SCIM)".to_owned(),
    }
}

/// When and how a user last signed in.
pub(super) struct LastSignIn {
    pub ago: String,
    pub date: String,
    /// `password`, or the identity provider's id.
    pub method: String,
}

/// The user's last sign-in, if any.
pub(super) fn last_sign_in(user: &User, now: Timestamp) -> Option<LastSignIn> {
    let at = user.last_signed_in_at?;
    let method = user.last_signed_in_method.clone().unwrap_or_else(|| "unknown".to_owned());
    Some(LastSignIn { ago: format::ago(at, now), date: format::date(at), method })
}

impl Row {
    fn new(listed: ListedUser, now: Timestamp) -> Self {
        let user = listed.user;
        Self {
            id: user.id,
            status: Status::of(&user),
            last_sign_in: last_sign_in(&user, now),
            admin: user.role == ferrozone_domain::Role::Admin,
            email: user.email,
            device_count: listed.device_count,
        }
    }
}

#[derive(askama::Template)]
#[template(path = "admin/users.html")]
struct ListPage<'a> {
    nav: Nav<'a>,
    q: &'a str,
    rows: Vec<Row>,
    pager: Pager,
    deleted: bool,
    hints: Vec<Hint>,
}

/// `GET /admin/users`: 50 users a page in creation order, optionally only those whose
/// email contains `q`. A malformed query or cursor shows the first page.
async fn list(
    State(app): State<AppState>,
    AdminViewer(viewer): AdminViewer,
    RawQuery(raw): RawQuery,
) -> Result<Response, PageError> {
    let params = ListParams::parse(raw.as_deref());
    let after = params.page_cursor.as_deref().and_then(cursor::decode);
    let q = params.q.trim();
    let query = UserQuery { email_contains: Some(q.to_owned()), after, limit: DEFAULT_LIMIT };
    let users = app.domain.list_users_page(viewer.principal(), query).await?;
    let next = next_cursor(&users, DEFAULT_LIMIT).map(|cursor| {
        let mut link = form_urlencoded::Serializer::new(String::new());
        if !q.is_empty() {
            link.append_pair("q", q);
        }
        format!("/admin/users?{}", link.append_pair("page_cursor", &cursor).finish())
    });
    let now = Timestamp::now();
    let rows = users.into_iter().map(|listed| Row::new(listed, now)).collect();
    let first = after.map(|_| match q {
        "" => "/admin/users".to_owned(),
        q => format!("/admin/users?{}", form_urlencoded::Serializer::new(String::new()).append_pair("q", q).finish()),
    });
    let nav = viewer.nav(Section::AdminUsers);
    let page = ListPage { nav, q, rows, pager: Pager::pages(first, next), deleted: params.deleted, hints: hints(&app) };
    Ok(html::response(StatusCode::OK, page))
}

/// The messages of a refusal the console shows on its page (the last admin, oneself, a
/// taken email), or the error as a page when it is not one.
pub(super) fn refusal(error: DomainError, fields: &[&str]) -> Result<Vec<String>, PageError> {
    match error {
        DomainError::Invalid(errors) => {
            let messages = fields
                .iter()
                .chain(["base"].iter())
                .flat_map(|field| errors.get(field).unwrap_or_default().iter().map(move |m| sentence(field, m)))
                .collect::<Vec<_>>();
            if messages.is_empty() {
                Err(DomainError::Invalid(errors).into())
            } else {
                Ok(messages)
            }
        }
        other => Err(other.into()),
    }
}

/// A validation message as a sentence: `Password is too short …`; messages of `base` and
/// those that are sentences already (they start with a capital) stand as they are.
pub(super) fn sentence(field: &str, message: &str) -> String {
    if field == "base" || message.starts_with(char::is_uppercase) {
        return message.to_owned();
    }
    let name = match field {
        "password_confirmation" => "Password confirmation",
        "email" => "Email",
        "role" => "Role",
        "password" => "Password",
        other => other,
    };
    format!("{name} {message}")
}
