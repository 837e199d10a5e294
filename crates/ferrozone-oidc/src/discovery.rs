//! Provider metadata and signing keys, fetched on first use and kept for a while. A failed
//! fetch is not kept: the next sign-in or refresh tries again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use openidconnect::core::{CoreClient, CoreProviderMetadata};
use openidconnect::{
    reqwest, ClientId, ClientSecret, EndpointMaybeSet, EndpointNotSet, EndpointSet, ErrorResponse, JsonWebKeySet,
    RedirectUrl, RequestTokenError, UserInfoError,
};

use crate::{Oidc, Provider};

/// A client with the provider's endpoints and keys.
pub(crate) type ReadyClient =
    CoreClient<EndpointSet, EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointMaybeSet, EndpointMaybeSet>;

/// A provider's client and the issuer its discovery document named.
pub(crate) struct Discovered {
    client: ReadyClient,
    pub issuer: String,
}

impl std::ops::Deref for Discovered {
    type Target = ReadyClient;

    fn deref(&self) -> &ReadyClient {
        &self.client
    }
}

/// How long discovered metadata and keys are used before they are fetched again.
const FRESH_FOR: Duration = Duration::from_secs(3600);

/// The discovered clients, by provider id.
#[derive(Default)]
pub struct Discovery {
    clients: Mutex<HashMap<String, (Instant, Arc<Discovered>)>>,
}

/// Why a provider could not be discovered: it did not answer, or answered nonsense. Both
/// are the provider's trouble, never the user's.
#[derive(Debug, thiserror::Error)]
#[error("discovery of provider `{provider}` failed: {reason}")]
pub struct DiscoveryFailed {
    pub provider: String,
    pub reason: String,
}

impl Oidc {
    /// The provider's client, discovered now unless a fresh one is kept (`refetch`: fetch
    /// anyway, for keys the provider rotated since).
    pub(crate) async fn client(&self, provider: &Provider, refetch: bool) -> Result<Arc<Discovered>, DiscoveryFailed> {
        if !refetch {
            let kept = self.discovery.clients.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some((at, client)) = kept.get(&provider.id) {
                if at.elapsed() < FRESH_FOR {
                    return Ok(client.clone());
                }
            }
        }
        let client = Arc::new(self.discover(provider).await.map_err(|reason| {
            tracing::warn!(provider = %provider.id, %reason, "OpenID Connect discovery failed");
            DiscoveryFailed { provider: provider.id.clone(), reason }
        })?);
        let mut kept = self.discovery.clients.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        kept.insert(provider.id.clone(), (Instant::now(), client.clone()));
        Ok(client)
    }

    async fn discover(&self, provider: &Provider) -> Result<Discovered, String> {
        let response = self
            .http()
            .get(&provider.discovery_document_uri)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| format!("{} did not answer: {}", provider.discovery_document_uri, error_chain(&e)))?;
        if !response.status().is_success() {
            return Err(format!("{} answered {}", provider.discovery_document_uri, response.status()));
        }
        let body = response.bytes().await.map_err(|e| format!("reading the discovery document: {e}"))?;
        let metadata: CoreProviderMetadata =
            serde_json::from_slice(&body).map_err(|e| format!("the discovery document is invalid: {e}"))?;
        let jwks = JsonWebKeySet::fetch_async(metadata.jwks_uri(), self.http())
            .await
            .map_err(|e| format!("fetching the signing keys failed: {}", error_chain(&e)))?;
        let issuer = metadata.issuer().to_string();
        let metadata = metadata.set_jwks(jwks);
        let redirect = RedirectUrl::new(provider.redirect_uri.clone()).map_err(|e| format!("redirect_uri: {e}"))?;
        let secret = ClientSecret::new(provider.client_secret.to_string());
        let client =
            CoreClient::from_provider_metadata(metadata, ClientId::new(provider.client_id.clone()), Some(secret))
                .set_redirect_uri(redirect);
        Ok(Discovered { client, issuer })
    }
}

/// A failed token request, told without anything the answer carried: a parse error's text
/// may quote the answer, which may hold tokens, so only its kind is said.
pub(crate) fn describe_token_error<RE, T>(error: &RequestTokenError<RE, T>) -> String
where
    RE: std::error::Error + 'static,
    T: ErrorResponse + 'static,
{
    match error {
        RequestTokenError::Request(cause) => error_chain(cause),
        RequestTokenError::Parse(..) => "an answer that is not OAuth JSON".to_owned(),
        RequestTokenError::Other(text) => text.clone(),
        RequestTokenError::ServerResponse(_) => "an OAuth error answer".to_owned(),
    }
}

/// A failed userinfo request, told the same way (its claims are nobody's business here).
pub(crate) fn describe_userinfo_error<RE: std::error::Error + 'static>(error: &UserInfoError<RE>) -> String {
    match error {
        UserInfoError::Request(cause) => error_chain(cause),
        UserInfoError::Response(status, _, text) => format!("{status}: {text}"),
        UserInfoError::ClaimsVerification(e) => e.to_string(),
        UserInfoError::Parse(_) => "an answer that is not userinfo JSON".to_owned(),
        _ => "an unexpected answer".to_owned(),
    }
}

/// An error and its causes on one line (reqwest puts "connection refused" in a source).
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
