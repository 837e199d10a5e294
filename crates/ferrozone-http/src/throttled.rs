//! What both faces log and say around the domain's throttled checks
//! (`ferrozone_domain::service::throttled`): a code (an authenticator's or a recovery
//! code), and the refusal of a change of one's own password.

use std::future::Future;
use std::net::IpAddr;

use ferrozone_domain::model::User;
use ferrozone_domain::service::throttle::Refused;
use ferrozone_domain::DomainError;

use crate::telemetry::sign_ins::Method;
use crate::telemetry::{sign_in_refused, SignInMethod};
use crate::AppState;

/// Runs `check` of an authenticator's code `user` sent from `address` under the sign-in
/// throttle (`Domain::check_code_throttled`), logging a refusal.
pub async fn throttled<T>(
    app: &AppState,
    user: &User,
    address: IpAddr,
    check: impl Future<Output = Result<Option<T>, DomainError>>,
) -> Result<Result<Option<T>, Refused>, DomainError> {
    throttled_as(app, user, address, Method::Totp, check).await
}

/// [`throttled`] for a code of `method` (an authenticator's or a recovery code), as the
/// audit log records a wrong one.
pub async fn throttled_as<T>(
    app: &AppState,
    user: &User,
    address: IpAddr,
    method: Method,
    check: impl Future<Output = Result<Option<T>, DomainError>>,
) -> Result<Result<Option<T>, Refused>, DomainError> {
    let outcome = app.domain.check_code_throttled(user, address, method.as_str(), check).await;
    let refusal = match &outcome {
        Ok(Err(_)) => Some("throttled"),
        Ok(Ok(None)) => Some("wrong_code"),
        _ => None,
    };
    if let Some(reason) = refusal {
        sign_in_refused(address, SignInMethod::Totp, reason, &user.email);
    }
    outcome
}

/// What the throttle's refusal of a password change says.
pub fn throttled_message(refused: Refused) -> &'static str {
    match refused {
        Refused::Network(_) => NETWORK_THROTTLED,
        Refused::Pair(_) | Refused::Account(_) => THROTTLED,
    }
}

const THROTTLED: &str = "Too many wrong passwords for this account. Please wait and try again.";
const NETWORK_THROTTLED: &str = "Too many password attempts from your network. Please wait and try again.";
