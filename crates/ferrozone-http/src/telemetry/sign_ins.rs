//! The sign-in and authentication metrics (docs/operations.md, "Monitoring"): what a
//! dashboard shows of the sign-ins, and what an alert on a guessing attack counts.
//! The labels are small fixed sets: never an account, an address or a provider id.

use ferrozone_domain::crypto::totp;
use ferrozone_domain::service::tokens::Refusal;

/// Sign-in steps, by `method` and `outcome`.
pub const SIGN_INS: &str = "ferrozone_sign_ins_total";
/// Bearer tokens and session cookies refused, by `kind` and `reason`.
pub const TOKENS_REFUSED: &str = "ferrozone_tokens_refused_total";

/// How a sign-in step proved who is signing in.
#[derive(Debug, Clone, Copy)]
pub enum Method {
    Password,
    /// An authenticator app's code.
    Totp,
    RecoveryCode,
    Oidc,
    Saml,
}

impl Method {
    /// The second step's method for `code`: a recovery code is told from an authenticator's
    /// code by its shape, as the domain tells them apart.
    pub fn of_code(code: &str) -> Self {
        if totp::normalize_code(code).is_some() {
            Self::Totp
        } else {
            Self::RecoveryCode
        }
    }

    /// The method's name, as the metrics label it and the audit log records it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Password => "password",
            Self::Totp => "totp",
            Self::RecoveryCode => "recovery_code",
            Self::Oidc => "oidc",
            Self::Saml => "saml",
        }
    }
}

/// How a sign-in step ended. Steps that checked nothing (an expired form, password checks
/// at capacity, password sign-in turned off) are not counted.
#[derive(Debug, Clone, Copy)]
pub enum Outcome {
    /// Proven: a password sign-in that needs a second step counts here too, and its code
    /// then counts once more under its own method.
    Success,
    /// A wrong password or code, or a provider's sign-in that Ferrozone does not accept.
    Refused,
    /// Refused unchecked by the throttle (or, for providers, by the per-address cap on
    /// sign-ins started).
    Throttled,
}

impl Outcome {
    fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Refused => "refused",
            Self::Throttled => "throttled",
        }
    }
}

/// Counts one sign-in step.
pub fn sign_in(method: Method, outcome: Outcome) {
    metrics::counter!(SIGN_INS, "method" => method.as_str(), "outcome" => outcome.as_str()).increment(1);
}

/// What carried a refused credential.
#[derive(Debug, Clone, Copy)]
pub enum TokenKind {
    /// `Authorization: Bearer` (an API token).
    ApiToken,
    /// A browser session's cookie.
    Session,
}

/// Counts a refused token or session: `invalid` (unknown, malformed, expired or revoked)
/// or `user_disabled`.
pub fn token_refused(kind: TokenKind, refusal: &Refusal) {
    let kind = match kind {
        TokenKind::ApiToken => "api_token",
        TokenKind::Session => "session",
    };
    let reason = match refusal {
        Refusal::InvalidToken => "invalid",
        Refusal::UserDisabled => "user_disabled",
    };
    metrics::counter!(TOKENS_REFUSED, "kind" => kind, "reason" => reason).increment(1);
}
