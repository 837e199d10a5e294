//! The browser face of Ferrozone's HTTP service: the sign-in pages and flows (password,
//! codes, OpenID Connect, SAML), the portal where people add their devices, the admin
//! console, their templates and assets. It stands on ferrozone-http and knows nothing of
//! the `/v0` routes.
//!
//! This file is the web sign-in (docs/design/sign-in.md, "Sign-in and sessions"): `GET`
//! and `POST /sign_in`, `POST /sign_out`. Server-rendered HTML; a signed-in browser then
//! calls `/v0` with its session cookie (see [`ferrozone_http::extract::Auth`]).

pub mod admin;
pub mod assets;
mod checked_form;
pub mod format;
pub(crate) mod html;
mod oidc;
mod page_error;
mod pager;
pub mod portal;
pub mod providers;
pub mod saml;
pub mod sign_in_code;
mod sign_in_link;
pub mod viewer;

use std::net::IpAddr;

use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use ferrozone_domain::service::sessions::{NewSession, LOCAL_AUTH_OFF};
use ferrozone_domain::service::totp::PasswordChecked;
use ferrozone_domain::DomainError;

use ferrozone_domain::service::throttle;
use ferrozone_http::cookies::{self, same_secret};
use ferrozone_http::error::ApiError;
use ferrozone_http::extract::{ClientAddr, FormFields};
use ferrozone_http::telemetry::sign_ins::{self, Outcome};
use ferrozone_http::telemetry::{sign_in_refused, SignInMethod};
use ferrozone_http::AppState;
use page_error::PageError;

/// What every refused sign-in says, whatever the reason.
const REFUSED: &str = "The email or password is incorrect, or this account cannot sign in with a password.";

/// The pages' routes and their assets, and the answer where no route of either face
/// matched ([`not_found`]).
pub fn routes() -> Router<AppState> {
    pages().merge(assets::routes()).fallback(not_found)
}

fn pages() -> Router<AppState> {
    Router::new()
        .route("/sign_in", get(sign_in_page).post(sign_in))
        .route("/sign_out", post(sign_out))
        .merge(oidc::routes())
        .merge(saml::routes())
        .merge(sign_in_code::routes())
        .merge(sign_in_link::routes())
        .merge(portal::routes())
        .merge(admin::routes())
        .method_not_allowed_fallback(page_error::method_not_allowed)
}

/// Where no route matched (docs/web.md, "Unknown pages"): under `/v0` the API's JSON 404 of
/// its contract, and under `/assets` (files pages load, not pages) the same; anywhere else the
/// HTML page for a browser, which asks for `text/html` on every navigation (a mistyped or
/// stale link), and the JSON 404 for a script or a scraper, which does not.
pub async fn not_found(uri: axum::http::Uri, headers: axum::http::HeaderMap) -> Response {
    let under =
        |prefix: &str| uri.path().strip_prefix(prefix).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'));
    let wants_html =
        headers.get_all(axum::http::header::ACCEPT).iter().filter_map(|v| v.to_str().ok()).any(|v| {
            v.split(',').any(|t| t.split(';').next().is_some_and(|t| t.trim().eq_ignore_ascii_case("text/html")))
        });
    if under("/v0") || under("/assets") || !wants_html {
        axum::response::IntoResponse::into_response(ApiError::NotFound)
    } else {
        page_error::not_found()
    }
}

async fn sign_in_page(State(app): State<AppState>, RawQuery(query): RawQuery) -> Response {
    let return_to = query_value(query.as_deref(), "return_to");
    form(&app, StatusCode::OK, "", local_path(&return_to), None)
}

async fn sign_in(
    State(app): State<AppState>,
    ClientAddr(address): ClientAddr,
    headers: HeaderMap,
    sent: Result<FormFields, ApiError>,
) -> Result<Response, PageError> {
    let FormFields(fields) = sent?;
    let field = |name: &str| fields.get(name).map(String::as_str).unwrap_or_default();
    let (email, return_to) = (field("email"), local_path(field("return_to")));
    let token_valid = form_token_is_valid(&app, &headers, field("csrf_token"));
    let outcome = check_password(&app, address, token_valid, email, field("password")).await?;
    Ok(password_page(&app, &headers, outcome, email, return_to).await?)
}

