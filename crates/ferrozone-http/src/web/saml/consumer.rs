//! What the assertion consumer spends on one response, bounded: the body it reads (a
//! setting, smaller than the API's), and how many responses are verified at once. Parsing,
//! canonicalization and signature checks run on the blocking pool, never on the async
//! workers; at most `concurrency` at a time, `concurrency` more may wait, and a response
//! beyond those is answered 503 with `Retry-After` at once.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::Request;
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::web::html;

/// The consumer's body limit unless `FERROZONE_SAML_CONSUMER_BODY_LIMIT` says otherwise. Real
/// responses are under about 50 KB of XML (67 KB as base64); 256 KiB leaves room for IdPs
/// that send many attributes or certificates.
pub const DEFAULT_BODY_LIMIT: usize = 256 * 1024;

/// The consumer's limits (`FERROZONE_SAML_VERIFY_CONCURRENCY`,
/// `FERROZONE_SAML_CONSUMER_BODY_LIMIT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SamlLimits {
    /// Responses verified at once (as many more may wait).
    pub concurrency: usize,
    /// The largest request body the consumer reads, in bytes.
    pub body_limit: usize,
}

impl Default for SamlLimits {
    /// One verification per core, [`DEFAULT_BODY_LIMIT`].
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        Self { concurrency: cores, body_limit: DEFAULT_BODY_LIMIT }
    }
}

/// Admission to verification: `concurrency` run, as many wait, the rest are turned away.
#[derive(Debug)]
pub struct Gate {
    admitted: Arc<Semaphore>,
    running: Arc<Semaphore>,
}

/// A response admitted to verification (holding a place in the queue).
#[derive(Debug)]
pub struct Admitted {
    place: OwnedSemaphorePermit,
    running: Arc<Semaphore>,
}

/// A response being verified: dropped when its verification ends.
#[derive(Debug)]
pub struct Running {
    _place: OwnedSemaphorePermit,
    _slot: OwnedSemaphorePermit,
}

impl Gate {
    pub fn new(concurrency: usize) -> Self {
        let concurrency = concurrency.max(1);
        Self { admitted: Arc::new(Semaphore::new(concurrency * 2)), running: Arc::new(Semaphore::new(concurrency)) }
    }

    /// A place, or `None` when as many responses as allowed are already running or waiting.
    pub fn try_enter(&self) -> Option<Admitted> {
        let place = Arc::clone(&self.admitted).try_acquire_owned().ok()?;
        Some(Admitted { place, running: Arc::clone(&self.running) })
    }
}

impl Admitted {
    /// Waits for a verification slot.
    pub async fn run(self) -> Running {
        let slot = self.running.acquire_owned().await.expect("the verification semaphore is never closed");
        Running { _place: self.place, _slot: slot }
    }
}

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
