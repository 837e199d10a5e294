//! Request ids, one log line per request, panic safety, the headers of every `/v0`
//! response ([`layers`]), and the request and sign-in metrics.

mod layers;

pub use layers::ClientAddress;
pub mod requests;
pub mod sign_ins;

use std::net::IpAddr;

use axum::http::HeaderName;
use axum::Router;
use tower::layer::layer_fn;
use tracing::Span;

use ferrozone_domain::audit::{context, Actor, ActorKind};
use ferrozone_domain::Principal;
use uuid::Uuid;

/// The request id's header, named once: a lookup by a `&str` name parses the name first.
const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The longest client request id kept; a longer one is replaced.
const MAX_REQUEST_ID: usize = 128;

/// Wraps `router` in the request metrics (when `metered`) and each route in the request's
/// frame ([`layers`]: request id, span and log line, audit scope, `/v0` headers, panic
/// safety). Unmetered, the app has no metrics layer at all: metrics off cost nothing per
/// request.
pub fn wrap(router: Router, metered: bool) -> Router {
    let router = router.layer(layer_fn(layers::RequestFrame));
    if metered {
        router.layer(requests::MeasureLayer::default())
    } else {
        router
    }
}

/// Names who acts on every later log line of the current request, its `request` line
/// included, so that each write is traced to its caller: `token:<id>` for an API token,
/// `user:<id>` for a browser session. Ids, not emails: the logs keep no personal data
/// but that of refused sign-ins ([`sign_in_refused`]). The audit log records the same
/// actor: the token, or the session (`session`, the id of a browser session).
pub fn record_actor(principal: &Principal, session: Option<Uuid>) {
    Span::current().record("actor", tracing::field::display(LoggedActor(principal)));
    context::set_actor(audit_actor(principal, session));
}

/// Names a provisioning token (SCIM) as the actor of the current request: `scim:<id>` on its
/// log lines, the actor kind `scim` in the audit log.
pub fn record_provisioner(token: Uuid) {
    Span::current().record("actor", tracing::field::display(format_args!("scim:{token}")));
    context::set_actor(Actor { kind: ActorKind::Scim, id: Some(token.to_string()), user_id: None });
}

/// The actor as a log line names it, formatted only if a line is written.
struct LoggedActor<'a>(&'a Principal);

impl std::fmt::Display for LoggedActor<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.0.token_id, self.0.user_id) {
            (Some(token), _) => write!(f, "token:{token}"),
            (None, Some(user)) => write!(f, "user:{user}"),
            (None, None) => f.write_str("operator"),
        }
    }
}

/// The audit log's actor for `principal`, authenticated by a token or by `session`.
fn audit_actor(principal: &Principal, session: Option<Uuid>) -> Actor {
    let (kind, id) = match (principal.token_id, session) {
        (Some(token), _) => (ActorKind::Token, Some(token)),
        (None, Some(session)) => (ActorKind::Session, Some(session)),
        (None, None) => return Actor::cli(),
    };
    Actor { kind, id: id.map(|id| id.to_string()), user_id: principal.user_id }
}

/// How a refused sign-in was attempted.
#[derive(Debug, Clone, Copy)]
pub enum SignInMethod {
    Password,
    Totp,
    Token,
}

impl SignInMethod {
    fn as_str(self) -> &'static str {
        match self {
            Self::Password => "password",
            Self::Totp => "totp",
            Self::Token => "token",
        }
    }
}

/// The most characters of a typed account name a log line keeps.
const MAX_LOGGED_ACCOUNT: usize = 100;

/// Logs a refused sign-in in one stable line for tools such as fail2ban
/// (docs/operations.md): `sign-in refused client=<address> method=<how> reason=<why>
/// account="<as typed>"`. The client address comes first, right after the message, so
/// nothing a client types can stand in its place; the account (at most
/// [`MAX_LOGGED_ACCOUNT`] characters, escaped) comes last. Never a password or a code.
pub fn sign_in_refused(client: IpAddr, method: SignInMethod, reason: &'static str, account: &str) {
    let account: String = account.chars().take(MAX_LOGGED_ACCOUNT).collect();
    tracing::warn!(client = %client, method = %method.as_str(), reason = %reason, account = ?account, "sign-in refused");
}

fn is_usable_request_id(id: &[u8]) -> bool {
    (1..=MAX_REQUEST_ID).contains(&id.len())
        && id.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_are_short_and_plain() {
        assert!(is_usable_request_id(b"trace-42_a.B"));
        assert!(is_usable_request_id(&[b'a'; MAX_REQUEST_ID]));
        assert!(!is_usable_request_id(&[b'a'; MAX_REQUEST_ID + 1]));
        assert!(!is_usable_request_id(b""));
        for bad in [&b"a b"[..], b"a\"b", b"a/b", b"\xc3\xa9", b"a\tb", b"a=b"] {
            assert!(!is_usable_request_id(bad), "{bad:?}");
        }
    }
}
