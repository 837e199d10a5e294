//! The two halves of a sign-in: the authorization URL (with the secrets the callback will
//! need) and the callback's code exchange and ID-token validation.

use openidconnect::core::{CoreAuthPrompt, CoreAuthenticationFlow, CoreErrorResponseType, CoreUserInfoClaims};
use openidconnect::{
    AccessTokenHash, AuthorizationCode, ClaimsVerificationError, CsrfToken, Nonce, OAuth2TokenResponse,
    PkceCodeChallenge, PkceCodeVerifier, RequestTokenError, Scope, SignatureVerificationError, TokenResponse,
};
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use crate::discovery::{describe_token_error, describe_userinfo_error, DiscoveryFailed};
use crate::{Oidc, Provider};

/// What the callback needs and only the server may know: the nonce the ID token must carry
/// and the PKCE verifier. Stored sealed with the one-time sign-in flow.
#[derive(Serialize, Deserialize)]
pub struct FlowSecrets {
    nonce: String,
    pkce_verifier: String,
}

impl FlowSecrets {
    /// Fresh random secrets.
    pub fn new() -> Self {
        let (_, verifier) = PkceCodeChallenge::new_random_sha256();
        Self { nonce: Nonce::new_random().secret().clone(), pkce_verifier: verifier.secret().clone() }
    }

    pub fn to_bytes(&self) -> Zeroizing<Vec<u8>> {
        Zeroizing::new(serde_json::to_vec(self).unwrap_or_default())
    }

    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        serde_json::from_slice(bytes).ok()
    }
}

impl Default for FlowSecrets {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for FlowSecrets {
    fn drop(&mut self) {
        use zeroize::Zeroize;
        self.nonce.zeroize();
        self.pkce_verifier.zeroize();
    }
}

/// Who signed in, as the provider vouches.
pub struct Identity {
    pub email: String,
    pub subject: String,
    /// For the refresh job, when the provider gave one.
    pub refresh_token: Option<Zeroizing<String>>,
    /// The groups the provider says the user is in, filtered (`None`: not read, or the
    /// userinfo endpoint failed).
    pub groups: Option<Vec<String>>,
}

/// Why a callback did not sign anyone in.
#[derive(Debug, thiserror::Error)]
pub enum SignInError {
    /// The provider could not be reached or answered with a server error: try later.
    #[error("the identity provider is unavailable: {0}")]
    Unavailable(String),
    /// The provider's answer failed a check (the code, the ID token): refuse.
    #[error("the identity provider's answer was refused: {0}")]
    Refused(String),
    /// The provider said the email is not verified.
    #[error("the email is not verified by the identity provider")]
    UnverifiedEmail,
    /// Neither the ID token nor the userinfo endpoint had an email.
    #[error("the identity provider gave no email")]
    NoEmail,
}

impl From<DiscoveryFailed> for SignInError {
    fn from(e: DiscoveryFailed) -> Self {
        Self::Unavailable(e.to_string())
    }
}

impl Oidc {
    /// Discovers the provider now (if not already): done before a flow is stored, so that a
    /// provider that is down is a clear page, not a redirect to nowhere.
    pub async fn ready(&self, provider: &Provider) -> Result<(), SignInError> {
        self.client(provider, false).await?;
        Ok(())
    }

    /// The provider's authorization URL for this flow: code flow, `state`, the nonce and the
    /// PKCE S256 challenge of `secrets`, the configured scopes.
    pub async fn authorization_url(
        &self,
        provider: &Provider,
        state: &str,
        secrets: &FlowSecrets,
    ) -> Result<String, SignInError> {
        let client = self.client(provider, false).await?;
        let verifier = PkceCodeVerifier::new(secrets.pkce_verifier.clone());
        let challenge = PkceCodeChallenge::from_code_verifier_sha256(&verifier);
        let (state, nonce) = (state.to_owned(), secrets.nonce.clone());
        let mut request = client
            .authorize_url(
                CoreAuthenticationFlow::AuthorizationCode,
                move || CsrfToken::new(state),
                move || Nonce::new(nonce),
            )
            .set_pkce_challenge(challenge);
        for scope in provider.scope.split_whitespace().filter(|s| *s != "openid") {
            request = request.add_scope(Scope::new(scope.to_owned()));
        }
        // OpenID Connect Core 1.0, section 11: `offline_access` is honoured only with a
        // consent prompt, and strict providers issue no refresh token without one.
        if provider.consent_prompt && provider.wants_offline_access() {
            request = request.add_prompt(CoreAuthPrompt::Consent);
        }
        let (url, _, _) = request.url();
        Ok(url.to_string())
    }

