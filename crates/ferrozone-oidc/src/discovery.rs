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

use ferrozone_domain::error::error_chain;

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

/// How long a failed discovery is answered from memory before the provider is asked again:
/// while a provider is down, sign-in starts cost it (and Ferrozone) one request per
/// this many seconds, not one each.
pub const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(5);

/// The end of a discovery URL; what comes before it is the issuer (OpenID Connect
/// Discovery 1.0, section 4).
const WELL_KNOWN: &str = "/.well-known/openid-configuration";

/// The discovered clients, by provider id. One discovery per provider is in flight at a
/// time: callers that come meanwhile wait for its outcome (single-flight), a failure
/// included, which is kept for [`RETRY_AFTER_FAILURE`].
#[derive(Default)]
pub struct Discovery {
    slots: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Slot>>>>,
}

/// One provider's last discovery: the client it gave, and the latest failure since.
#[derive(Default)]
struct Slot {
    kept: Option<(Instant, Arc<Discovered>)>,
    failed: Option<(Instant, String)>,
}

impl Discovery {
    fn slot(&self, provider_id: &str) -> Arc<tokio::sync::Mutex<Slot>> {
        let mut slots = self.slots.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        slots.entry(provider_id.to_owned()).or_default().clone()
    }
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
    /// anyway, for keys the provider rotated since, unless another caller fetched them
    /// while this one waited). A failure within [`RETRY_AFTER_FAILURE`] is answered as is.
    pub(crate) async fn client(&self, provider: &Provider, refetch: bool) -> Result<Arc<Discovered>, DiscoveryFailed> {
        let asked = Instant::now();
        let slot = self.discovery.slot(&provider.id);
        let mut slot = slot.lock().await;
        if let Some((at, client)) = &slot.kept {
            if (!refetch && at.elapsed() < FRESH_FOR) || (refetch && *at >= asked) {
                return Ok(client.clone());
            }
        }
        let failed = |reason: String| DiscoveryFailed { provider: provider.id.clone(), reason };
        if let Some((at, reason)) = &slot.failed {
            if at.elapsed() < RETRY_AFTER_FAILURE {
                return Err(failed(format!(
                    "{reason} (kept from an attempt under {}s ago)",
                    RETRY_AFTER_FAILURE.as_secs()
                )));
            }
        }
        match self.discover(provider).await {
            Ok(client) => {
                let client = Arc::new(client);
                (slot.kept, slot.failed) = (Some((Instant::now(), client.clone())), None);
                Ok(client)
            }
            Err(reason) => {
                tracing::warn!(provider = %provider.id, %reason, "OpenID Connect discovery failed");
                slot.failed = Some((Instant::now(), reason.clone()));
                Err(failed(reason))
            }
        }
    }

    async fn discover(&self, provider: &Provider) -> Result<Discovered, String> {
        let uri = &provider.discovery_document_uri;
        let expected_issuer =
            uri.strip_suffix(WELL_KNOWN).ok_or_else(|| format!("{uri} does not end with {WELL_KNOWN}"))?;
        let response = self
            .http()
            .get(uri)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| format!("{uri} did not answer: {}", error_chain(&e)))?;
        if !response.status().is_success() {
            return Err(format!("{uri} answered {}", response.status()));
        }
        let body = response.bytes().await.map_err(|e| format!("reading the discovery document: {e}"))?;
        let metadata: CoreProviderMetadata =
            serde_json::from_slice(&body).map_err(|e| format!("the discovery document is invalid: {e}"))?;
        let issuer = metadata.issuer().as_str().to_owned();
        check_issuer(&issuer, expected_issuer)?;
        let jwks = JsonWebKeySet::fetch_async(metadata.jwks_uri(), self.http())
            .await
            .map_err(|e| format!("fetching the signing keys failed: {}", error_chain(&e)))?;
        let metadata = metadata.set_jwks(jwks);
        let redirect = RedirectUrl::new(provider.redirect_uri.clone()).map_err(|e| format!("redirect_uri: {e}"))?;
        let secret = ClientSecret::new(provider.client_secret.to_string());
        let client =
            CoreClient::from_provider_metadata(metadata, ClientId::new(provider.client_id.clone()), Some(secret))
                .set_redirect_uri(redirect);
        Ok(Discovered { client, issuer })
    }
}

