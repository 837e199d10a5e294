//! The account page (`GET /account`): who the signed-in user is, and what they can do for
//! themselves: change their password, make and revoke personal API tokens, sign out
//! everywhere. Each form posts here and comes back (POST-redirect-GET), but for a refused
//! form, shown again with its messages, and a new token, whose secret is shown once.
//! The same actions are `/v0/me` and `/v0/tokens`.

mod view;

use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use ferrozone_domain::input::{NewToken, PasswordChange, WrongTypes};
use ferrozone_domain::{DomainError, Errors};
use uuid::Uuid;
use zeroize::Zeroizing;

use super::super::page_error::PageError;
use super::super::viewer::Viewer;
use super::super::{html, query_value, redirect};
use crate::checked_form::CheckedForm;
use ferrozone_http::cookies;
use ferrozone_http::error::ApiError;
use ferrozone_http::extract::{ClientAddr, PathId};
use ferrozone_http::throttled::throttled_message;
use ferrozone_http::AppState;
use view::{AccountPage, PasswordForm, TokenCreatedPage, TokenForm};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/account", get(show))
        .route("/account/password", post(change_password))
        .route("/account/tokens", post(create_token))
        .route("/account/tokens/{id}/revoke", post(revoke_token))
        .route("/account/sign_out_everywhere", post(sign_out_everywhere))
}

/// What a finished action says when the page comes back (`?done=…`).
fn notice(done: &str) -> Option<&'static str> {
    match done {
        "password" => Some("Password changed. Your other sessions were signed out."),
        "token_revoked" => Some("Token revoked: it no longer works."),
        _ => None,
    }
}

async fn show(State(app): State<AppState>, viewer: Viewer, RawQuery(query): RawQuery) -> Result<Response, PageError> {
    let done = query_value(query.as_deref(), "done");
    let page = AccountPage::new(&app, &viewer).await?;
    Ok(html::response(StatusCode::OK, AccountPage { notice: notice(&done), ..page }))
}

/// `POST /account/password`: to the page with a notice, or the page again saying why not.
async fn change_password(
    State(app): State<AppState>,
    viewer: Viewer,
    ClientAddr(address): ClientAddr,
    CheckedForm(fields): CheckedForm,
) -> Result<Response, PageError> {
    let secret = |name: &str| fields.get(name).map(|v| Zeroizing::new(v.clone()));
    let input = PasswordChange {
        current_password: secret("current_password"),
        password: secret("password"),
        password_confirmation: secret("password_confirmation"),
        wrong_types: WrongTypes::default(),
    };
    let keep = Some(viewer.session.id);
    let (status, form, retry_after) =
        match app.domain.change_own_password_throttled(viewer.principal(), address, &input, keep).await {
            Ok(Ok(())) => return Ok(redirect("/account?done=password")),
            Ok(Err(refused)) => {
                let form = PasswordForm::failed(throttled_message(refused));
                (StatusCode::TOO_MANY_REQUESTS, form, Some(refused.retry_after_secs()))
            }
            Err(DomainError::Invalid(errors)) => {
                (StatusCode::UNPROCESSABLE_ENTITY, PasswordForm::invalid(&errors), None)
            }
            Err(DomainError::Busy(_)) => {
                (StatusCode::SERVICE_UNAVAILABLE, PasswordForm::failed(BUSY), Some(BUSY_RETRY_SECS))
            }
            Err(DomainError::Disallowed(why)) => (StatusCode::FORBIDDEN, PasswordForm::failed(why), None),
            Err(e) => return Err(e.into()),
        };
    let page = AccountPage { password: form, ..AccountPage::new(&app, &viewer).await? };
    Ok(with_retry_after(html::response(status, page), retry_after))
}

const BUSY: &str = "The server is busy. Please try again in a few seconds.";
/// The `Retry-After` of a change refused because password checks are at capacity.
const BUSY_RETRY_SECS: u64 = 5;

