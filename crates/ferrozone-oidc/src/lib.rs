//! Ferrozone's OpenID Connect client: sign-in with the authorization-code flow (state,
//! nonce, PKCE S256) and the refresh of the tokens it leaves (docs/design/identity-providers.md,
//! "OpenID Connect"; docs/operations.md, "Identity providers").
//!
//! The protocol work (discovery, JWKS, ID-token validation, PKCE, token requests) is the
//! `openidconnect` crate's, a certified-grade implementation, over reqwest with rustls.
//! This crate decides what Ferrozone does with the answers: [`Oidc`] holds the configured
//! providers and their lazily discovered metadata, [`signin`] the two halves of a sign-in,
//! [`flow`] a browser's sign-in over the domain (flow, protocol, provider sign-in),
//! [`refresh`] one refresh and the meaning of its failures, and [`job`] the background pass
//! over every stored connection.

mod discovery;
pub mod flow;
mod groups;
pub mod job;
pub mod refresh;
pub mod signin;

use std::time::Duration;

use ferrozone_domain::group_sync::GroupClaims;
use ferrozone_domain::providers::OidcProviderConfig;
use openidconnect::reqwest;
use zeroize::Zeroizing;

pub use discovery::{Discovery, RETRY_AFTER_FAILURE};
pub use flow::{Begun, Callback, Completed};
pub use job::{PassReport, RefreshJob};
pub use refresh::RefreshOutcome;
pub use signin::{FlowSecrets, Identity, SignInError};

/// One configured OpenID Connect provider, as the client needs it.
#[derive(Clone)]
pub struct Provider {
    /// Ferrozone's name for it: in URLs and in `last_signed_in_method`.
    pub id: String,
    pub client_id: String,
    pub client_secret: Zeroizing<String>,
    /// The provider's `…/.well-known/openid-configuration`.
    pub discovery_document_uri: String,
    /// Space-separated scopes; `openid` is always sent.
    pub scope: String,
    /// Where the provider sends the browser back: `…/auth/oidc/{id}/callback/` by default.
    pub redirect_uri: String,
    pub auto_create_users: bool,
    /// Whether it may sign admins in.
    pub allow_admins: bool,
    /// Whether a sign-in needs `email_verified: true` (else only `false` refuses).
    pub require_verified_email: bool,
    /// Whether `prompt=consent` goes with an `offline_access` scope.
    pub consent_prompt: bool,
    /// Where the user's groups are read and which are kept.
    pub groups: GroupClaims,
}

impl Provider {
    /// Whether the scope asks for a refresh token (`offline_access`).
    pub fn wants_offline_access(&self) -> bool {
        self.scope.split_whitespace().any(|s| s == "offline_access")
    }
}

impl Provider {
    /// The provider as configured, its redirect URI defaulting to
    /// `{external_url}/auth/oidc/{id}/callback/` (Firezone's default).
    pub fn from_config(config: &OidcProviderConfig, external_url: &str) -> Self {
        let redirect_uri = config
            .redirect_uri
            .clone()
            .unwrap_or_else(|| format!("{}/auth/oidc/{}/callback/", external_url.trim_end_matches('/'), config.id));
        Self {
            id: config.id.clone(),
            client_id: config.client_id.clone(),
            client_secret: config.client_secret.clone(),
            discovery_document_uri: config.discovery_document_uri.clone(),
            scope: config.scope.clone(),
            redirect_uri,
            auto_create_users: config.auto_create_users,
            allow_admins: config.allow_admins,
            require_verified_email: config.require_verified_email,
            consent_prompt: config.consent_prompt,
            groups: config.groups.clone(),
        }
    }
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider")
            .field("id", &self.id)
            .field("client_id", &self.client_id)
            .field("discovery_document_uri", &self.discovery_document_uri)
            .field("redirect_uri", &self.redirect_uri)
            .finish_non_exhaustive()
    }
}

