//! The rules of a webhook's fields, as `POST` and `PATCH /v0/webhooks` check them.

use std::net::IpAddr;

use zeroize::Zeroizing;

use super::address;
use crate::error::{Errors, Result};
use crate::input::WrongTypes;

pub const MAX_URL_LEN: usize = 2048;
pub const MIN_SECRET_LEN: usize = 16;
pub const MAX_SECRET_LEN: usize = 256;
pub const MAX_EVENTS: usize = 64;
/// The most bytes of an attempt's error text kept.
pub const MAX_ERROR_LEN: usize = 500;
/// A generated secret's prefix, so that a leaked one is recognisable.
pub const SECRET_PREFIX: &str = "whsec_";

/// The first word of every action the audit log records (docs/design/audit.md, "Audit
/// events: what is recorded"); an event filter names one of them.
pub const SUBJECT_KINDS: &[&str] = &[
    "user",
    "device",
    "token",
    "session",
    "rule",
    "configuration",
    "totp",
    "oidc_connection",
    "import",
    "webhook",
    "audit",
    "invitation",
    "magic_link",
    "gateway",
];

/// A new endpoint as asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewWebhook {
    pub url: Option<String>,
    pub events: Option<Vec<String>>,
    /// `None`: a secret is generated.
    pub secret: Option<Zeroizing<String>>,
    pub enabled: Option<bool>,
    pub wrong_types: WrongTypes,
}

/// A change asked for; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WebhookChanges {
    pub url: Option<String>,
    pub events: Option<Vec<String>>,
    /// A new secret given by the administrator.
    pub secret: Option<Zeroizing<String>>,
    /// Generate a new secret (shown once in the answer).
    pub rotate_secret: bool,
    pub enabled: Option<bool>,
    pub wrong_types: WrongTypes,
}

/// A fresh secret: 32 random bytes, base64url, prefixed [`SECRET_PREFIX`].
pub fn generate_secret() -> Zeroizing<String> {
    crate::crypto::prefixed_secret(SECRET_PREFIX)
}

/// Checks a receiver URL: http or https, a host, no user name or password, at most
/// [`MAX_URL_LEN`] bytes; a literal address must be public unless `allow_private`.
pub fn url(errors: &mut Errors, text: &str, allow_private: bool) -> String {
    let text = text.trim();
    if text.len() > MAX_URL_LEN {
        errors.add("url", format!("is too long (maximum is {MAX_URL_LEN} characters)"));
        return String::new();
    }
    let Ok(parsed) = url::Url::parse(text) else {
        errors.add("url", "is not a valid URL");
        return String::new();
    };
    if !matches!(parsed.scheme(), "http" | "https") {
        errors.add("url", "must be an http or https URL");
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        errors.add("url", "must not contain a user name or password");
    }
    let literal = match parsed.host() {
        None => {
            errors.add("url", "must have a host");
            None
        }
        Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
        Some(url::Host::Domain(_)) => None,
    };
    if literal.is_some_and(|ip| !allow_private && !address::is_public(ip)) {
        errors.add("url", "is a loopback, link-local or private address (see FERROZONE_WEBHOOK_ALLOW_PRIVATE)");
    }
    parsed.into()
}

/// Checks an event filter: each entry an action (`device.created`) or a prefix ending
/// with a dot (`device.`) of a known subject kind. Duplicates are dropped.
pub fn events(errors: &mut Errors, events: &[String]) -> Vec<String> {
    if events.len() > MAX_EVENTS {
        errors.add("events", format!("has too many entries (maximum is {MAX_EVENTS})"));
        return Vec::new();
    }
    let mut kept: Vec<String> = Vec::new();
    for event in events {
        if !is_event_pattern(event) {
            errors.add("events", format!("{event:?} is not an action (device.created) or a prefix (device.)"));
        } else if !kept.contains(event) {
            kept.push(event.clone());
        }
    }
    kept
}

fn is_event_pattern(text: &str) -> bool {
    let Some((kind, verb)) = text.split_once('.') else { return false };
    let word = |w: &str| w.len() <= 64 && w.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
    SUBJECT_KINDS.contains(&kind) && word(verb) && !verb.starts_with('_')
}

