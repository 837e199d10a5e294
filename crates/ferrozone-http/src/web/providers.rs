//! What every provider sign-in shares (docs/api.md section 8, "Provider sign-in"): the
//! one-time flow bound to the browser that started it, and the end of the sign-in once a
//! provider vouched for an email. The protocols (OpenID Connect, SAML) sit on top.

use std::net::IpAddr;

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use ferrozone_domain::providers::ProviderPolicy;
use ferrozone_domain::service::providers::{ProviderSignIn, ReturningFlow, FLOW_SECS};
use zeroize::Zeroizing;

use super::{cookies, html, local_path, redirect, same_secret};
use crate::error::ApiError;
use crate::AppState;

/// A flow just started: its `state` (to send to the provider) and the cookie that binds
/// it to this browser (to set on the response that leaves for the provider).
pub struct Started {
    pub state: Zeroizing<String>,
    pub cookie: HeaderValue,
}

/// Starts a sign-in with `provider_id` for the browser at `client`, remembering `secrets`
/// (sealed) and where to go afterwards (`return_to`, kept only if it is a local path).
/// `Err` holds the page to answer instead: the address started too many sign-ins.
pub async fn begin(
    app: &AppState,
    provider_id: &str,
    secrets: &[u8],
    return_to: &str,
    client: IpAddr,
) -> Result<Result<Started, Response>, ApiError> {
    let started = app.domain.start_sign_in_flow(provider_id, secrets, local_path(return_to), client).await?;
    let Some(state) = started else { return Ok(Err(too_many_flows())) };
    let max_age = u64::try_from(FLOW_SECS).unwrap_or(600);
    let cookie = cookies::set(cookies::FLOW, &state, cookies::FLOW_PATH, max_age, app.web.secure_cookies);
    Ok(Ok(Started { state, cookie }))
}

/// 429: this address started too many sign-ins; they expire after [`FLOW_SECS`].
fn too_many_flows() -> Response {
    let text = "Too many sign-ins were started from your address. Please wait a few minutes and try again.";
    let mut response = html::response(StatusCode::TOO_MANY_REQUESTS, html::message("Too many sign-ins", text));
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(FLOW_SECS.unsigned_abs()));
    response
}

/// The flow named by `state`, if this browser started it (its flow cookie holds the same
/// `state`) and it is still pending. Taking it ends it, whatever follows.
pub async fn take(
    app: &AppState,
    headers: &HeaderMap,
    provider_id: &str,
    state: &str,
) -> Result<Option<ReturningFlow>, ApiError> {
    if !same_secret(cookies::get(headers, cookies::FLOW), state) {
        return Ok(None);
    }
    Ok(app.domain.take_sign_in_flow(provider_id, state).await?)
}

/// Signs in the user with `email`, which the provider `provider_id` proved, and answers the
/// browser: to `return_to` with a session cookie, or a 403 page saying why not.
pub async fn finish(
    app: &AppState,
    headers: &HeaderMap,
    provider_id: &str,
    auto_create: bool,
    email: &str,
    return_to: &str,
) -> Result<Response, ApiError> {
    let allow_admins = app.web.providers.policy(provider_id).is_none_or(|p| p.allow_admins);
    let policy = ProviderPolicy { auto_create_users: auto_create, allow_admins };
    let outcome = app.domain.sign_in_through_provider(provider_id, email, policy).await?;
    respond(app, headers, outcome, email, return_to).await
}

/// The answer to a provider sign-in that came to `outcome` (see [`finish`]), for a protocol
/// that needs the outcome itself first (OpenID Connect keeps the user's refresh token).
pub async fn respond(
    app: &AppState,
    headers: &HeaderMap,
    outcome: ProviderSignIn,
    email: &str,
    return_to: &str,
) -> Result<Response, ApiError> {
    let secure = app.web.secure_cookies;
    let mut response = match outcome {
        ProviderSignIn::SignedIn(session) => {
            if let Some(previous) = cookies::get_host(headers, cookies::SESSION, secure) {
                app.domain.sign_out(previous).await?;
            }
            let max_age = u64::from(app.domain.settings().session_hours) * 3600;
            let mut response = redirect(local_path(return_to));
            let cookie = cookies::set(cookies::SESSION, &session.secret, "/", max_age, secure);
            response.headers_mut().append(header::SET_COOKIE, cookie);
            response
        }
        ProviderSignIn::NotAllowed => refused(
            "Not allowed",
            &format!(
                "{email} has no account here, and this sign-in provider may not create accounts. \
                 Ask an administrator to add you."
            ),
        ),
        ProviderSignIn::Disabled => {
            refused("Account disabled", "This account is disabled. Ask an administrator to enable it.")
        }
        ProviderSignIn::AdminNotAllowed => refused(
            "Not allowed",
            "Administrators cannot sign in with this sign-in provider. Use another way to sign in.",
        ),
        ProviderSignIn::UnusableEmail => refused(
            "Email not usable",
            "The email address the identity provider gave cannot be matched safely (it has characters \
             whose upper and lower case are not plain ASCII). Ask an administrator for help.",
        ),
    };
    response.headers_mut().append(header::SET_COOKIE, cookies::clear(cookies::FLOW, cookies::FLOW_PATH, secure));
    Ok(response)
}

/// A 403 page: the provider sign-in cannot go on (`title`), and why (`text`).
pub fn refused(title: &str, text: &str) -> Response {
    html::response(StatusCode::FORBIDDEN, html::message(title, text))
}

/// 303 See Other to the identity provider at `url`, carrying `cookie` (the flow's);
/// `None` when `url` cannot be a `Location` header.
pub fn to_provider(url: &str, cookie: HeaderValue) -> Option<Response> {
    let location = HeaderValue::from_str(url).ok()?;
    let mut response = html::empty(StatusCode::SEE_OTHER);
    response.headers_mut().insert(header::LOCATION, location);
    response.headers_mut().append(header::SET_COOKIE, cookie);
    Some(response)
}

/// The page for a provider id that is not configured (404).
pub fn unknown_provider() -> Response {
    html::response(StatusCode::NOT_FOUND, html::message("Unknown sign-in provider", "No such sign-in provider."))
}

/// The page for a provider sign-in that came back without a usable flow: never started
/// here, already used, expired, or started in another browser.
pub fn unknown_flow() -> Response {
    let text = "This sign-in is not pending in this browser (it expired, was already used, or was \
                started elsewhere). Please sign in again.";
    html::response(StatusCode::BAD_REQUEST, html::message("Sign-in expired", text))
}