/// How long a request to a provider may take, connecting included.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The configured providers and one HTTP client for all of them.
pub struct Oidc {
    providers: Vec<Provider>,
    http: reqwest::Client,
    discovery: Discovery,
    /// Providers already logged for a sign-in without the refresh token the scope asked for.
    warned: std::sync::Mutex<std::collections::HashSet<String>>,
}

impl std::fmt::Debug for Oidc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Oidc").field("providers", &self.providers).finish_non_exhaustive()
    }
}

impl Oidc {
    /// Nothing is fetched here: a provider is discovered on first use, so a provider that is
    /// down does not stop Ferrozone from starting.
    pub fn new(providers: Vec<Provider>) -> Self {
        let builder = || {
            reqwest::ClientBuilder::new()
                // Following redirects from a token endpoint would be a way to make Ferrozone
                // send its client secret elsewhere.
                .redirect(reqwest::redirect::Policy::none())
                .timeout(REQUEST_TIMEOUT)
                .connect_timeout(CONNECT_TIMEOUT)
        };
        // Building fails only on a proxy setting reqwest cannot read; do without proxies then.
        let http = builder().build().unwrap_or_else(|e| {
            tracing::warn!(error = %e, "the HTTP client for identity providers ignores the proxy settings");
            builder().no_proxy().build().unwrap_or_default()
        });
        Self { providers, http, discovery: Discovery::default(), warned: Default::default() }
    }

    /// The configured OpenID Connect providers of `configs`.
    pub fn from_configs(configs: &[OidcProviderConfig], external_url: &str) -> Self {
        Self::new(configs.iter().map(|c| Provider::from_config(c, external_url)).collect())
    }

    pub fn provider(&self, id: &str) -> Option<&Provider> {
        self.providers.iter().find(|p| p.id == id)
    }

    pub fn providers(&self) -> &[Provider] {
        &self.providers
    }

    pub(crate) fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// Logs, once per provider and process, that a sign-in brought no refresh token
    /// although the scope asked for one: its users are not checked between sign-ins.
    /// Returns whether it logged.
    pub(crate) fn no_refresh_token(&self, provider: &Provider) -> bool {
        let mut warned = self.warned.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let first = warned.insert(provider.id.clone());
        if first {
            tracing::warn!(
                provider = %provider.id,
                consent_prompt = provider.consent_prompt,
                "an OIDC sign-in brought no refresh token although the scope has offline_access: \
                 the refresh job cannot check this provider's users (see docs/operations.md)"
            );
        }
        first
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(redirect_uri: Option<&str>) -> OidcProviderConfig {
        OidcProviderConfig {
            id: "corp".into(),
            label: "Corp".into(),
            client_id: "client".into(),
            client_secret: Zeroizing::new("secret".into()),
            discovery_document_uri: "https://idp.example/.well-known/openid-configuration".into(),
            scope: "openid email".into(),
            redirect_uri: redirect_uri.map(str::to_owned),
            auto_create_users: false,
            allow_admins: true,
            require_verified_email: false,
            consent_prompt: true,
            groups: ferrozone_domain::group_sync::GroupClaims::reading("groups"),
        }
    }

    #[test]
    fn the_redirect_uri_defaults_to_firezones_callback_path() {
        let provider = Provider::from_config(&config(None), "https://vpn.example/");
        assert_eq!(provider.redirect_uri, "https://vpn.example/auth/oidc/corp/callback/");
        let custom = Provider::from_config(&config(Some("https://other.example/cb")), "https://vpn.example");
        assert_eq!(custom.redirect_uri, "https://other.example/cb");
        assert!(!format!("{provider:?}").contains("secret"), "no secret in Debug");
    }

    #[test]
    fn a_missing_refresh_token_is_logged_once_per_provider() {
        let mut other = config(None);
        other.id = "other".into();
        let oidc = Oidc::from_configs(&[config(None), other], "https://vpn.example");
        let (corp, other) = (&oidc.providers()[0], &oidc.providers()[1]);
        assert!(oidc.no_refresh_token(corp));
        assert!(!oidc.no_refresh_token(corp), "once");
        assert!(oidc.no_refresh_token(other), "per provider");
    }
}
