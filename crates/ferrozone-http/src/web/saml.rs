//! SAML 2.0 sign-in (docs/api.md section 8, "SAML"), SP-initiated, on the paths Firezone
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
//! The IdP posts the response cross-site, so the browser's `SameSite=Lax` flow cookie is not
//! sent to the consumer. The consumer therefore takes the flow by its RelayState (one-time:
//! a replayed response finds none), verifies the response against the request id the flow
//! kept, and stores the verified email in a second one-time flow that remembers the first
//! flow's state; it then redirects (303) to the finish URL, a same-site top-level GET that
//! does carry the flow cookie. Only there, and only when that cookie holds the first flow's
//! state, is the session created: a response cannot sign in a browser that did not start
//! the flow.

mod consumer;

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, RawQuery, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use chrono::Utc;
use ferrozone_domain::providers::SamlProviderConfig;
use ferrozone_saml::{
    decode_post_response, new_request_id, sign_metadata, sp_metadata, verify_response, AuthnRequest, Expected,
    IdpMetadata, Outgoing, SpKeyPair,
};

pub use self::consumer::{SamlLimits, DEFAULT_BODY_LIMIT};
use super::{cookies, html, providers, query_value, redirect, same_secret, PageError};
use crate::error::ApiError;
use crate::extract::ClientAddr;
use crate::AppState;

/// Ferrozone's SP entity id unless `FERROZONE_SAML_ENTITY_ID` says otherwise: Firezone
/// 0.x's default, so IdPs configured for it keep working.
pub const DEFAULT_ENTITY_ID: &str = "urn:firezone.dev:firezone-app";

/// The SAML service provider: its entity id, its key pair (for signing requests), each
/// configured IdP's parsed metadata, and the assertion consumer's limits.
#[derive(Debug)]
pub struct SamlSp {
    entity_id: String,
    keys: Option<SpKeyPair>,
    idps: HashMap<String, Arc<IdpMetadata>>,
    body_limit: usize,
    gate: consumer::Gate,
}

impl Default for SamlSp {
    fn default() -> Self {
        let limits = SamlLimits::default();
        Self {
            entity_id: DEFAULT_ENTITY_ID.to_owned(),
            keys: None,
            idps: HashMap::new(),
            body_limit: limits.body_limit,
            gate: consumer::Gate::new(limits.concurrency),
        }
    }
}

impl SamlSp {
    /// Checks the SAML configuration: `key_pair` is the PEM texts of the SP key and its
    /// certificate; each provider's metadata must parse (entity id, an HTTP-Redirect SSO
    /// URL, a signing certificate), and a provider that signs requests needs the key pair.
    /// Errors name the setting, the provider and the field.
    pub fn new(
        entity_id: &str,
        key_pair: Option<(&str, &str)>,
        providers: &[SamlProviderConfig],
    ) -> Result<Self, String> {
        let entity_id = entity_id.trim();
        if entity_id.is_empty() {
            return Err("FERROZONE_SAML_ENTITY_ID: must not be empty".into());
        }
        let keys = key_pair
            .map(|(key, certificate)| SpKeyPair::from_pem(key, certificate))
            .transpose()
            .map_err(|e| format!("FERROZONE_SAML_KEYFILE / FERROZONE_SAML_CERTFILE: {e}"))?;
        let mut idps = HashMap::new();
        for provider in providers {
            let name = format!("FERROZONE_SAML_IDENTITY_PROVIDERS: provider `{}`", provider.id);
            let metadata = IdpMetadata::parse(&provider.metadata).map_err(|e| match e {
                ferrozone_saml::Error::Metadata(m) => format!("{name}: `metadata`: {m}"),
                other => format!("{name}: `metadata`: {other}"),
            })?;
            if provider.sign_requests && keys.is_none() {
                return Err(format!(
                    "{name}: `sign_requests` is true but no SP key is configured \
                     (set FERROZONE_SAML_KEYFILE and FERROZONE_SAML_CERTFILE)"
                ));
            }
            idps.insert(provider.id.clone(), Arc::new(metadata));
        }
        Ok(Self { entity_id: entity_id.to_owned(), keys, idps, ..Self::default() })
    }

    /// This SP with the assertion consumer's `limits` (else [`SamlLimits::default`]).
    #[must_use]
    pub fn with_limits(self, limits: SamlLimits) -> Self {
        Self { body_limit: limits.body_limit, gate: consumer::Gate::new(limits.concurrency), ..self }
    }

