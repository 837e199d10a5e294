//! A browser's sign-in from start to end, over Ferrozone's domain: the one-time flow that
//! keeps the [`FlowSecrets`], the provider's protocol ([`crate::signin`]) and the provider
//! sign-in ([`Domain::sign_in_with_identity`], which keeps the refresh token). The HTTP
//! layer parses each request, calls one of these steps and answers with a page; binding the
//! flow to the browser (its cookie) is the HTTP layer's.

use std::net::IpAddr;

use ferrozone_domain::providers::ProviderPolicy;
use ferrozone_domain::service::providers::{ProviderIdentity, ProviderSignInEnd, ReturningFlow};
use ferrozone_domain::{Domain, DomainError};
use zeroize::Zeroizing;

use crate::{FlowSecrets, Identity, Oidc, Provider, SignInError};

/// What starting a sign-in came to.
pub enum Begun {
    /// Send the browser to the provider's `url`; `state` names the flow (bind it to the browser).
    ToProvider { state: Zeroizing<String>, url: String },
    /// The browser's address started too many sign-ins: nothing was stored.
    TooMany,
    /// The provider cannot be used right now (discovery failed, say): no flow was stored
    /// when discovery failed.
    Failed(SignInError),
}

/// What the provider's redirect back carried (its query parameters).
#[derive(Debug, Clone, Copy, Default)]
pub struct Callback<'a> {
    pub code: Option<&'a str>,
    /// The provider's refusal (RFC 6749, section 4.1.2.1).
    pub error: Option<&'a str>,
    /// The issuer (RFC 9207), when the provider sends it.
    pub iss: Option<&'a str>,
}

/// What a callback came to.
pub enum Completed {
    /// The provider proved an email: the provider sign-in's end (signed in, or refused by
    /// the policy).
    Done(Box<ProviderSignInEnd>),
    /// The provider said no: its error `code` if it looks like one (ASCII letters, digits
    /// and `_`, at most 64), else `unknown`.
    ProviderRefused { code: String },
    /// No pending flow of this browser, or one that cannot go on (no code, unreadable secrets).
    UnknownFlow,
    /// The provider's answer did not carry the sign-in through.
    Failed(SignInError),
}

impl Oidc {
    /// Starts a sign-in with `provider` for the browser at `client`, to end at `return_to`
    /// (a local path). The provider is discovered first, so that one that is down is a clear
    /// page rather than a redirect to nowhere; then fresh secrets (nonce, PKCE) are kept in a
    /// one-time flow whose `state` goes to the provider.
    pub async fn start(
        &self,
        domain: &Domain,
        provider: &Provider,
        return_to: &str,
        client: IpAddr,
    ) -> Result<Begun, DomainError> {
        if let Err(e) = self.ready(provider).await {
            return Ok(Begun::Failed(e));
        }
        let secrets = FlowSecrets::new();
        let Some(state) = domain.start_sign_in_flow(&provider.id, &secrets.to_bytes(), return_to, client).await? else {
            return Ok(Begun::TooMany);
        };
        Ok(match self.authorization_url(provider, &state, &secrets).await {
            Ok(url) => Begun::ToProvider { state, url },
            Err(e) => Begun::Failed(e),
        })
    }

    /// Ends the sign-in of `flow` (taken already, so that it can never be used again,
    /// whatever follows; `None` when this browser had no such flow pending): the provider's
    /// refusal, else the code exchanged and the ID token checked, and the email signed in
    /// under the provider's policy, its refresh token kept.
    pub async fn complete(
        &self,
        domain: &Domain,
        provider: &Provider,
        flow: Option<ReturningFlow>,
        callback: Callback<'_>,
    ) -> Result<Completed, DomainError> {
        let (identity, flow) = match self.identify(provider, flow, callback).await {
            Ok(identified) => identified,
            Err(ended) => return Ok(ended),
        };
        let policy =
            ProviderPolicy { auto_create_users: provider.auto_create_users, allow_admins: provider.allow_admins };
        let identity =
            ProviderIdentity { email: identity.email, refresh_token: identity.refresh_token, groups: identity.groups };
        let outcome = domain.sign_in_with_identity(&provider.id, &identity, policy).await?;
        let end = ProviderSignInEnd { outcome, email: identity.email, return_to: flow.return_to };
        Ok(Completed::Done(Box::new(end)))
    }

    /// A test sign-in's end (the console's Test sign-in): the same checks as
    /// [`Self::complete`] up to the identity the provider proved, and nobody signed in.
    /// `Err` is how the callback ended otherwise (never [`Completed::Done`]).
    pub async fn verify(
        &self,
        provider: &Provider,
        flow: Option<ReturningFlow>,
        callback: Callback<'_>,
    ) -> Result<Identity, Completed> {
        self.identify(provider, flow, callback).await.map(|(identity, _)| identity)
    }

    /// The provider's refusal, no flow, or the code exchanged and the ID token checked:
    /// the identity and the flow it came back to.
    async fn identify(
        &self,
        provider: &Provider,
        flow: Option<ReturningFlow>,
        callback: Callback<'_>,
    ) -> Result<(Identity, ReturningFlow), Completed> {
        if let Some(error) = callback.error {
            let code = error_code(error);
            tracing::info!(provider = %provider.id, error = code, "the identity provider refused the sign-in");
            return Err(Completed::ProviderRefused { code: code.to_owned() });
        }
        let Some(flow) = flow else {
            tracing::info!(provider = %provider.id, "OIDC callback without a pending flow of this browser");
            return Err(Completed::UnknownFlow);
        };
        let (Some(secrets), Some(code)) = (FlowSecrets::from_bytes(&flow.secrets), callback.code) else {
            return Err(Completed::UnknownFlow);
        };
        match self.finish(provider, &secrets, code, callback.iss).await {
            Ok(identity) => Ok((identity, flow)),
            Err(e) => Err(Completed::Failed(e)),
        }
    }
}

/// The provider's `error` as shown and logged: only if it looks like a code (RFC 6749:
/// `error` is ASCII), else `unknown`.
fn error_code(error: &str) -> &str {
    Some(error)
        .filter(|e| e.len() <= 64 && e.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
        .unwrap_or("unknown")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_error_that_looks_like_a_code_is_shown() {
        assert_eq!(error_code("access_denied"), "access_denied");
        assert_eq!(error_code(&"a".repeat(64)), "a".repeat(64));
        for other in ["access denied", "<script>", "a-b", "accès", &"a".repeat(65)] {
            assert_eq!(error_code(other), "unknown", "{other:?}");
        }
    }
}
