//! SAML 2.0 sign-in (docs/design/identity-providers.md, "SAML"), SP-initiated, on the paths Firezone
//! 0.x used so that IdP configurations keep working:
//!
//! - `GET /auth/saml/{id}` (the sign-in page's link) and `GET /auth/saml/auth/signin/{id}`:
//!   start a flow and send the browser to the IdP with an AuthnRequest (HTTP-Redirect, or a
//!   page whose form posts it when the IdP takes HTTP-POST only);
//! - `POST /auth/saml/sp/consume/{id}`: the assertion consumer service (HTTP-POST);
//! - `GET /auth/saml/finish/{id}?state=…`: where the consumer sends the browser on;
//! - `GET /auth/saml/sp/metadata/{id}`: the SP metadata to import into the IdP (signed with
//!   the SP key when `sign_metadata` and a key pair is configured).
//!
//! The flow, the verification and the sign-in are [`ferrozone_saml::signin`]'s (which says
//! how a response is bound to the browser that started it); here are the requests and pages.

mod consumer;

use axum::extract::{Path, RawQuery, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use ferrozone_saml::signin::{Consumed, Started};
pub use ferrozone_saml::signin::{SamlLimits, SamlSp, DEFAULT_BODY_LIMIT, DEFAULT_ENTITY_ID};
use ferrozone_saml::Outgoing;

use super::{html, local_path, providers, query_value, redirect, PageError};
use crate::oidc::TEST_SIGN_IN;
use ferrozone_http::cookies;
use ferrozone_http::extract::ClientAddr;
use ferrozone_http::telemetry::sign_ins::{self, Method, Outcome};
use ferrozone_http::AppState;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/auth/saml/{id}", get(start))
        .route("/auth/saml/auth/signin/{id}", get(start))
        .route("/auth/saml/sp/consume/{id}", post(consume))
        .route("/auth/saml/finish/{id}", get(finish))
        .route("/auth/saml/sp/metadata/{id}", get(metadata))
}

/// Starts a flow and sends the browser to the IdP.
async fn start(
    State(app): State<AppState>,
    Path(id): Path<String>,
    ClientAddr(client): ClientAddr,
    RawQuery(query): RawQuery,
) -> Result<Response, PageError> {
    let saml = app.web.sign_in(&app.domain).saml.clone();
    let Some(provider) = saml.provider(&id) else { return Ok(providers::unknown_provider()) };
    let return_to = query_value(query.as_deref(), "return_to");
    let started = saml.start(&app.domain, provider, local_path(&return_to), client, &app.web.external_url);
    Ok(match started.await? {
        Started::ToIdp { state, outgoing } => to_idp(&app, &provider.config().label, &state, outgoing),
        Started::TooMany => providers::too_many_flows(Method::Saml),
        Started::NotMade(e) => not_made(&id, &e),
    })
}

/// The browser's way to the IdP, with the flow's cookie.
fn to_idp(app: &AppState, label: &str, state: &str, outgoing: Outgoing) -> Response {
    let cookie = providers::flow_cookie(app, state);
    let response = match outgoing {
        Outgoing::Redirect(url) => providers::to_provider(&url, cookie),
        Outgoing::Post { url, fields } => post_page(label, &url, &fields).map(|mut response| {
            response.headers_mut().append(header::SET_COOKIE, cookie);
            response
        }),
    };
    response.unwrap_or_else(unusable_sso_url)
}

/// A 500 page, logged, for a message Ferrozone could not make (sign or deflate): it is
/// never sent unsigned or empty instead.
fn not_made(provider: &str, error: &ferrozone_saml::Error) -> Response {
    tracing::error!(provider = %provider, error = %error, "SAML message not made");
    let text = "Ferrozone could not prepare the sign-in request. The error is logged.";
    html::response(StatusCode::INTERNAL_SERVER_ERROR, html::message("Sign-in unavailable", text))
}

fn unusable_sso_url() -> Response {
    providers::refused("Sign-in unavailable", "The identity provider's sign-in URL is not usable.")
}

/// For an IdP that takes requests by HTTP-POST only: a page whose form posts the request
/// there. Pages run no scripts, so the person presses the button; the page's CSP lets its
/// form post to the IdP's origin only.
fn post_page(label: &str, url: &str, fields: &[(String, String)]) -> Option<Response> {
    let (scheme, rest) = url.split_once("://")?;
    let origin = format!("{scheme}://{}", rest.split(['/', '?', '#']).next()?);
    // A URL with characters a policy cannot hold is refused rather than the policy loosened.
    if origin.contains([' ', ';', ',', '\'', '"']) {
        return None;
    }
    let mut response = html::response(StatusCode::OK, html::PostToProvider { label, url, fields });
    let csp = html::csp_posting_to(&origin);
    response.headers_mut().insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_str(&csp).ok()?);
    Some(response)
}

