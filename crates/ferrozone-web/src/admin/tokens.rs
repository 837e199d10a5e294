//! `GET /admin/tokens`: every user's API tokens, 50 a page in creation order, each with a
//! Revoke button (`POST /admin/tokens/{id}/revoke`, then back to the list).

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use ferrozone_domain::store::TokenPage;
use ferrozone_domain::{DomainError, Timestamp};
use uuid::Uuid;

use super::hints::{hints, Hint};
use crate::checked_form::CheckedForm;
use crate::format::When;
use crate::page_error::PageError;
use crate::pager::Pager;
use crate::viewer::{AdminViewer, Nav, Section};
use crate::{html, query_value, redirect};
use ferrozone_http::cursor;
use ferrozone_http::error::ApiError;
use ferrozone_http::AppState;

/// Tokens a page shows.
const PAGE: u32 = 50;

pub fn routes() -> Router<AppState> {
    Router::new().route("/admin/tokens", get(page)).route("/admin/tokens/{id}/revoke", post(revoke))
}

#[derive(askama::Template)]
#[template(path = "admin_tokens.html")]
struct TokensPage<'a> {
    nav: Nav<'a>,
    hints: Vec<Hint>,
    rows: Vec<Row>,
    /// What the page says first: a revoke that was done, or a bad page link.
    notice: Option<&'static str>,
    error: Option<&'static str>,
    pager: Pager,
}

struct Row {
    id: String,
    name: String,
    owner_id: String,
    owner_email: String,
    created: When,
    expires: When,
    expired: bool,
    last_used: Option<When>,
}

async fn page(
    AdminViewer(viewer): AdminViewer,
    State(app): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Result<Response, PageError> {
    let after = query_value(raw.as_deref(), "after");
    let mut page = TokensPage {
        nav: viewer.nav(Section::AdminTokens),
        hints: hints(&app),
        rows: Vec::new(),
        notice: (query_value(raw.as_deref(), "revoked") == "1").then_some("The token was revoked."),
        error: None,
        pager: Pager::pages((!after.is_empty()).then(|| "/admin/tokens".to_owned()), None),
    };
    let cursor = if after.is_empty() { None } else { cursor::decode(&after) };
    if !after.is_empty() && cursor.is_none() {
        page.error = Some("This page link is not valid.");
        return Ok(html::response(StatusCode::BAD_REQUEST, page));
    }
    let tokens = app.domain.list_all_tokens(viewer.principal(), TokenPage { after: cursor, limit: PAGE }).await?;
    if tokens.len() == PAGE as usize {
        page.pager.next = tokens
            .last()
            .map(|(token, _)| format!("/admin/tokens?after={}", cursor::encode(token.inserted_at, token.id)));
    }
    let now = Timestamp::now();
    page.rows = tokens
        .into_iter()
        .map(|(token, owner)| Row {
            id: token.id.to_string(),
            name: token.name,
            owner_id: owner.id.to_string(),
            owner_email: owner.email,
            created: When::new(token.inserted_at, now),
            expires: When::new(token.expires_at, now),
            expired: token.expires_at <= now,
            last_used: token.last_used_at.map(|at| When::new(at, now)),
        })
        .collect();
    Ok(html::response(StatusCode::OK, page))
}

/// Revokes the token (the form's CSRF token checked first), then back to the list.
async fn revoke(
    AdminViewer(viewer): AdminViewer,
    State(app): State<AppState>,
    Path(id): Path<String>,
    _: CheckedForm,
) -> Result<Response, PageError> {
    let id = Uuid::parse_str(&id).map_err(|_| PageError::from(ApiError::NotFound))?;
    match app.domain.revoke_token_as(viewer.principal(), id).await {
        Ok(()) | Err(DomainError::NotFound) => {}
        Err(e) => return Err(e.into()),
    }
    Ok(redirect("/admin/tokens?revoked=1"))
}