/// What a password sign-in came to.
enum PasswordSignIn {
    SignedIn(NewSession),
    /// The password is right; a code (or setting up an authenticator) comes next.
    SecondStep(uuid::Uuid),
    /// The form's token is missing, forged or expired: nothing else was checked.
    Expired,
    /// The account (from this network, or from all) used its attempts for now.
    Throttled(throttle::Refused),
    /// A wrong email or password, or an account that cannot sign in with one.
    Refused,
    /// Password checks are at capacity: the attempt was not counted.
    Busy,
    /// Password sign-in is turned off (`local_auth_enabled`): nothing was checked.
    TurnedOff,
}

/// The sign-in behind the form, by the browser at `address`: whether password sign-in is
/// on at all (`local_auth_enabled`), the form's token (whether it was `token_valid`), the
/// throttle, then the password; the throttle hears how it went.
async fn check_password(
    app: &AppState,
    address: IpAddr,
    token_valid: bool,
    email: &str,
    password: &str,
) -> Result<PasswordSignIn, DomainError> {
    if !app.domain.local_auth_enabled() {
        return Ok(PasswordSignIn::TurnedOff);
    }
    if !token_valid {
        return Ok(PasswordSignIn::Expired);
    }
    let checked = match app.domain.sign_in_with_password_throttled(email, password, address).await {
        Ok(Err(refused)) => {
            sign_in_refused(address, SignInMethod::Password, "throttled", email);
            sign_ins::sign_in(sign_ins::Method::Password, Outcome::Throttled);
            return Ok(PasswordSignIn::Throttled(refused));
        }
        Ok(Ok(checked)) => Ok(checked),
        Err(e) => Err(e),
    };
    match checked {
        Ok(Some(checked)) => {
            sign_ins::sign_in(sign_ins::Method::Password, Outcome::Success);
            Ok(match checked {
                PasswordChecked::SignedIn(session) => PasswordSignIn::SignedIn(session),
                PasswordChecked::CodeNeeded(user) | PasswordChecked::SetUpNeeded(user) => {
                    PasswordSignIn::SecondStep(user.id)
                }
            })
        }
        Ok(None) => {
            sign_in_refused(address, SignInMethod::Password, "wrong_password", email);
            sign_ins::sign_in(sign_ins::Method::Password, Outcome::Refused);
            Ok(PasswordSignIn::Refused)
        }
        Err(DomainError::Busy(_)) => Ok(PasswordSignIn::Busy),
        // Turned off since the check above.
        Err(DomainError::Disallowed(_)) => Ok(PasswordSignIn::TurnedOff),
        Err(e) => Err(e),
    }
}

