//! Extractors that make the API's policy visible in handler signatures.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use axum::body::Body;
use axum::extract::{ConnectInfo, FromRequest, FromRequestParts, Request};
use axum::http::header::{AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method};
use ferrozone_domain::service::tokens::Refusal;
use ferrozone_domain::Principal;
use serde_json::{Map, Value};

use crate::cookies::{self, same_secret};
use crate::error::ApiError;
use crate::telemetry::sign_ins::{token_refused, TokenKind};
use crate::telemetry::{record_actor, sign_in_refused, SignInMethod};
use crate::AppState;

/// A path parameter; a rejected one (not UTF-8) is answered as an unknown id.
pub type PathId = Result<axum::extract::Path<String>, axum::extract::rejection::PathRejection>;

/// Largest request body accepted.
pub const BODY_LIMIT: usize = 1024 * 1024;

/// The authenticated caller. Authentication runs before any record look-up.
///
/// With an `Authorization` header, that header alone decides (a bearer token). Without one,
/// a web session cookie (`ferrozone_session`, `__Host-ferrozone_session` over https) authenticates as its user, re-checked on
/// every request; a write (any method but GET, HEAD and OPTIONS) through a session must
/// carry the session's CSRF token in `x-csrf-token`, else it is 403.
pub struct Auth(pub Principal);

impl Auth {
    pub async fn check(state: &AppState, token: &str) -> Result<Self, ApiError> {
        match state.domain.authenticate(token).await? {
            Ok(principal) => {
                record_actor(&principal, None);
                Ok(Auth(principal))
            }
            Err(refusal) => {
                token_refused(TokenKind::ApiToken, &refusal);
                Err(ApiError::Refused(refusal))
            }
        }
    }

    /// [`Auth::check`], logging a refused token with the client's address.
    async fn check_from(state: &AppState, token: &str, client: IpAddr) -> Result<Self, ApiError> {
        let checked = Self::check(state, token).await;
        if let Err(ApiError::Refused(refusal)) = &checked {
            let reason = match refusal {
                Refusal::InvalidToken => "invalid_token",
                Refusal::UserDisabled => "user_disabled",
            };
            sign_in_refused(client, SignInMethod::Token, reason, "");
        }
        checked
    }
}

impl FromRequestParts<AppState> for Auth {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        if parts.headers.contains_key(AUTHORIZATION) {
            let Bearer(token) = Bearer::from_request_parts(parts, state).await?;
            let Ok(ClientAddr(client)) = ClientAddr::from_request_parts(parts, state).await;
            return Auth::check_from(state, &token, client).await;
        }
        let Some(secret) = cookies::get_host(&parts.headers, cookies::SESSION, state.web.secure_cookies) else {
            return Err(ApiError::Unauthenticated);
        };
        let active = match state.domain.authenticate_session(secret).await? {
            Ok(active) => active,
            Err(refusal) => {
                token_refused(TokenKind::Session, &refusal);
                return Err(match refusal {
                    Refusal::InvalidToken => ApiError::Unauthenticated,
                    refusal => ApiError::Refused(refusal),
                });
            }
        };
        let safe = matches!(parts.method, Method::GET | Method::HEAD | Method::OPTIONS);
        let sent = parts.headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok());
        if !safe && !same_secret(sent, &active.csrf_token) {
            return Err(ApiError::Csrf);
        }
        record_actor(&active.principal, Some(active.id));
        Ok(Auth(active.principal))
    }
}

/// The header a write through a web session carries its CSRF token in.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// How `GET /v0/devices/{id}` is authenticated: a bearer token, checked together with the
/// read of the device (the hot path), or any other way [`Auth`] accepts.
pub enum DeviceReader {
    Bearer(String),
    Actor(Principal),
}

impl FromRequestParts<AppState> for DeviceReader {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        if parts.headers.contains_key(AUTHORIZATION) {
            let Bearer(token) = Bearer::from_request_parts(parts, state).await?;
            return Ok(DeviceReader::Bearer(token));
        }
        let Auth(actor) = Auth::from_request_parts(parts, state).await?;
        Ok(DeviceReader::Actor(actor))
    }
}