fn with_retry_after(mut response: Response, secs: Option<u64>) -> Response {
    if let Some(secs) = secs {
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    response
}

/// `POST /account/tokens`: the page showing the new token's secret once, or the account
/// page again with the form's messages.
async fn create_token(
    State(app): State<AppState>,
    viewer: Viewer,
    CheckedForm(fields): CheckedForm,
) -> Result<Response, PageError> {
    let name = fields.get("name").cloned().unwrap_or_default();
    let days = fields.get("expires_in_days").map(|d| d.trim().to_owned()).unwrap_or_default();
    let input = new_token(&name, &days);
    match app.domain.create_token_as(viewer.principal(), &input).await {
        Ok((token, secret)) => {
            let page = TokenCreatedPage::new(viewer.nav(super::super::viewer::Section::Account), &token, &secret);
            Ok(html::response(StatusCode::OK, page))
        }
        Err(DomainError::Invalid(errors)) => {
            let form = TokenForm::invalid(name, days, &errors);
            let page = AccountPage { token_form: form, ..AccountPage::new(&app, &viewer).await? };
            Ok(html::response(StatusCode::UNPROCESSABLE_ENTITY, page))
        }
        Err(e) => Err(e.into()),
    }
}

/// The token a form asks for: a blank lifetime is the default one, one that is not a
/// whole number is of a wrong type (`is invalid`).
fn new_token(name: &str, days: &str) -> NewToken {
    let mut wrong_types = WrongTypes::default();
    let expires_in_days = match days {
        "" => None,
        days => days.parse::<i64>().map_err(|_| wrong_types.insert("expires_in_days", true)).ok(),
    };
    NewToken { name: Some(name.to_owned()), expires_in_days, wrong_types }
}

/// `POST /account/tokens/{id}/revoke`: one of the user's own tokens (another's is a 404,
/// as in `/v0/tokens`, even for an admin: this page shows the user's own only).
async fn revoke_token(
    State(app): State<AppState>,
    viewer: Viewer,
    id: PathId,
    _: CheckedForm,
) -> Result<Response, PageError> {
    let id = id.ok().and_then(|Path(id)| Uuid::parse_str(&id).ok()).ok_or(ApiError::NotFound)?;
    let own = app.domain.list_tokens_as(viewer.principal(), None).await?;
    if !own.iter().any(|t| t.id == id) {
        return Err(ApiError::NotFound.into());
    }
    app.domain.revoke_token_as(viewer.principal(), id).await?;
    Ok(redirect("/account?done=token_revoked"))
}

/// `POST /account/sign_out_everywhere`: every session of the user ends, this one too; on
/// to the sign-in page.
async fn sign_out_everywhere(
    State(app): State<AppState>,
    viewer: Viewer,
    _: CheckedForm,
) -> Result<Response, PageError> {
    app.domain.sign_out_everywhere_as(viewer.principal()).await?;
    let mut response = redirect("/sign_in");
    let cleared = cookies::clear(cookies::SESSION, "/", app.web.secure_cookies);
    response.headers_mut().append(header::SET_COOKIE, cleared);
    Ok(response)
}

/// The messages of `field` in `errors`, as one sentence naming it: "New password should be
/// at least 12 character(s)."
fn sentence(errors: &Errors, field: &str, label: &str) -> Option<String> {
    errors.get(field).map(|messages| format!("{label} {}.", messages.join(" and ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_form_reads_its_lifetime() {
        assert_eq!(new_token("ci", "").expires_in_days, None);
        assert_eq!(new_token("ci", "7").expires_in_days, Some(7));
        let wrong = new_token("ci", "a week");
        assert!(wrong.expires_in_days.is_none() && wrong.wrong_types.has("expires_in_days"));
    }

    #[test]
    fn messages_read_as_sentences() {
        let mut errors = Errors::new();
        errors.add("password", "should be at least 12 character(s)");
        assert_eq!(
            sentence(&errors, "password", "New password").as_deref(),
            Some("New password should be at least 12 character(s).")
        );
        assert_eq!(sentence(&errors, "name", "Name"), None);
        assert_eq!(notice("password"), Some("Password changed. Your other sessions were signed out."));
        assert_eq!(notice("<script>"), None);
    }
}
