//! OpenID Connect sign-in (docs/design/identity-providers.md, "OpenID Connect"), at Firezone 0.x's
//! paths: `GET /auth/oidc/{provider}` starts the authorization-code flow and
//! `GET /auth/oidc/{provider}/callback` (with or without the trailing `/` of Firezone's
//! default redirect URI) ends it. The protocol and the flow are `ferrozone-oidc`'s
//! ([`ferrozone_oidc::flow`]); the flow's browser-binding cookie and the pages are
//! [`super::providers`]'.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use ferrozone_oidc::{Begun, Callback, Completed, Provider, SignInError};

use super::{html, local_path, providers, PageError};
use ferrozone_http::cookies;
use ferrozone_http::error::ApiError;
use ferrozone_http::extract::ClientAddr;
use ferrozone_http::telemetry::sign_ins::{self, Method, Outcome};
use ferrozone_http::AppState;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/auth/oidc/{provider}", get(start))
        .route("/auth/oidc/{provider}/callback", get(callback))
        .route("/auth/oidc/{provider}/callback/", get(callback))
}

type Params = Query<HashMap<String, String>>;

/// The `return_to` of a flow the console's Test sign-in started: not a path, so no sign-in
/// link can ask for it (theirs go through [`local_path`]). Its callback signs nobody in.
pub(crate) const TEST_SIGN_IN: &str = "test sign-in";

/// Sends the browser to the provider, with a fresh flow (state, nonce, PKCE) bound to it.
async fn start(
    State(app): State<AppState>,
    Path(provider_id): Path<String>,
    ClientAddr(client): ClientAddr,
    Query(params): Params,
) -> Result<Response, PageError> {
    let return_to = local_path(params.get("return_to").map_or("/", String::as_str));
    begin(&app, &provider_id, return_to, client).await
}

/// A flow of `provider_id` ending at `return_to`, and the browser sent to the provider.
pub(crate) async fn begin(
    app: &AppState,
    provider_id: &str,
    return_to: &str,
    client: std::net::IpAddr,
) -> Result<Response, PageError> {
    let oidc = app.web.sign_in(&app.domain).oidc.clone();
    let Some(provider) = oidc.provider(provider_id).cloned() else { return Ok(providers::unknown_provider()) };
    Ok(match oidc.start(&app.domain, &provider, return_to, client).await? {
        Begun::ToProvider { state, url } => providers::to_provider(&url, providers::flow_cookie(app, &state))
            .unwrap_or_else(|| failed(&provider, &SignInError::Refused("an invalid authorization URL".into()))),
        Begun::TooMany => providers::too_many_flows(Method::Oidc),
        Begun::Failed(e) => failed(&provider, &e),
    })
}

/// Where the provider sends the browser back: the flow must be this browser's and still
/// pending; then the code is exchanged, the ID token checked, and the email signed in.
async fn callback(
    State(app): State<AppState>,
    Path(provider_id): Path<String>,
    headers: HeaderMap,
    Query(params): Params,
) -> Result<Response, PageError> {
    let oidc = app.web.sign_in(&app.domain).oidc.clone();
    let Some(provider) = oidc.provider(&provider_id).cloned() else { return Ok(providers::unknown_provider()) };
    let param = |name: &str| params.get(name).map(String::as_str);
    // Taken here (if this browser holds it), the flow can never be used again, whatever follows.
    let flow = providers::take(&app, &headers, &provider.id, param("state").unwrap_or_default()).await?;
    let taken = flow.is_some();
    let callback = Callback { code: param("code"), error: param("error"), iss: param("iss") };
    if flow.as_ref().is_some_and(|flow| flow.return_to == TEST_SIGN_IN) {
        let tested = oidc.verify(&provider, flow, callback).await;
        let page = crate::admin::provider_test::page(&app, &provider, tested).await?;
        return Ok(clear_flow_cookie(&app, page));
    }
    let completed = oidc.complete(&app.domain, &provider, flow, callback).await?;
    Ok(completed_page(&app, &headers, &provider, completed, taken).await?)
}

