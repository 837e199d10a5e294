//! What every provider sign-in shares (docs/design/identity-providers.md, "Provider sign-in") on the
//! HTTP side: the cookie that binds a one-time flow to the browser that started it, and the
//! answer once the provider sign-in came to an outcome. The protocols' flows are
//! `ferrozone-oidc`'s and `ferrozone-saml`'s; their handlers sit on top of these.

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use ferrozone_domain::service::providers::{ProviderSignIn, ProviderSignInEnd, ReturningFlow, FLOW_SECS};

use super::{html, session_started};
use ferrozone_http::cookies::{self, same_secret};
use ferrozone_http::error::ApiError;
use ferrozone_http::telemetry::sign_ins::{self, Method, Outcome};
use ferrozone_http::AppState;

/// The cookie that binds the flow named by `state` to this browser (set it on the response
/// that leaves for the provider).
pub fn flow_cookie(app: &AppState, state: &str) -> HeaderValue {
    let max_age = u64::try_from(FLOW_SECS).unwrap_or(600);
    cookies::set(cookies::FLOW, state, cookies::FLOW_PATH, max_age, app.web.secure_cookies)
}

/// 429: this address started too many sign-ins (by `method`); they expire after [`FLOW_SECS`].
pub fn too_many_flows(method: Method) -> Response {
    sign_ins::sign_in(method, Outcome::Throttled);
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

/// The answer to a provider sign-in (by `method`, through `provider_id`) at its `end`: to
/// its `return_to` with a session cookie, or a 403 page saying why not, the refusal
/// recorded in the audit log. The flow's cookie goes either way.
pub async fn respond(
    app: &AppState,
    headers: &HeaderMap,
    method: Method,
    provider_id: &str,
    end: ProviderSignInEnd,
) -> Result<Response, ApiError> {
    let ProviderSignInEnd { outcome, email, return_to } = end;
    let signed_in = matches!(outcome, ProviderSignIn::SignedIn(_));
    sign_ins::sign_in(method, if signed_in { Outcome::Success } else { Outcome::Refused });
    if let Some(reason) = refusal_reason(&outcome) {
        record_refused(app, method, provider_id, Some(&email), reason).await;
    }
    let mut response = match outcome {
        ProviderSignIn::SignedIn(session) => session_started(app, headers, &session, &return_to).await?,
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
    let secure = app.web.secure_cookies;
    response.headers_mut().append(header::SET_COOKIE, cookies::clear(cookies::FLOW, cookies::FLOW_PATH, secure));
    Ok(response)
}

/// The audit log's reason for a provider sign-in that did not sign in.
fn refusal_reason(outcome: &ProviderSignIn) -> Option<&'static str> {
    match outcome {
        ProviderSignIn::SignedIn(_) => None,
        ProviderSignIn::NotAllowed => Some("unknown_account"),
        ProviderSignIn::Disabled => Some("disabled"),
        ProviderSignIn::AdminNotAllowed => Some("admin_not_allowed"),
        ProviderSignIn::UnusableEmail => Some("unusable_email"),
    }
}

/// Records a provider sign-in (by `method`, through `provider_id`) refused for `reason`
/// after the provider answered a flow this browser started (`email`: the one it proved,
/// if any). Only such answers are recorded: one per flow at most, and flows are capped
/// per address, so an unauthenticated flood cannot grow the audit log without bound.
pub async fn record_refused(app: &AppState, method: Method, provider_id: &str, email: Option<&str>, reason: &str) {
    app.domain.record_refused_provider_sign_in(method.as_str(), provider_id, email, reason).await;
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