/// Checks a secret given by the administrator.
pub fn secret(errors: &mut Errors, secret: &str) {
    if secret.chars().count() < MIN_SECRET_LEN {
        errors.add("secret", format!("is too short (minimum is {MIN_SECRET_LEN} characters)"));
    } else if secret.len() > MAX_SECRET_LEN {
        errors.add("secret", format!("is too long (maximum is {MAX_SECRET_LEN} characters)"));
    } else if secret.chars().any(char::is_control) {
        errors.add("secret", "must not contain control characters");
    }
}

/// A validated new endpoint, with its secret in clear (to seal, and to show once).
pub struct Checked {
    pub url: String,
    pub events: Vec<String>,
    pub secret: Zeroizing<String>,
    pub enabled: bool,
}

/// The attributes sent with a JSON type they cannot have.
fn wrong_types(errors: &mut Errors, wrong: &WrongTypes) {
    for field in ["url", "events", "secret", "enabled", "rotate_secret"] {
        if wrong.has(field) {
            errors.add(field, "is invalid");
        }
    }
}

pub fn create(input: &NewWebhook, allow_private: bool) -> Result<Checked> {
    let mut errors = Errors::new();
    wrong_types(&mut errors, &input.wrong_types);
    let url = match input.url.as_deref() {
        Some(text) => url(&mut errors, text, allow_private),
        None => {
            if !input.wrong_types.has("url") {
                errors.add("url", "can't be blank");
            }
            String::new()
        }
    };
    let events = events(&mut errors, input.events.as_deref().unwrap_or_default());
    if let Some(given) = &input.secret {
        secret(&mut errors, given);
    }
    let secret = input.secret.clone().unwrap_or_else(generate_secret);
    errors.finish(Checked { url, events, secret, enabled: input.enabled.unwrap_or(true) })
}

/// A validated change: the new secret in clear when there is one.
pub struct CheckedChanges {
    pub url: Option<String>,
    pub events: Option<Vec<String>>,
    pub secret: Option<Zeroizing<String>>,
    pub enabled: Option<bool>,
}

pub fn update(input: &WebhookChanges, allow_private: bool) -> Result<CheckedChanges> {
    let mut errors = Errors::new();
    wrong_types(&mut errors, &input.wrong_types);
    let url = input.url.as_deref().map(|text| url(&mut errors, text, allow_private));
    let events = input.events.as_deref().map(|list| events(&mut errors, list));
    if let Some(given) = &input.secret {
        secret(&mut errors, given);
        if input.rotate_secret {
            errors.add("secret", "cannot be given together with rotate_secret");
        }
    }
    let secret = if input.rotate_secret { Some(generate_secret()) } else { input.secret.clone() };
    errors.finish(CheckedChanges { url, events, secret, enabled: input.enabled })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url_errors(text: &str, allow_private: bool) -> Errors {
        let mut errors = Errors::new();
        url(&mut errors, text, allow_private);
        errors
    }

    #[test]
    fn urls() {
        assert!(url_errors("https://hooks.example.com/ferrozone", false).is_empty());
        assert!(url_errors("http://93.184.216.34:8080/x", false).is_empty());
        for bad in ["ftp://example.com/", "https://user:pw@example.com/", "not a url", "file:///etc/passwd"] {
            assert!(url_errors(bad, false).has("url"), "{bad}");
        }
        for private in ["http://127.0.0.1:9/", "http://[::1]/", "http://10.0.0.1/", "http://[::ffff:192.168.0.1]/"] {
            assert!(url_errors(private, false).has("url"), "{private}");
            assert!(url_errors(private, true).is_empty(), "{private} allowed");
        }
        assert!(url_errors(&format!("https://example.com/{}", "a".repeat(2048)), false).has("url"));
    }

    #[test]
    fn event_patterns() {
        let mut errors = Errors::new();
        let kept = events(&mut errors, &["device.".into(), "user.created".into(), "device.".into()]);
        assert!(errors.is_empty());
        assert_eq!(kept, ["device.", "user.created"]);
        for bad in ["device", "nothing.created", "Device.created", "", ".", "device.created.x"] {
            let mut errors = Errors::new();
            events(&mut errors, &[bad.to_owned()]);
            assert!(errors.has("events"), "{bad}");
        }
    }

    #[test]
    fn generated_secrets_are_long_random_and_prefixed() {
        let (a, b) = (generate_secret(), generate_secret());
        assert!(a.starts_with(SECRET_PREFIX) && a.len() == SECRET_PREFIX.len() + 43, "{}", a.as_str());
        assert_ne!(a, b);
    }
}