/// The client's address: the socket peer (never a header, which the client controls), or
/// the unspecified address when the app is served without connection info.
pub struct ClientAddr(pub IpAddr);

impl<S: Send + Sync> FromRequestParts<S> for ClientAddr {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let peer = parts.extensions.get::<ConnectInfo<SocketAddr>>().map(|ConnectInfo(addr)| addr.ip());
        Ok(ClientAddr(peer.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED))))
    }
}

/// The 415 message of a JSON route: a client that forgot the header (curl's `-d` sends a
/// form type) learns what to send.
const SEND_JSON: &str = "send the body as JSON, with the header `Content-Type: application/json`";

/// The 415 message of a form route.
const SEND_A_FORM: &str = "send the body as a form, with `Content-Type: application/x-www-form-urlencoded`";

/// An `application/x-www-form-urlencoded` body (or one without a content type), at most
/// [`BODY_LIMIT`] bytes. A repeated field keeps its first value.
pub struct FormFields(pub HashMap<String, String>);

impl<S: Send + Sync> FromRequest<S> for FormFields {
    type Rejection = ApiError;

    async fn from_request(req: Request, _state: &S) -> Result<Self, ApiError> {
        let form = req.headers().get(CONTENT_TYPE).map(|v| {
            let essence = v.to_str().unwrap_or_default().split(';').next().unwrap_or_default().trim().to_owned();
            essence.eq_ignore_ascii_case("application/x-www-form-urlencoded")
        });
        if form == Some(false) {
            return Err(ApiError::UnsupportedMediaType(SEND_A_FORM));
        }
        let bytes = read_limited(req.into_body()).await?;
        let mut fields = HashMap::new();
        for (key, value) in form_urlencoded::parse(&bytes) {
            fields.entry(key.into_owned()).or_insert_with(|| value.into_owned());
        }
        Ok(FormFields(fields))
    }
}

/// The bearer token, not yet checked: for a handler that checks it together with its own
/// read ([`ferrozone_domain::Domain::get_device_with_token`]). A missing one is 401.
pub struct Bearer(pub String);

impl<S: Send + Sync> FromRequestParts<S> for Bearer {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        bearer_token(&parts.headers).map(|token| Bearer(token.to_owned())).ok_or(ApiError::Unauthenticated)
    }
}

/// The token of `Authorization: Bearer <token>`. The scheme is case-insensitive and may
/// be followed by a colon (`Bearer: <token>`), as Firezone accepted.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, token) = value.split_once(|c: char| c.is_ascii_whitespace())?;
    let scheme = scheme.strip_suffix(':').unwrap_or(scheme);
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// A JSON object request body: at most [`BODY_LIMIT`] bytes (else 413 at extraction), with
/// a JSON content type or none at all. Whether it is one (415, 400) is answered only by
/// [`Self::wrapped`], so that a handler can authorize the caller first: authorization
/// comes before validation, and a caller who may not act gets 403 or 404 whatever it sent.
pub struct JsonObject(Result<Map<String, Value>, ApiError>);

impl JsonObject {
    /// The whole object, for a body without an envelope (`POST /v0/me/password`).
    pub fn object(self) -> Result<Map<String, Value>, ApiError> {
        self.0
    }

    /// The object under `key` (`{"device": {…}}`): missing or not an object is a 400.
    pub fn wrapped(self, key: &str) -> Result<Map<String, Value>, ApiError> {
        match self.0?.into_iter().find(|(k, _)| k == key) {
            Some((_, Value::Object(attrs))) => Ok(attrs),
            Some(_) => Err(ApiError::BadRequest(format!("`{key}` must be a JSON object"))),
            None => Err(ApiError::BadRequest(format!("the body must be a JSON object with a `{key}` object"))),
        }
    }
}

impl<S: Send + Sync> FromRequest<S> for JsonObject {
    type Rejection = ApiError;

    async fn from_request(req: Request, _state: &S) -> Result<Self, ApiError> {
        let json = is_json_or_absent(req.headers());
        reject_declared_too_large(req.headers())?;
        let bytes = read_limited(req.into_body()).await?;
        if !json {
            return Ok(JsonObject(Err(ApiError::UnsupportedMediaType(SEND_JSON))));
        }
        Ok(JsonObject(match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(_) => Err(ApiError::BadRequest("the body must be a JSON object".into())),
            Err(e) => Err(ApiError::BadRequest(format!("malformed JSON: {e}"))),
        }))
    }
}