    /// Exchanges the callback's `code` (with the PKCE verifier) and validates the ID token:
    /// signature, issuer, audience (this client), expiry, nonce, and the access-token hash
    /// when there is one. The email comes from the ID token, else from the userinfo
    /// endpoint; an `email_verified` of false refuses, and so does a missing one when the
    /// provider has `require_verified_email`. `iss` is the callback's `iss`
    /// parameter (RFC 9207) when the provider sends one: it must name this provider, so that
    /// an answer of another provider is never taken for this one's.
    pub async fn finish(
        &self,
        provider: &Provider,
        secrets: &FlowSecrets,
        code: &str,
        iss: Option<&str>,
    ) -> Result<Identity, SignInError> {
        let client = self.client(provider, false).await?;
        if iss.is_some_and(|iss| iss != client.issuer) {
            return Err(SignInError::Refused("the callback's `iss` names another issuer".into()));
        }
        let exchange = client
            .exchange_code(AuthorizationCode::new(code.to_owned()))
            .map_err(|e| SignInError::Unavailable(format!("the provider has no token endpoint: {e}")))?
            .set_pkce_verifier(PkceCodeVerifier::new(secrets.pkce_verifier.clone()));
        let tokens = exchange.request_async(self.http()).await.map_err(|e| match e {
            RequestTokenError::ServerResponse(answer) => {
                let code = answer.error();
                let transient = matches!(code, CoreErrorResponseType::Extension(c) if c == "temporarily_unavailable" || c == "server_error");
                let text = format!("the token endpoint refused the code: {}", code.as_ref());
                if transient { SignInError::Unavailable(text) } else { SignInError::Refused(text) }
            }
            other => SignInError::Unavailable(format!("the token endpoint failed: {}", describe_token_error(&other))),
        })?;
        let id_token = tokens.id_token().ok_or_else(|| SignInError::Refused("no ID token in the answer".into()))?;
        let nonce = Nonce::new(secrets.nonce.clone());
        let first = id_token.claims(&client.id_token_verifier(), &nonce).map(|_| ());
        // A key the provider rotated in since discovery: fetch the keys again, once.
        let client = match first {
            Err(ClaimsVerificationError::SignatureVerification(SignatureVerificationError::NoMatchingKey)) => {
                self.client(provider, true).await?
            }
            _ => client,
        };
        let checked = id_token.claims(&client.id_token_verifier(), &nonce);
        let claims = checked.map_err(|e| SignInError::Refused(format!("invalid ID token: {e}")))?;
        if let Some(expected) = claims.access_token_hash() {
            let verifier = client.id_token_verifier();
            let actual = id_token
                .signing_alg()
                .and_then(|alg| Ok((alg, id_token.signing_key(&verifier)?)))
                .ok()
                .and_then(|(alg, key)| AccessTokenHash::from_token(tokens.access_token(), alg, key).ok());
            if actual.as_ref() != Some(expected) {
                return Err(SignInError::Refused("invalid ID token: at_hash does not match".into()));
            }
        }
        let (subject, email, verified) =
            (claims.subject().clone(), claims.email().map(|e| e.to_string()), claims.email_verified());
        let (email, verified) = match email {
            Some(email) => (email, verified),
            None => {
                let info: CoreUserInfoClaims = client
                    .user_info(tokens.access_token().clone(), Some(subject.clone()))
                    .map_err(|_| SignInError::NoEmail)?
                    .request_async(self.http())
                    .await
                    .map_err(|e| {
                        SignInError::Unavailable(format!(
                            "the userinfo endpoint failed: {}",
                            describe_userinfo_error(&e)
                        ))
                    })?;
                (info.email().map(|e| e.to_string()).ok_or(SignInError::NoEmail)?, info.email_verified())
            }
        };
        if verified == Some(false) || (provider.require_verified_email && verified != Some(true)) {
            return Err(SignInError::UnverifiedEmail);
        }
        let refresh_token = tokens.refresh_token().map(|t| Zeroizing::new(t.secret().clone()));
        if refresh_token.is_none() && provider.wants_offline_access() {
            let _logged = self.no_refresh_token(provider);
        }
        let id_token_text = id_token.to_string();
        let groups = self.groups(provider, &client, Some(&id_token_text), tokens.access_token()).await;
        Ok(Identity { email, subject: subject.to_string(), refresh_token, groups })
    }
}