/// The answer to a password sign-in: to `return_to` with a session cookie (and the form's
/// cookie cleared), or the form again saying why not.
async fn password_page(
    app: &AppState,
    headers: &HeaderMap,
    outcome: PasswordSignIn,
    email: &str,
    return_to: &str,
) -> Result<Response, ApiError> {
    let (status, message, retry_after) = match outcome {
        PasswordSignIn::SignedIn(session) => {
            let mut response = session_started(app, headers, &session, return_to).await?;
            let form_cookie = cookies::clear(cookies::SIGN_IN_FORM, "/", app.web.secure_cookies);
            response.headers_mut().append(header::SET_COOKIE, form_cookie);
            return Ok(response);
        }
        PasswordSignIn::SecondStep(user_id) => {
            let mut response = redirect("/sign_in/code");
            let cookie = sign_in_code::pending_cookie(app, user_id, return_to);
            response.headers_mut().append(header::SET_COOKIE, cookie);
            return Ok(response);
        }
        PasswordSignIn::Expired => (StatusCode::FORBIDDEN, EXPIRED, None),
        PasswordSignIn::Throttled(refused @ throttle::Refused::Pair(_)) => {
            (StatusCode::TOO_MANY_REQUESTS, THROTTLED, Some(refused.retry_after_secs()))
        }
        PasswordSignIn::Throttled(refused @ throttle::Refused::Account(_)) => {
            (StatusCode::TOO_MANY_REQUESTS, ACCOUNT_THROTTLED, Some(refused.retry_after_secs()))
        }
        PasswordSignIn::Throttled(refused @ throttle::Refused::Network(_)) => {
            (StatusCode::TOO_MANY_REQUESTS, NETWORK_THROTTLED, Some(refused.retry_after_secs()))
        }
        PasswordSignIn::Refused => (StatusCode::UNAUTHORIZED, REFUSED, None),
        PasswordSignIn::Busy => (StatusCode::SERVICE_UNAVAILABLE, BUSY, Some(BUSY_RETRY_SECS)),
        PasswordSignIn::TurnedOff => (StatusCode::FORBIDDEN, LOCAL_AUTH_OFF, None),
    };
    let page = form(app, status, email, return_to, Some(message));
    Ok(match retry_after {
        Some(secs) => with_retry_after(page, secs),
        None => page,
    })
}

/// The redirect that ends every sign-in, by password or through a provider: the browser's
/// previous session (if any) ended, and `session`'s cookie set, living as long as the
/// session; then on to `return_to` if it is a local path, else `/`. The one place a session
/// cookie is issued.
async fn session_started(
    app: &AppState,
    headers: &HeaderMap,
    session: &NewSession,
    return_to: &str,
) -> Result<Response, ApiError> {
    let secure = app.web.secure_cookies;
    if let Some(previous) = cookies::get_host(headers, cookies::SESSION, secure) {
        app.domain.sign_out(previous).await?;
    }
    let max_age = u64::from(app.domain.settings().session_hours) * 3600;
    let mut response = redirect(local_path(return_to));
    let cookie = cookies::set(cookies::SESSION, &session.secret, "/", max_age, secure);
    response.headers_mut().append(header::SET_COOKIE, cookie);
    Ok(response)
}

/// Whether the form's token is in both the cookie and the field, and is one this server
/// issued that has not expired (a planted pair of self-made values is not).
fn form_token_is_valid(app: &AppState, headers: &HeaderMap, sent: &str) -> bool {
    let cookie = cookies::get_host(headers, cookies::SIGN_IN_FORM, app.web.secure_cookies);
    same_secret(cookie, sent) && app.domain.check_sign_in_form_token(sent)
}

fn with_retry_after(mut response: Response, secs: u64) -> Response {
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
    response
}

const EXPIRED: &str = "This sign-in form has expired. Please try again.";
const THROTTLED: &str = "Too many failed sign-ins. Please wait a minute and try again.";
const ACCOUNT_THROTTLED: &str = "Too many sign-in attempts for this account. Please wait and try again.";
const NETWORK_THROTTLED: &str = "Too many sign-in attempts from your network. Please wait and try again.";
const BUSY: &str = "The server is busy. Please try again in a few seconds.";
/// The `Retry-After` of a sign-in refused because password checks are at capacity.
const BUSY_RETRY_SECS: u64 = 5;

/// Deletes the session (its CSRF token must come with the request, as the form field
/// `csrf_token` or the header `x-csrf-token`) and goes to the sign-in page.
async fn sign_out(
    State(app): State<AppState>,
    headers: HeaderMap,
    sent: Result<FormFields, ApiError>,
) -> Result<Response, PageError> {
    let FormFields(fields) = sent?;
    let secure = app.web.secure_cookies;
    if let Some(secret) = cookies::get_host(&headers, cookies::SESSION, secure) {
        if let Ok(active) = app.domain.authenticate_session(secret).await? {
            let sent = fields
                .get("csrf_token")
                .map(String::as_str)
                .or_else(|| headers.get("x-csrf-token").and_then(|v| v.to_str().ok()));
            if !same_secret(sent, &active.csrf_token) {
                let page = html::message("Not signed out", "The request did not carry this session's CSRF token.");
                return Ok(html::response(StatusCode::FORBIDDEN, page));
            }
        }
        // An expired session, or one of a disabled user, goes too: nothing to protect.
        app.domain.sign_out(secret).await?;
    }
    let mut response = redirect("/sign_in");
    response.headers_mut().append(header::SET_COOKIE, cookies::clear(cookies::SESSION, "/", secure));
    Ok(response)
}