/// A JSON request body read straight into a typed value, for a bulk route where a
/// [`JsonObject`]'s intermediate tree would cost more than the route's own work
/// (`POST /gateway/v1/stats`): the same limits and content types, and like it decoded only
/// when the handler asks ([`Self::decode`]), after authorization.
pub struct JsonBody(Result<axum::body::Bytes, ApiError>);

impl JsonBody {
    /// The body as a `T`: malformed JSON is a 400, JSON of the wrong shape what `invalid`
    /// makes of serde's message (a 422 at the route's attribute).
    pub fn decode<T: serde::de::DeserializeOwned>(
        self,
        invalid: impl FnOnce(serde_json::Error) -> ApiError,
    ) -> Result<T, ApiError> {
        serde_json::from_slice(&self.0?).map_err(|e| match e.classify() {
            serde_json::error::Category::Data => invalid(e),
            _ => ApiError::BadRequest(format!("malformed JSON: {e}")),
        })
    }
}

impl<S: Send + Sync> FromRequest<S> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, _state: &S) -> Result<Self, ApiError> {
        let json = is_json_or_absent(req.headers());
        reject_declared_too_large(req.headers())?;
        let bytes = read_limited(req.into_body()).await?;
        Ok(JsonBody(if json { Ok(bytes) } else { Err(ApiError::UnsupportedMediaType(SEND_JSON)) }))
    }
}

/// A `Content-Length` over [`BODY_LIMIT`] is a 413 before any of the body is read.
fn reject_declared_too_large(headers: &HeaderMap) -> Result<(), ApiError> {
    let declared = headers.get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    match declared {
        Some(n) if n > BODY_LIMIT as u64 => Err(ApiError::PayloadTooLarge),
        _ => Ok(()),
    }
}

async fn read_limited(body: Body) -> Result<axum::body::Bytes, ApiError> {
    use http_body_util::{BodyExt, LengthLimitError, Limited};
    match Limited::new(body, BODY_LIMIT).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => Err(ApiError::PayloadTooLarge),
        Err(_) => Err(ApiError::BadRequest("the request body could not be read".into())),
    }
}

/// `application/json`, `application/<x>+json` (any parameters), or no content type.
fn is_json_or_absent(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(CONTENT_TYPE) else {
        return true;
    };
    let Ok(value) = value.to_str() else {
        return false;
    };
    let essence = value.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    essence == "application/json" || (essence.starts_with("application/") && essence.ends_with("+json"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(name: axum::http::HeaderName, value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(name, HeaderValue::from_str(value).unwrap());
        h
    }

    #[test]
    fn bearer_scheme_variants() {
        assert_eq!(bearer_token(&headers(AUTHORIZATION, "Bearer fz_abc")), Some("fz_abc"));
        assert_eq!(bearer_token(&headers(AUTHORIZATION, "bearer   fz_abc ")), Some("fz_abc"));
        assert_eq!(bearer_token(&headers(AUTHORIZATION, "Bearer: fz_abc")), Some("fz_abc"));
        assert_eq!(bearer_token(&headers(AUTHORIZATION, "Bearer")), None);
        assert_eq!(bearer_token(&headers(AUTHORIZATION, "Basic abc")), None);
        assert_eq!(bearer_token(&HeaderMap::new()), None);
    }

    #[test]
    fn content_types() {
        assert!(is_json_or_absent(&HeaderMap::new()));
        assert!(is_json_or_absent(&headers(CONTENT_TYPE, "application/json; charset=utf-8")));
        assert!(is_json_or_absent(&headers(CONTENT_TYPE, "Application/JSON")));
        assert!(is_json_or_absent(&headers(CONTENT_TYPE, "application/vnd.api+json")));
        assert!(!is_json_or_absent(&headers(CONTENT_TYPE, "text/plain")));
        assert!(!is_json_or_absent(&headers(CONTENT_TYPE, "application/x-www-form-urlencoded")));
    }
}
