//! Sign-in links (docs/design/invitations.md): `GET /sign_in/link/{secret}` shows what the
//! link does (set a password, continue with an identity provider, or sign in) and uses
//! nothing, so that mail scanners cannot spend it; the form's `POST` uses it. And the
//! magic-link request: `GET`/`POST /sign_in/email`.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use ferrozone_domain::error::Errors;
use ferrozone_domain::service::sign_in_links::MagicLinkRequest;
use ferrozone_domain::service::throttle::Refused;
use ferrozone_domain::service::totp::PasswordChecked;
use ferrozone_domain::sign_in_link::{LinkKind, SignInLink};
use ferrozone_domain::{DomainError, User};
use ferrozone_http::cookies;
use ferrozone_http::error::ApiError;
use ferrozone_http::extract::{ClientAddr, FormFields};
use ferrozone_http::AppState;

use crate::page_error::PageError;
use crate::{html, provider_links, redirect, sign_in_code, with_retry_after};

/// Where an accepted invitation lands.
const ADD_A_DEVICE: &str = "/devices/new";

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/sign_in/link/{secret}", get(link_page).post(use_link))
        .route("/sign_in/email", get(email_form).post(request_link))
}

#[derive(Template)]
#[template(path = "sign_in_link.html")]
struct LinkPage<'a> {
    email: &'a str,
    invitation: bool,
    /// The form posts back to the link's own path.
    action: &'a str,
    form_token: &'a str,
    /// An invitation is accepted with a new password (`local_auth_enabled`)...
    password: bool,
    /// ...or through an identity provider.
    providers: &'a [html::ProviderLink],
    errors: FieldErrors,
}

#[derive(Default)]
struct FieldErrors {
    password: Vec<String>,
    password_confirmation: Vec<String>,
    base: Vec<String>,
}

impl FieldErrors {
    fn from(errors: &Errors) -> Self {
        let of = |field: &str, label: &str| -> Vec<String> {
            errors.get(field).unwrap_or_default().iter().map(|m| crate::format::sentence(label, m)).collect()
        };
        Self {
            password: of("password", "Password"),
            password_confirmation: of("password_confirmation", "Password confirmation"),
            base: of("base", ""),
        }
    }

    fn base(message: &str) -> Self {
        Self { base: vec![message.to_owned()], ..Self::default() }
    }
}

/// What an unusable link's page says: the same for one that never existed.
const DEAD_LINK: &str = "This sign-in link has expired, was already used, or was revoked. \
     Ask an administrator for a new invitation, or ask for a new link on the sign-in page.";

fn dead_link() -> Response {
    html::response(StatusCode::GONE, html::message("This link no longer works", DEAD_LINK))
}

async fn link_page(State(app): State<AppState>, Path(secret): Path<String>) -> Result<Response, PageError> {
    let Some((link, user)) = app.domain.live_sign_in_link(&secret).await? else { return Ok(dead_link()) };
    Ok(render(&app, &secret, &link, &user, StatusCode::OK, FieldErrors::default()))
}

/// The link's page, with a fresh form token (also set as the sign-in form's cookie).
fn render(
    app: &AppState,
    secret: &str,
    link: &SignInLink,
    user: &User,
    status: StatusCode,
    errors: FieldErrors,
) -> Response {
    let token = app.domain.sign_in_form_token(cookies::FORM_TOKEN_SECS);
    let invitation = link.kind == LinkKind::Invitation;
    let providers = if invitation { provider_links(app, ADD_A_DEVICE) } else { Vec::new() };
    let action = format!("{}{secret}", ferrozone_domain::sign_in_link::LINK_PATH);
    let page = LinkPage {
        email: &user.email,
        invitation,
        action: &action,
        form_token: &token,
        password: app.domain.local_auth_enabled(),
        providers: &providers,
        errors,
    };
    let mut response = html::response(status, page);
    let cookie = cookies::set(cookies::SIGN_IN_FORM, &token, "/", cookies::FORM_TOKEN_SECS, app.web.secure_cookies);
    response.headers_mut().append(header::SET_COOKIE, cookie);
    response
}

