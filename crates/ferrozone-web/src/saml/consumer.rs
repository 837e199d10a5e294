//! The assertion consumer's request and its own pages: the posted form, read within the
//! consumer's body limit ([`ferrozone_saml::SamlLimits`], a setting smaller than the API's),
//! and the 503 for a response the verification queue turned away.

use std::collections::HashMap;

use axum::extract::Request;
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;

use crate::html;

/// The 503 page when the queue is full.
pub fn busy() -> Response {
    let text = "Too many sign-ins are being checked right now. Please try again in a moment.";
    let mut response = html::response(StatusCode::SERVICE_UNAVAILABLE, html::message("Sign-in busy", text));
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("2"));
    response
}

/// The form fields of `request` (`application/x-www-form-urlencoded` or no content type),
/// its body at most `limit` bytes; else the page to answer (413, 415 or 400). A repeated
/// field keeps its first value.
pub async fn form(request: Request, limit: usize) -> Result<HashMap<String, String>, Response> {
    use http_body_util::{BodyExt, LengthLimitError, Limited};
    let headers = request.headers();
    if let Some(value) = headers.get(CONTENT_TYPE) {
        let essence = value.to_str().unwrap_or_default().split(';').next().unwrap_or_default().trim();
        if !essence.eq_ignore_ascii_case("application/x-www-form-urlencoded") {
            return Err(page(StatusCode::UNSUPPORTED_MEDIA_TYPE, "The identity provider's answer is not a form."));
        }
    }
    let declared = headers.get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    let bytes = match Limited::new(request.into_body(), limit).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => return Err(too_large()),
        Err(_) => return Err(page(StatusCode::BAD_REQUEST, "The identity provider's answer could not be read.")),
    };
    let mut fields = HashMap::new();
    for (key, value) in form_urlencoded::parse(&bytes) {
        fields.entry(key.into_owned()).or_insert_with(|| value.into_owned());
    }
    Ok(fields)
}

fn too_large() -> Response {
    page(StatusCode::PAYLOAD_TOO_LARGE, "The identity provider's answer is larger than this server accepts.")
}

fn page(status: StatusCode, text: &str) -> Response {
    html::response(status, html::message("Sign-in refused", text))
}