/// The assertion consumer service: the posted form (within the consumer's body limit), its
/// response verified to the flow's request; then on to the finish URL.
async fn consume(State(app): State<AppState>, Path(id): Path<String>, request: Request) -> Result<Response, PageError> {
    let saml = app.web.sign_in(&app.domain).saml.clone();
    let Some(provider) = saml.provider(&id) else { return Ok(providers::unknown_provider()) };
    let mut fields = match consumer::form(request, saml.body_limit()).await {
        Ok(fields) => fields,
        Err(page) => return Ok(page),
    };
    let relay_state = fields.get("RelayState").cloned().unwrap_or_default();
    let encoded = fields.remove("SAMLResponse").unwrap_or_default();
    let consumed = saml.consume(&app.domain, provider, &relay_state, encoded, &app.web.external_url);
    Ok(match consumed.await? {
        Consumed::Verified { state } => {
            let query = form_urlencoded::Serializer::new(String::new()).append_pair("state", &state).finish();
            redirect(&format!("/auth/saml/finish/{id}?{query}"))
        }
        Consumed::Busy => consumer::busy(),
        Consumed::UnknownFlow => providers::unknown_flow(),
        Consumed::Refused { reason, return_to } if return_to == TEST_SIGN_IN => {
            crate::admin::provider_test::saml_page(&app, provider, Err(reason)).await?
        }
        Consumed::Refused { .. } => refused_answer(&app, &id).await,
    })
}

/// The page for a response that failed verification: a refused SAML sign-in, recorded
/// (the response answered a flow this server started, taken now: once per flow).
async fn refused_answer(app: &AppState, provider_id: &str) -> Response {
    sign_ins::sign_in(Method::Saml, Outcome::Refused);
    providers::record_refused(app, Method::Saml, provider_id, None, "answer_refused").await;
    providers::refused("Sign-in refused", "The identity provider's answer could not be verified. Please sign in again.")
}

/// Creates the session, in the browser that started the flow only.
async fn finish(
    State(app): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<Response, PageError> {
    let saml = app.web.sign_in(&app.domain).saml.clone();
    let Some(provider) = saml.provider(&id) else { return Ok(providers::unknown_provider()) };
    let state = query_value(query.as_deref(), "state");
    let flow_cookie = cookies::get(&headers, cookies::FLOW);
    let Some(verified) = saml.take_verified(&app.domain, provider, &state, flow_cookie).await? else {
        return Ok(providers::unknown_flow());
    };
    if verified.return_to == TEST_SIGN_IN {
        return crate::admin::provider_test::saml_page(&app, provider, Ok(verified.email)).await;
    }
    let end = saml.sign_in(&app.domain, provider, verified).await?;
    Ok(providers::respond(&app, &headers, Method::Saml, &id, end).await?)
}

/// `GET /admin/providers/saml/{id}/test` (an admin): a flow whose end shows what the IdP
/// proved and signs nobody in ([`TEST_SIGN_IN`]).
pub(crate) async fn start_test(app: &AppState, id: &str, client: std::net::IpAddr) -> Result<Response, PageError> {
    let saml = app.web.sign_in(&app.domain).saml.clone();
    let Some(provider) = saml.provider(id) else { return Ok(providers::unknown_provider()) };
    let started = saml.start(&app.domain, provider, TEST_SIGN_IN, client, &app.web.external_url);
    Ok(match started.await? {
        Started::ToIdp { state, outgoing } => to_idp(app, &provider.config().label, &state, outgoing),
        Started::TooMany => providers::too_many_flows(Method::Saml),
        Started::NotMade(e) => not_made(id, &e),
    })
}

/// The SP metadata for this provider's IdP to import.
async fn metadata(State(app): State<AppState>, Path(id): Path<String>) -> Response {
    let saml = app.web.sign_in(&app.domain).saml.clone();
    let Some(provider) = saml.provider(&id) else { return providers::unknown_provider() };
    let xml = match saml.metadata(provider, &app.web.external_url) {
        Ok(xml) => xml,
        Err(e) => return not_made(&id, &e),
    };
    let mut response = Response::new(axum::body::Body::from(xml));
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/samlmetadata+xml"));
    response
}
