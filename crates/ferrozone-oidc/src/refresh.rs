//! One refresh of a stored refresh token, and what its failure means.
//!
//! Only `invalid_grant` is a definitive refusal: RFC 6749 section 5.2 gives it for a refresh
//! token that is invalid, expired, revoked or issued to another client, and providers
//! answer it when the user's consent or account is gone. Every other refusal by the token
//! endpoint (`invalid_client`, `unauthorized_client`, `unsupported_grant_type`,
//! `invalid_scope`, `invalid_request`) is about Ferrozone's client registration, the same
//! for every user: a configuration problem, logged, that disables nobody. Failing to reach
//! the provider, timeouts, 5xx answers, `server_error`, `temporarily_unavailable`, answers
//! that are not OAuth JSON and failed discovery are transient.

use openidconnect::core::CoreErrorResponseType;
use openidconnect::{Nonce, OAuth2TokenResponse, RefreshToken, RequestTokenError, TokenResponse};
use zeroize::Zeroizing;

use crate::discovery::describe_token_error;
use crate::{Oidc, Provider};

/// What became of one refresh.
#[derive(Debug)]
pub enum RefreshOutcome {
    /// The token works; `rotated` is the new refresh token when the provider issued one,
    /// `groups` the user's groups now (as [`crate::Identity::groups`]).
    Refreshed { rotated: Option<Zeroizing<String>>, groups: Option<Vec<String>> },
    /// `invalid_grant`: the token is dead and the user's access with it.
    Refused { reason: String },
    /// The provider refuses this client itself: an operator must fix the configuration.
    Misconfigured { reason: String },
    /// The provider could not answer now; try again later.
    Transient { reason: String },
}

impl Oidc {
    /// Uses `refresh_token` once at the provider's token endpoint.
    pub async fn refresh(&self, provider: &Provider, refresh_token: &str) -> RefreshOutcome {
        let client = match self.client(provider, false).await {
            Ok(client) => client,
            Err(e) => return RefreshOutcome::Transient { reason: e.to_string() },
        };
        let token = RefreshToken::new(refresh_token.to_owned());
        let request = match client.exchange_refresh_token(&token) {
            Ok(request) => request,
            Err(e) => return RefreshOutcome::Misconfigured { reason: format!("no token endpoint: {e}") },
        };
        match request.request_async(self.http()).await {
            Ok(tokens) => {
                let rotated = tokens
                    .refresh_token()
                    .filter(|new| new.secret() != refresh_token)
                    .map(|new| Zeroizing::new(new.secret().clone()));
                // A refresh answer's ID token carries no nonce; it counts only if it verifies.
                let id_token = tokens
                    .id_token()
                    .filter(|token| token.claims(&client.id_token_verifier(), |_: Option<&Nonce>| Ok(())).is_ok())
                    .map(ToString::to_string);
                let groups = self.groups(provider, &client, id_token.as_deref(), tokens.access_token()).await;
                RefreshOutcome::Refreshed { rotated, groups }
            }
            Err(RequestTokenError::ServerResponse(answer)) => classify(answer.error()),
            Err(other) => {
                RefreshOutcome::Transient { reason: format!("token endpoint: {}", describe_token_error(&other)) }
            }
        }
    }
}

/// The meaning of an OAuth error code from the token endpoint.
fn classify(code: &CoreErrorResponseType) -> RefreshOutcome {
    let reason = format!("the token endpoint answered `{}`", code.as_ref());
    match code {
        CoreErrorResponseType::InvalidGrant => RefreshOutcome::Refused { reason },
        CoreErrorResponseType::InvalidClient
        | CoreErrorResponseType::UnauthorizedClient
        | CoreErrorResponseType::UnsupportedGrantType
        | CoreErrorResponseType::InvalidScope
        | CoreErrorResponseType::InvalidRequest => RefreshOutcome::Misconfigured { reason },
        CoreErrorResponseType::Extension(_) => RefreshOutcome::Transient { reason },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_invalid_grant_is_a_refusal() {
        assert!(matches!(classify(&CoreErrorResponseType::InvalidGrant), RefreshOutcome::Refused { .. }));
        for config in [
            CoreErrorResponseType::InvalidClient,
            CoreErrorResponseType::UnauthorizedClient,
            CoreErrorResponseType::UnsupportedGrantType,
            CoreErrorResponseType::InvalidScope,
            CoreErrorResponseType::InvalidRequest,
        ] {
            assert!(matches!(classify(&config), RefreshOutcome::Misconfigured { .. }), "{config:?}");
        }
        for transient in ["server_error", "temporarily_unavailable", "something_new"] {
            let code = CoreErrorResponseType::Extension(transient.to_owned());
            assert!(matches!(classify(&code), RefreshOutcome::Transient { .. }), "{transient}");
        }
    }
}