/// The sign-in page with a fresh form token (also set as the form cookie, on `/` so that
/// it can be a `__Host-` cookie); the password form only while `local_auth_enabled` is on.
fn form(app: &AppState, status: StatusCode, email: &str, return_to: &str, error: Option<&str>) -> Response {
    let token = app.domain.sign_in_form_token(cookies::FORM_TOKEN_SECS);
    let providers = provider_links(app, return_to);
    let password = app.domain.local_auth_enabled();
    let magic_link = app.domain.magic_links_enabled();
    let page =
        html::SignInPage { email, return_to, form_token: &token, error, providers: &providers, password, magic_link };
    let mut response = html::response(status, page);
    let cookie = cookies::set(cookies::SIGN_IN_FORM, &token, "/", cookies::FORM_TOKEN_SECS, app.web.secure_cookies);
    response.headers_mut().append(header::SET_COOKIE, cookie);
    response
}

/// The value of parameter `name` in a raw query string, or `""`.
pub(crate) fn query_value(query: Option<&str>, name: &str) -> String {
    form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.into_owned())
        .unwrap_or_default()
}

/// Links that start a sign-in with each configured provider, carrying `return_to`.
fn provider_links(app: &AppState, return_to: &str) -> Vec<html::ProviderLink> {
    let query = if return_to == "/" {
        String::new()
    } else {
        format!("?{}", form_urlencoded::Serializer::new(String::new()).append_pair("return_to", return_to).finish())
    };
    let sign_in = app.web.sign_in(&app.domain);
    let providers = &sign_in.providers;
    let oidc = providers.oidc.iter().map(|p| (format!("/auth/oidc/{}{query}", p.id), &p.label));
    let saml = providers.saml.iter().map(|p| (format!("/auth/saml/{}{query}", p.id), &p.label));
    oidc.chain(saml).map(|(href, label)| html::ProviderLink { href, label: label.clone() }).collect()
}

/// `candidate` if it is a path on this site (`/…`, but not `//…` or `/\…`, which browsers
/// read as another host, and only printable ASCII), else `/`: never an open redirect.
pub fn local_path(candidate: &str) -> &str {
    let local = candidate.starts_with('/')
        && !candidate.starts_with("//")
        && candidate.len() <= 2048
        && candidate.bytes().all(|b| b.is_ascii_graphic() && b != b'\\');
    if local {
        candidate
    } else {
        "/"
    }
}

/// 303 See Other to a local path.
pub(crate) fn redirect(to: &str) -> Response {
    let mut response = html::empty(StatusCode::SEE_OTHER);
    let location = HeaderValue::from_str(to).unwrap_or(HeaderValue::from_static("/"));
    response.headers_mut().insert(header::LOCATION, location);
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_local_paths_are_redirect_targets() {
        for ok in ["/", "/devices", "/a/b?c=d#e"] {
            assert_eq!(local_path(ok), ok);
        }
        for bad in ["", "//evil.example", "https://evil.example", "/\\evil", "/a\\b", "evil", "/\t/evil", "/é", "/a b"]
        {
            assert_eq!(local_path(bad), "/", "{bad:?}");
        }
    }

    #[test]
    fn secrets_compare_only_when_present() {
        assert!(same_secret(Some("abc"), "abc"));
        assert!(!same_secret(Some("abd"), "abc"));
        assert!(!same_secret(None, "abc"));
        assert!(!same_secret(Some(""), ""));
    }
}