    /// Takes a place in the consumer's verification queue, as a response being verified
    /// does; `None` when it is full. For tests that fill it.
    #[doc(hidden)]
    pub fn hold_verification_place(&self) -> Option<impl Send> {
        self.gate.try_enter()
    }
}

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/auth/saml/{id}", get(start))
        .route("/auth/saml/auth/signin/{id}", get(start))
        .route("/auth/saml/sp/consume/{id}", post(consume))
        .route("/auth/saml/finish/{id}", get(finish))
        .route("/auth/saml/sp/metadata/{id}", get(metadata))
}

/// What the first flow remembers: the AuthnRequest's id.
const START: &str = "saml-start";
/// What the second flow remembers: the first flow's state (the browser's flow cookie) and
/// the verified email.
const FINISH: &str = "saml-finish";

/// The provider `id` with its parsed metadata, if both exist.
fn provider<'a>(app: &'a AppState, id: &str) -> Option<(&'a SamlProviderConfig, &'a Arc<IdpMetadata>)> {
    let config = app.web.providers.saml(id)?;
    Some((config, app.web.saml.idps.get(id)?))
}

/// The URL of this provider's SAML endpoints, as Firezone 0.x meant `base_url`: the
/// provider's `base_url` (the public URL of `/auth/saml`), else `{external URL}/auth/saml`.
fn saml_base(app: &AppState, config: &SamlProviderConfig) -> String {
    match config.base_url.as_deref() {
        Some(base) => base.trim_end_matches('/').to_owned(),
        None => format!("{}/auth/saml", app.web.external_url),
    }
}

fn acs_url(app: &AppState, config: &SamlProviderConfig) -> String {
    format!("{}/sp/consume/{}", saml_base(app, config), config.id)
}

/// Starts a flow and sends the browser to the IdP.
async fn start(
    State(app): State<AppState>,
    Path(id): Path<String>,
    ClientAddr(client): ClientAddr,
    RawQuery(query): RawQuery,
) -> Result<Response, PageError> {
    let Some((config, idp)) = provider(&app, &id) else {
        return Ok(providers::unknown_provider());
    };
    let request_id = new_request_id();
    let secrets = format!("{START}\n{request_id}");
    let return_to = query_value(query.as_deref(), "return_to");
    let started = match providers::begin(&app, &config.id, secrets.as_bytes(), &return_to, client).await? {
        Ok(started) => started,
        Err(page) => return Ok(page),
    };
    let signer = if config.sign_requests { app.web.saml.keys.as_ref() } else { None };
    let request = AuthnRequest::new(
        request_id,
        idp,
        &app.web.saml.entity_id,
        &acs_url(&app, config),
        &started.state,
        Utc::now(),
        signer,
    );
    let request = match request {
        Ok(request) => request,
        Err(e) => return Ok(not_made(&config.id, &e)),
    };
    let response = match request.outgoing {
        Outgoing::Redirect(url) => providers::to_provider(&url, started.cookie),
        Outgoing::Post { url, fields } => post_page(&config.label, &url, &fields).map(|mut response| {
            response.headers_mut().append(header::SET_COOKIE, started.cookie);
            response
        }),
    };
    Ok(response.unwrap_or_else(unusable_sso_url))
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
    let csp = format!("default-src 'none'; form-action {origin}; frame-ancestors 'none'; base-uri 'none'");
    response.headers_mut().insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_str(&csp).ok()?);
    Some(response)
}