/// The issuer a discovery document names must be the one its URL was built from (OpenID
/// Connect Discovery 1.0, section 4.3), which drops one terminating `/` of the issuer.
fn check_issuer(named: &str, expected: &str) -> Result<(), String> {
    if named.strip_suffix('/').unwrap_or(named) == expected {
        Ok(())
    } else {
        Err(format!("the discovery document names the issuer `{named}`, not `{expected}`"))
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;
    use zeroize::Zeroizing;

    use super::*;

    fn provider(discovery_document_uri: String) -> Provider {
        Provider {
            id: "corp".into(),
            client_id: "client".into(),
            client_secret: Zeroizing::new("secret".into()),
            discovery_document_uri,
            scope: "openid email".into(),
            redirect_uri: "http://127.0.0.1:9/callback".into(),
            auto_create_users: false,
            allow_admins: true,
            require_verified_email: false,
            consent_prompt: true,
            groups: ferrozone_domain::group_sync::GroupClaims::reading("groups"),
        }
    }

    #[tokio::test]
    async fn one_discovery_per_provider_is_in_flight_and_its_failure_is_kept() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let uri = format!("http://{}{WELL_KNOWN}", listener.local_addr().unwrap());
        let accepted = Arc::new(AtomicUsize::new(0));
        let release = Arc::new(tokio::sync::Notify::new());
        // Accepts and never answers; the first connection is closed on `release`.
        let (counter, closing) = (accepted.clone(), release.clone());
        let server = tokio::spawn(async move {
            let mut held = Vec::new();
            loop {
                tokio::select! {
                    Ok((socket, _)) = listener.accept() => {
                        counter.fetch_add(1, Ordering::SeqCst);
                        held.push(socket);
                    }
                    () = closing.notified() => held.clear(),
                }
            }
        });
        let oidc = Arc::new(Oidc::new(vec![provider(uri)]));
        let mut starts = tokio::task::JoinSet::new();
        for _ in 0..50 {
            let oidc = oidc.clone();
            starts.spawn(async move { oidc.ready(&oidc.providers()[0]).await });
        }
        while accepted.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Time for every start to reach the provider's discovery (they find it in flight).
        tokio::time::sleep(Duration::from_millis(300)).await;
        release.notify_one();
        let results = starts.join_all().await;
        assert!(results.iter().all(Result::is_err), "the provider never answered");
        assert_eq!(accepted.load(Ordering::SeqCst), 1, "50 concurrent starts, one connection");
        let again = oidc.ready(&oidc.providers()[0]).await;
        let Err(crate::SignInError::Unavailable(reason)) = again else { panic!("the failure is kept") };
        assert!(reason.contains("kept from an attempt"), "{reason}");
        assert_eq!(accepted.load(Ordering::SeqCst), 1, "and answered without asking the provider");
        server.abort();
    }

    /// Serves a discovery document naming `issuer` (`{base}`: the server's own URL) and an
    /// empty key set, to any number of requests; returns the server's URL.
    async fn provider_naming(issuer: &'static str) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let document = serde_json::json!({
            "issuer": issuer.replace("{base}", &base),
            "authorization_endpoint": format!("{base}/authorize"),
            "token_endpoint": format!("{base}/token"),
            "jwks_uri": format!("{base}/jwks"),
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
        })
        .to_string();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let document = document.clone();
                tokio::spawn(async move {
                    let mut request = vec![0; 4096];
                    let read = socket.read(&mut request).await.unwrap_or(0);
                    let head = String::from_utf8_lossy(&request[..read]).into_owned();
                    let body = if head.starts_with("GET /jwks ") { r#"{"keys":[]}"#.to_owned() } else { document };
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = socket.write_all(answer.as_bytes()).await;
                });
            }
        });
        base
    }

    async fn discovered(discovery_document_uri: String) -> Result<(), String> {
        let oidc = Oidc::new(vec![provider(discovery_document_uri)]);
        oidc.client(&oidc.providers()[0], false).await.map(|_| ()).map_err(|e| e.reason)
    }

    #[tokio::test]
    async fn the_discovery_document_must_name_the_issuer_its_url_was_built_from() {
        for honest in ["{base}", "{base}/"] {
            let base = provider_naming(honest).await;
            assert_eq!(discovered(format!("{base}{WELL_KNOWN}")).await, Ok(()), "{honest}");
        }
        for liar in ["https://accounts.example", "{base}/other", "{base}//"] {
            let base = provider_naming(liar).await;
            let reason = discovered(format!("{base}{WELL_KNOWN}")).await.unwrap_err();
            assert!(reason.contains("names the issuer"), "{liar}: {reason}");
        }
        let base = provider_naming("{base}").await;
        let reason = discovered(format!("{base}/discovery.json")).await.unwrap_err();
        assert!(reason.contains("does not end with /.well-known/openid-configuration"), "{reason}");
    }
}
