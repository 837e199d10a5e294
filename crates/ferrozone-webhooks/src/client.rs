//! One delivery: an event POSTed to a receiver, under the bounds of an outbound request
//! surface: no redirects followed, no proxy, a bounded time and a bounded answer, and
//! (unless allowed) no loopback, link-local or private address.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ferrozone_domain::audit::EventView;
use ferrozone_domain::webhook::validate::MAX_ERROR_LEN;
use ferrozone_domain::webhook::Outcome;
use reqwest::header::CONTENT_TYPE;
use reqwest::redirect::Policy;

use crate::resolve::{self, PublicOnly};
use crate::sign;

/// The most bytes of a receiver's answer read (then dropped): it is not used, and a
/// receiver must not be able to make the server read without end.
pub const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// The bounds of each delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub connect_timeout: Duration,
    /// The whole request, the answer included.
    pub timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self { connect_timeout: Duration::from_secs(5), timeout: Duration::from_secs(10) }
    }
}

/// How an attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub outcome: Outcome,
    pub status: Option<u16>,
    pub error: Option<String>,
    pub duration: Duration,
}

/// The HTTP client deliveries share.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    allow_private: bool,
}

impl Client {
    pub fn new(allow_private: bool, limits: Limits) -> anyhow::Result<Self> {
        let mut builder = reqwest::Client::builder()
            .redirect(Policy::none())
            .no_proxy()
            .connect_timeout(limits.connect_timeout)
            .timeout(limits.timeout)
            .user_agent(concat!("ferrozone/", env!("CARGO_PKG_VERSION")));
        if !allow_private {
            builder = builder.dns_resolver(Arc::new(PublicOnly));
        }
        Ok(Self { http: builder.build()?, allow_private })
    }

    /// POSTs `event` to `url`, signed with `secret`.
    pub async fn deliver(&self, url: &str, secret: &[u8], event: &EventView) -> Delivery {
        let started = Instant::now();
        let (outcome, status, error) = self.attempt(url, secret, event).await;
        Delivery { outcome, status, error: error.map(bounded), duration: started.elapsed() }
    }

    async fn attempt(&self, url: &str, secret: &[u8], event: &EventView) -> (Outcome, Option<u16>, Option<String>) {
        let url = match url::Url::parse(url) {
            Ok(url) => url,
            Err(e) => return (Outcome::Failed, None, Some(format!("invalid URL: {e}"))),
        };
        if !self.allow_private {
            if let Err(refused) = resolve::check_literal(&url) {
                return (Outcome::RefusedAddress, None, Some(refused.to_string()));
            }
        }
        let body = match serde_json::to_vec(event) {
            Ok(body) => body,
            Err(e) => return (Outcome::Failed, None, Some(format!("encode the event: {e}"))),
        };
        let timestamp = ferrozone_domain::Timestamp::now().micros() / 1_000_000;
        let request = self
            .http
            .post(url)
            .header(CONTENT_TYPE, "application/json")
            .header(sign::HEADER, sign::header(secret, timestamp, &body))
            .header("Ferrozone-Event", &event.action)
            .header("Ferrozone-Delivery", event.id.to_string())
            .body(body);
        let mut response = match request.send().await {
            Ok(response) => response,
            Err(e) if resolve::is_refused(&e) => return (Outcome::RefusedAddress, None, Some(describe(e))),
            Err(e) => return (Outcome::Failed, None, Some(describe(e))),
        };
        let status = response.status();
        // Read a bounded part of the answer so the connection can be reused, then drop it.
        let mut read = 0;
        while read < MAX_ANSWER_BYTES {
            match response.chunk().await {
                Ok(Some(chunk)) => read += chunk.len(),
                Ok(None) => break,
                Err(e) if status.is_success() => return (Outcome::Failed, Some(status.as_u16()), Some(describe(e))),
                Err(_) => break,
            }
        }
        if status.is_success() {
            (Outcome::Delivered, Some(status.as_u16()), None)
        } else {
            let reason = if status.is_redirection() { "redirect not followed" } else { "not a 2xx answer" };
            (Outcome::Failed, Some(status.as_u16()), Some(format!("HTTP {}: {reason}", status.as_u16())))
        }
    }
}

/// A request error in a few words, without the URL (it may hold a token of the receiver).
fn describe(err: reqwest::Error) -> String {
    let err = err.without_url();
    if err.is_timeout() {
        return "timed out".to_owned();
    }
    let mut text = err.to_string();
    let mut cause = std::error::Error::source(&err);
    while let Some(inner) = cause {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        cause = inner.source();
    }
    text
}

/// `text` cut to [`MAX_ERROR_LEN`] bytes at a character boundary.
fn bounded(mut text: String) -> String {
    if text.len() > MAX_ERROR_LEN {
        let mut end = MAX_ERROR_LEN;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}