/// The assertion consumer service: verifies the IdP's response to the flow's request, off
/// the async workers and within the consumer's limits ([`consumer`]). A full queue answers
/// 503 before the flow is taken, so the same response can be posted again.
async fn consume(State(app): State<AppState>, Path(id): Path<String>, request: Request) -> Result<Response, PageError> {
    let Some((config, idp)) = provider(&app, &id) else {
        return Ok(providers::unknown_provider());
    };
    let mut fields = match consumer::form(request, app.web.saml.body_limit).await {
        Ok(fields) => fields,
        Err(page) => return Ok(page),
    };
    let Some(admitted) = app.web.saml.gate.try_enter() else {
        tracing::warn!(provider = %config.id, "SAML response refused: the verification queue is full");
        return Ok(consumer::busy());
    };
    let relay_state = fields.get("RelayState").cloned().unwrap_or_default();
    // IdP-initiated sign-in (no flow) is not supported: it cannot be bound to a request.
    let Some(flow) = app.domain.take_sign_in_flow(&config.id, &relay_state).await? else {
        tracing::info!(provider = %config.id, "SAML response without a pending flow (replayed, expired or unsolicited)");
        return Ok(providers::unknown_flow());
    };
    let secrets = String::from_utf8_lossy(&flow.secrets).into_owned();
    let Some(request_id) = secrets.strip_prefix(START).and_then(|rest| rest.strip_prefix('\n')) else {
        return Ok(providers::unknown_flow());
    };
    let check = Check {
        idp: Arc::clone(idp),
        sp_entity_id: app.web.saml.entity_id.clone(),
        acs_url: acs_url(&app, config),
        request_id: request_id.to_owned(),
        require_signed_assertion: config.signed_assertion_in_resp,
        require_signed_response: config.signed_envelopes_in_resp,
    };
    let encoded = fields.remove("SAMLResponse").unwrap_or_default();
    let running = admitted.run().await;
    let verified = tokio::task::spawn_blocking(move || {
        let _running = running;
        check.verify(&encoded)
    })
    .await
    .map_err(|e| ApiError::Internal(anyhow::anyhow!("SAML response verification failed: {e}")))?;
    let verified = match verified {
        Ok(verified) => verified,
        Err(e) => {
            tracing::warn!(provider = %config.id, error = %e, "SAML sign-in refused");
            return Ok(providers::refused(
                "Sign-in refused",
                "The identity provider's answer could not be verified. Please sign in again.",
            ));
        }
    };
    let secrets = format!("{FINISH}\n{relay_state}\n{}", verified.email);
    let state = app.domain.begin_sign_in_flow(&config.id, secrets.as_bytes(), &flow.return_to).await?;
    let query = form_urlencoded::Serializer::new(String::new()).append_pair("state", &state).finish();
    Ok(redirect(&format!("/auth/saml/finish/{}?{query}", config.id)))
}

/// What a response must match, owned: it goes to the blocking pool.
struct Check {
    idp: Arc<IdpMetadata>,
    sp_entity_id: String,
    acs_url: String,
    request_id: String,
    require_signed_assertion: bool,
    require_signed_response: bool,
}

impl Check {
    /// Decodes and verifies the posted `SAMLResponse` field `encoded`.
    fn verify(&self, encoded: &str) -> Result<ferrozone_saml::Verified, ferrozone_saml::Error> {
        let expected = Expected {
            idp: &self.idp,
            sp_entity_id: &self.sp_entity_id,
            acs_url: &self.acs_url,
            request_id: &self.request_id,
            require_signed_assertion: self.require_signed_assertion,
            require_signed_response: self.require_signed_response,
            now: Utc::now(),
        };
        decode_post_response(encoded).and_then(|xml| verify_response(&xml, &expected))
    }
}

/// Creates the session, in the browser that started the flow only.
async fn finish(
    State(app): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<Response, PageError> {
    let Some((config, _)) = provider(&app, &id) else {
        return Ok(providers::unknown_provider());
    };
    let state = query_value(query.as_deref(), "state");
    let Some(flow) = app.domain.take_sign_in_flow(&config.id, &state).await? else {
        return Ok(providers::unknown_flow());
    };
    let secrets = String::from_utf8_lossy(&flow.secrets).into_owned();
    let mut parts = secrets.splitn(3, '\n');
    let (Some(FINISH), Some(started), Some(email)) = (parts.next(), parts.next(), parts.next()) else {
        return Ok(providers::unknown_flow());
    };
    if !same_secret(cookies::get(&headers, cookies::FLOW), started) {
        tracing::info!(provider = %config.id, "SAML sign-in finished in a browser that did not start it");
        return Ok(providers::unknown_flow());
    }
    Ok(providers::finish(&app, &headers, &config.id, config.auto_create_users, email, &flow.return_to).await?)
}

/// The SP metadata for this provider's IdP to import.
async fn metadata(State(app): State<AppState>, Path(id): Path<String>) -> Response {
    let Some((config, _)) = provider(&app, &id) else {
        return providers::unknown_provider();
    };
    let signing = if config.sign_requests { app.web.saml.keys.as_ref() } else { None };
    let mut xml =
        sp_metadata(&app.web.saml.entity_id, &acs_url(&app, config), signing, config.signed_assertion_in_resp);
    // Signed when asked to and a key pair is configured (it is optional without sign_requests).
    if let Some(pair) = app.web.saml.keys.as_ref().filter(|_| config.sign_metadata) {
        xml = match sign_metadata(&xml, pair) {
            Ok(signed) => signed,
            Err(e) => return not_made(&config.id, &e),
        };
    }
    let mut response = Response::new(axum::body::Body::from(xml));
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/samlmetadata+xml"));
    response
}
