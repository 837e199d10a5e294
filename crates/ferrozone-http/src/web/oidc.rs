//! OpenID Connect sign-in (docs/api.md section 8, "OpenID Connect"), at Firezone 0.x's
//! paths: `GET /auth/oidc/{provider}` starts the authorization-code flow and
//! `GET /auth/oidc/{provider}/callback` (with or without the trailing `/` of Firezone's
//! default redirect URI) ends it. The protocol is `ferrozone-oidc`'s; the one-time flow,
//! its browser-binding cookie and the session are [`super::providers`]'.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use ferrozone_domain::providers::ProviderPolicy;
use ferrozone_domain::service::providers::ProviderSignIn;
use ferrozone_oidc::{FlowSecrets, Provider, SignInError};

use super::{cookies, html, providers, PageError};
use crate::extract::ClientAddr;
use crate::AppState;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/auth/oidc/{provider}", get(start))
        .route("/auth/oidc/{provider}/callback", get(callback))
        .route("/auth/oidc/{provider}/callback/", get(callback))
}

type Params = Query<HashMap<String, String>>;

/// Sends the browser to the provider, with a fresh flow (state, nonce, PKCE) bound to it.
async fn start(
    State(app): State<AppState>,
    Path(provider_id): Path<String>,
    ClientAddr(client): ClientAddr,
    Query(params): Params,
) -> Result<Response, PageError> {
    let Some(provider) = app.web.oidc.provider(&provider_id).cloned() else { return Ok(providers::unknown_provider()) };
    // Discover before storing a flow: a provider that is down gets a clear page here.
    if let Err(e) = app.web.oidc.ready(&provider).await {
        return Ok(failed(&provider, &e));
    }
    let secrets = FlowSecrets::new();
    let return_to = params.get("return_to").map(String::as_str).unwrap_or("/");
    let started = match providers::begin(&app, &provider.id, &secrets.to_bytes(), return_to, client).await? {
        Ok(started) => started,
        Err(page) => return Ok(page),
    };
    let url = match app.web.oidc.authorization_url(&provider, &started.state, &secrets).await {
        Ok(url) => url,
        Err(e) => return Ok(failed(&provider, &e)),
    };
    match providers::to_provider(&url, started.cookie) {
        Some(response) => Ok(response),
        None => Ok(failed(&provider, &SignInError::Refused("an invalid authorization URL".into()))),
    }
}

/// Where the provider sends the browser back: the flow must be this browser's and still
/// pending; then the code is exchanged, the ID token checked, and the email signed in.
async fn callback(
    State(app): State<AppState>,
    Path(provider_id): Path<String>,
    headers: HeaderMap,
    Query(params): Params,
) -> Result<Response, PageError> {
    let Some(provider) = app.web.oidc.provider(&provider_id).cloned() else { return Ok(providers::unknown_provider()) };
    let state = params.get("state").map(String::as_str).unwrap_or_default();
    // Taken here (if this browser holds it), the flow can never be used again, whatever follows.
    let flow = providers::take(&app, &headers, &provider.id, state).await?;
    // A flow this browser no longer needs: its cookie goes with it. (When the flow was not
    // this browser's, its cookie stays: it may belong to a sign-in still under way.)
    let ended = |response: Response| if flow.is_some() { clear_flow_cookie(&app, response) } else { response };
    if let Some(error) = params.get("error") {
        // Only the code is shown, and only if it looks like one (RFC 6749: `error` is ASCII).
        let code = Some(error.as_str())
            .filter(|e| e.len() <= 64 && e.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
            .unwrap_or("unknown");
        tracing::info!(provider = %provider.id, error = code, "the identity provider refused the sign-in");
        let text = format!("The identity provider did not sign you in ({code}). Please try again.");
        return Ok(ended(html::response(StatusCode::FORBIDDEN, html::message("Sign-in refused", &text))));
    }
    let Some(flow) = flow else {
        tracing::info!(provider = %provider.id, "OIDC callback without a pending flow of this browser");
        return Ok(providers::unknown_flow());
    };
    let (Some(secrets), Some(code)) = (FlowSecrets::from_bytes(&flow.secrets), params.get("code")) else {
        return Ok(clear_flow_cookie(&app, providers::unknown_flow()));
    };
    let iss = params.get("iss").map(String::as_str);
    let identity = match app.web.oidc.finish(&provider, &secrets, code, iss).await {
        Ok(identity) => identity,
        Err(e) => return Ok(clear_flow_cookie(&app, failed(&provider, &e))),
    };
    let policy = ProviderPolicy { auto_create_users: provider.auto_create_users, allow_admins: provider.allow_admins };
    let outcome = app.domain.sign_in_through_provider(&provider.id, &identity.email, policy).await?;
    if let (ProviderSignIn::SignedIn(session), Some(token)) = (&outcome, &identity.refresh_token) {
        app.domain.save_oidc_connection(session.user.id, &provider.id, token).await?;
    }
    Ok(providers::respond(&app, &headers, outcome, &identity.email, &flow.return_to).await?)
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