/// Uses the link: an invitation with the new password from the form, a magic link as it
/// is; then on as a password sign-in goes (a code may come next).
async fn use_link(
    State(app): State<AppState>,
    Path(secret): Path<String>,
    headers: HeaderMap,
    sent: Result<FormFields, ApiError>,
) -> Result<Response, PageError> {
    let FormFields(fields) = sent?;
    let field = |name: &str| fields.get(name).map(String::as_str).unwrap_or_default();
    let Some((link, user)) = app.domain.live_sign_in_link(&secret).await? else { return Ok(dead_link()) };
    if !crate::form_token_is_valid(&app, &headers, field("csrf_token")) {
        let errors = FieldErrors::base(crate::EXPIRED);
        return Ok(render(&app, &secret, &link, &user, StatusCode::FORBIDDEN, errors));
    }
    let invitation = link.kind == LinkKind::Invitation;
    if invitation && !app.domain.local_auth_enabled() {
        let errors = FieldErrors::base(ferrozone_domain::service::sessions::LOCAL_AUTH_OFF);
        return Ok(render(&app, &secret, &link, &user, StatusCode::FORBIDDEN, errors));
    }
    let password = invitation.then(|| (field("password"), field("password_confirmation")));
    let checked = match app.domain.sign_in_with_link(&secret, password).await {
        Ok(Some(checked)) => checked,
        Ok(None) => return Ok(dead_link()),
        Err(DomainError::Invalid(errors)) => {
            let errors = FieldErrors::from(&errors);
            return Ok(render(&app, &secret, &link, &user, StatusCode::UNPROCESSABLE_ENTITY, errors));
        }
        Err(DomainError::Disallowed(message)) => {
            return Ok(render(&app, &secret, &link, &user, StatusCode::FORBIDDEN, FieldErrors::base(message)));
        }
        Err(e) => return Err(e.into()),
    };
    let return_to = if invitation { ADD_A_DEVICE } else { "/" };
    let mut response = match checked {
        PasswordChecked::SignedIn(session) => crate::session_started(&app, &headers, &session, return_to).await?,
        PasswordChecked::CodeNeeded(user) | PasswordChecked::SetUpNeeded(user) => {
            let mut response = redirect("/sign_in/code");
            let cookie = sign_in_code::pending_cookie(&app, user.id, return_to);
            response.headers_mut().append(header::SET_COOKIE, cookie);
            response
        }
    };
    let form_cookie = cookies::clear(cookies::SIGN_IN_FORM, "/", app.web.secure_cookies);
    response.headers_mut().append(header::SET_COOKIE, form_cookie);
    Ok(response)
}

#[derive(Template)]
#[template(path = "sign_in_email.html")]
struct EmailPage<'a> {
    email: &'a str,
    form_token: &'a str,
    /// What the request came to, once sent.
    notice: Option<&'a str>,
    error: Option<&'a str>,
}

/// What every accepted request says, whether or not the account exists.
const ON_ITS_WAY: &str = "If an account can sign in with this email, a sign-in link is on its way. \
     It works once, within 15 minutes.";
const THROTTLED: &str = "Too many sign-in attempts for this account or from your network. Please wait and try again.";
const OFF: &str = "Sign-in links by email are not available on this server.";

async fn email_form(State(app): State<AppState>) -> Response {
    email_page(&app, StatusCode::OK, "", None, None)
}

fn email_page(app: &AppState, status: StatusCode, email: &str, notice: Option<&str>, error: Option<&str>) -> Response {
    if !app.domain.magic_links_enabled() {
        return html::response(StatusCode::NOT_FOUND, html::message("Not available", OFF));
    }
    let token = app.domain.sign_in_form_token(cookies::FORM_TOKEN_SECS);
    let page = EmailPage { email, form_token: &token, notice, error };
    let mut response = html::response(status, page);
    let cookie = cookies::set(cookies::SIGN_IN_FORM, &token, "/", cookies::FORM_TOKEN_SECS, app.web.secure_cookies);
    response.headers_mut().append(header::SET_COOKIE, cookie);
    response
}

async fn request_link(
    State(app): State<AppState>,
    ClientAddr(address): ClientAddr,
    headers: HeaderMap,
    sent: Result<FormFields, ApiError>,
) -> Result<Response, PageError> {
    let FormFields(fields) = sent?;
    let field = |name: &str| fields.get(name).map(String::as_str).unwrap_or_default();
    let email = field("email").trim();
    if !crate::form_token_is_valid(&app, &headers, field("csrf_token")) {
        return Ok(email_page(&app, StatusCode::FORBIDDEN, email, None, Some(crate::EXPIRED)));
    }
    if email.is_empty() {
        return Ok(email_page(&app, StatusCode::UNPROCESSABLE_ENTITY, email, None, Some("Enter your email.")));
    }
    match app.domain.request_magic_link(email, address, &app.web.external_url).await {
        Ok(MagicLinkRequest::Accepted) => Ok(email_page(&app, StatusCode::OK, "", Some(ON_ITS_WAY), None)),
        Ok(MagicLinkRequest::Throttled(refused)) => {
            let page = email_page(&app, StatusCode::TOO_MANY_REQUESTS, email, None, Some(THROTTLED));
            Ok(with_retry_after(page, Refused::retry_after_secs(refused)))
        }
        Err(DomainError::Disallowed(_)) => Ok(email_page(&app, StatusCode::NOT_FOUND, email, None, Some(OFF))),
        Err(e) => Err(e.into()),
    }
}