/// The answer to a callback that came to `completed`. A flow this browser no longer needs
/// (`taken`) has its cookie cleared; when the flow was not this browser's, its cookie stays:
/// it may belong to a sign-in still under way.
async fn completed_page(
    app: &AppState,
    headers: &HeaderMap,
    provider: &Provider,
    completed: Completed,
    taken: bool,
) -> Result<Response, ApiError> {
    if let Some(reason) = refusal_reason(&completed).filter(|_| taken) {
        providers::record_refused(app, Method::Oidc, &provider.id, None, reason).await;
    }
    let page = match completed {
        Completed::Done(end) => return providers::respond(app, headers, Method::Oidc, &provider.id, *end).await,
        Completed::ProviderRefused { code } => {
            sign_ins::sign_in(Method::Oidc, Outcome::Refused);
            let text = format!("The identity provider did not sign you in ({code}). Please try again.");
            html::response(StatusCode::FORBIDDEN, html::message("Sign-in refused", &text))
        }
        Completed::UnknownFlow => providers::unknown_flow(),
        Completed::Failed(e) => {
            // An unreachable provider checked nothing; every other failure refused an answer.
            if !matches!(e, SignInError::Unavailable(_)) {
                sign_ins::sign_in(Method::Oidc, Outcome::Refused);
            }
            failed(provider, &e)
        }
    };
    Ok(if taken { clear_flow_cookie(app, page) } else { page })
}

/// The audit log's reason for a callback that came to `completed` without a provider
/// sign-in's end: `None` when nothing was refused (an unknown flow, a provider that is
/// down) or when [`providers::respond`] records it. Recorded only for a flow this browser
/// held (`taken`): a callback anyone can send, such as `?error=…`, is not recorded.
fn refusal_reason(completed: &Completed) -> Option<&'static str> {
    match completed {
        Completed::ProviderRefused { .. } => Some("provider_refused"),
        Completed::Failed(SignInError::Refused(_)) => Some("answer_refused"),
        Completed::Failed(SignInError::UnverifiedEmail) => Some("email_not_verified"),
        Completed::Failed(SignInError::NoEmail) => Some("no_email"),
        Completed::Done(_) | Completed::UnknownFlow | Completed::Failed(SignInError::Unavailable(_)) => None,
    }
}

/// The page for a sign-in the provider's answer did not carry through, logged (without
/// secrets: the reasons name checks and endpoints, never tokens).
fn failed(provider: &Provider, error: &SignInError) -> Response {
    let (status, title, text) = match error {
        SignInError::Unavailable(reason) => {
            tracing::warn!(provider = %provider.id, %reason, "OIDC sign-in failed: the identity provider is unavailable");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "Identity provider unavailable",
                "The identity provider cannot be reached right now. Please try again in a few minutes.",
            )
        }
        SignInError::Refused(reason) => {
            tracing::warn!(provider = %provider.id, %reason, "OIDC sign-in refused: the provider's answer failed a check");
            (
                StatusCode::UNAUTHORIZED,
                "Sign-in failed",
                "The identity provider's answer could not be verified. Please sign in again.",
            )
        }
        SignInError::UnverifiedEmail => {
            tracing::info!(provider = %provider.id, "OIDC sign-in refused: email not verified");
            (
                StatusCode::FORBIDDEN,
                "Email not verified",
                "The identity provider has not verified your email address, so it cannot sign you in here.",
            )
        }
        SignInError::NoEmail => {
            tracing::info!(provider = %provider.id, "OIDC sign-in refused: no email");
            (
                StatusCode::FORBIDDEN,
                "No email",
                "The identity provider did not say which email address you have, so it cannot sign you in here.",
            )
        }
    };
    let mut response = html::response(status, html::message(title, text));
    if status == StatusCode::SERVICE_UNAVAILABLE {
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("60"));
    }
    response
}

fn clear_flow_cookie(app: &AppState, mut response: Response) -> Response {
    let cookie = cookies::clear(cookies::FLOW, cookies::FLOW_PATH, app.web.secure_cookies);
    response.headers_mut().append(header::SET_COOKIE, cookie);
    response
}
