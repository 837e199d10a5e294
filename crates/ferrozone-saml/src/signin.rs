//! The service provider's sign-in (docs/design/identity-providers.md, "SAML"), SP-initiated: what
//! Ferrozone does with the protocol modules and its domain. The HTTP layer parses each
//! request, calls one of [`SamlSp`]'s steps and answers with a page; no HTTP type is here.
//!
//! The IdP posts the response cross-site, so the browser's `SameSite=Lax` flow cookie is not
//! sent to the consumer. [`SamlSp::consume`] therefore takes the flow by its RelayState
//! (one-time: a replayed response finds none), verifies the response against the request id
//! the flow kept, and stores the verified email in a second one-time flow that remembers the
//! first flow's state ([`FlowState`]); the browser then goes on, by a same-site top-level
//! GET that does carry the flow cookie, to [`SamlSp::finish`]. Only there, and only when that
//! cookie holds the first flow's state, is the session created: a response cannot sign in a
//! browser that did not start the flow.

mod flow;
mod gate;

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

use chrono::Utc;
use ferrozone_domain::providers::{ProviderPolicy, SamlProviderConfig};
use ferrozone_domain::service::providers::{ProviderIdentity, ProviderSignInEnd};
use ferrozone_domain::{Domain, DomainError};
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

pub use self::flow::FlowState;
use self::gate::Gate;
pub use self::gate::{SamlLimits, DEFAULT_BODY_LIMIT};
use crate::{
    decode_post_response, new_request_id, sign_metadata, sp_metadata, verify_response, AuthnRequest, Error, Expected,
    IdpMetadata, Outgoing, SpKeyPair, Verified,
};

/// Ferrozone's SP entity id unless `FERROZONE_SAML_ENTITY_ID` says otherwise: Firezone
/// 0.x's default, so IdPs configured for it keep working.
pub const DEFAULT_ENTITY_ID: &str = "urn:firezone.dev:firezone-app";

/// The SAML service provider: its entity id, its key pair (for signing requests), each
/// configured IdP with its parsed metadata, and the assertion consumer's limits.
#[derive(Debug)]
pub struct SamlSp {
    entity_id: String,
    keys: Option<Arc<SpKeyPair>>,
    providers: HashMap<String, SamlProvider>,
    body_limit: usize,
    gate: Gate,
}

/// One configured IdP, its metadata parsed.
#[derive(Debug)]
pub struct SamlProvider {
    config: SamlProviderConfig,
    idp: Arc<IdpMetadata>,
}

impl SamlProvider {
    pub fn config(&self) -> &SamlProviderConfig {
        &self.config
    }
}

/// What starting a sign-in came to.
pub enum Started {
    /// Send the browser to the IdP; `state` (the flow's, and the request's RelayState) is
    /// what binds the flow to the browser.
    ToIdp { state: Zeroizing<String>, outgoing: Outgoing },
    /// The browser's address started too many sign-ins: nothing was stored.
    TooMany,
    /// The request could not be made (signed or deflated): it is never sent unsigned or empty.
    NotMade(Error),
}

/// What the assertion consumer made of a response.
pub enum Consumed {
    /// Verified: the browser goes on to the finish step with this (second flow's) `state`.
    Verified { state: Zeroizing<String> },
    /// As many responses as allowed are being verified or waiting; the flow is untouched,
    /// so the same response can be posted again.
    Busy,
    /// No pending flow has this RelayState (replayed, expired, unsolicited).
    UnknownFlow,
    /// The response failed verification (logged): why, and the flow's `return_to` (a test
    /// sign-in shows the reason to the administrator who ran it).
    Refused { reason: String, return_to: String },
}

/// What the finish step came to.
pub enum Finished {
    /// The provider sign-in's end, for the verified email.
    Done(Box<ProviderSignInEnd>),
    /// No such pending flow, or it was started in another browser.
    UnknownFlow,
}

/// A verified response's flow, taken in the browser that started it: the email the IdP
/// proved, and where the flow was to end.
pub struct VerifiedFlow {
    pub email: String,
    /// Every value of the assertion's groups attribute; `None`: groups are not read.
    pub groups: Option<Vec<String>>,
    pub return_to: String,
}

impl Default for SamlSp {
    fn default() -> Self {
        let limits = SamlLimits::default();
        Self {
            entity_id: DEFAULT_ENTITY_ID.to_owned(),
            keys: None,
            providers: HashMap::new(),
            body_limit: limits.body_limit,
            gate: Gate::new(limits.concurrency),
        }
    }
}

impl SamlSp {
    /// Checks the SAML configuration: `key_pair` is the PEM texts of the SP key and its
    /// certificate; each provider's metadata must parse (entity id, an HTTP-Redirect SSO
    /// URL, a signing certificate), and a provider that signs requests needs the key pair.
    /// Errors name the setting, the provider and the field.
    pub fn new(
        entity_id: &str,
        key_pair: Option<(&str, &str)>,
        providers: &[SamlProviderConfig],
    ) -> Result<Self, String> {
        let entity_id = entity_id.trim();
        if entity_id.is_empty() {
            return Err("FERROZONE_SAML_ENTITY_ID: must not be empty".into());
        }
        let keys = key_pair
            .map(|(key, certificate)| SpKeyPair::from_pem(key, certificate))
            .transpose()
            .map_err(|e| format!("FERROZONE_SAML_KEYFILE / FERROZONE_SAML_CERTFILE: {e}"))?;
        let keys = keys.map(Arc::new);
        let parsed = parse_providers(providers, keys.is_some())?;
        Ok(Self { entity_id: entity_id.to_owned(), keys, providers: parsed, ..Self::default() })
    }

    /// This SP (its entity id, key pair and limits; the same verification queue) with
    /// `providers` instead of its own, checked as [`SamlSp::new`] checks them.
    pub fn with_providers(&self, providers: &[SamlProviderConfig]) -> Result<Self, String> {
        Ok(Self {
            entity_id: self.entity_id.clone(),
            keys: self.keys.clone(),
            providers: parse_providers(providers, self.keys.is_some())?,
            body_limit: self.body_limit,
            gate: self.gate.clone(),
        })
    }
}

/// Each provider with its metadata parsed; errors name the setting, the provider and the field.
fn parse_providers(providers: &[SamlProviderConfig], have_keys: bool) -> Result<HashMap<String, SamlProvider>, String> {
    let mut parsed = HashMap::new();
    for config in providers {
        let name = format!("FERROZONE_SAML_IDENTITY_PROVIDERS: provider `{}`", config.id);
        let metadata = IdpMetadata::parse(&config.metadata).map_err(|e| match e {
            Error::Metadata(m) => format!("{name}: `metadata`: {m}"),
            other => format!("{name}: `metadata`: {other}"),
        })?;
        if config.sign_requests && !have_keys {
            return Err(format!(
                "{name}: `sign_requests` is true but no SP key is configured \
                 (set FERROZONE_SAML_KEYFILE and FERROZONE_SAML_CERTFILE)"
            ));
        }
        let provider = SamlProvider { config: config.clone(), idp: Arc::new(metadata) };
        parsed.entry(config.id.clone()).or_insert(provider);
    }
    Ok(parsed)
}

impl SamlSp {
    /// This SP with the assertion consumer's `limits` (else [`SamlLimits::default`]).
    #[must_use]
    pub fn with_limits(self, limits: SamlLimits) -> Self {
        Self { body_limit: limits.body_limit, gate: Gate::new(limits.concurrency), ..self }
    }

    /// Takes a place in the consumer's verification queue, as a response being verified
    /// does; `None` when it is full. For tests that fill it.
    #[doc(hidden)]
    pub fn hold_verification_place(&self) -> Option<impl Send> {
        self.gate.try_enter()
    }

    /// The configured IdP `id`.
    /// The service provider's entity ID, which identity providers are configured with.
    pub fn entity_id(&self) -> &str {
        &self.entity_id
    }

    pub fn provider(&self, id: &str) -> Option<&SamlProvider> {
        self.providers.get(id)
    }

    /// The largest response body the consumer reads, in bytes.
    pub fn body_limit(&self) -> usize {
        self.body_limit
    }

    /// Starts a sign-in with `provider` for the browser at `client`, to end at `return_to`
    /// (a local path): a one-time flow remembers the new AuthnRequest's id, and the request
    /// carries the flow's state as its RelayState. `external_url` is where Ferrozone is
    /// reached (without a trailing `/`).
    pub async fn start(
        &self,
        domain: &Domain,
        provider: &SamlProvider,
        return_to: &str,
        client: IpAddr,
        external_url: &str,
    ) -> Result<Started, DomainError> {
        let config = &provider.config;
        let request_id = new_request_id();
        let remembered = FlowState::Started { request_id: request_id.clone() }.encode();
        let Some(state) = domain.start_sign_in_flow(&config.id, &remembered, return_to, client).await? else {
            return Ok(Started::TooMany);
        };
        let signer = self.keys.as_deref().filter(|_| config.sign_requests);
        let acs_url = acs_url(config, external_url);
        let request =
            AuthnRequest::new(request_id, &provider.idp, &self.entity_id, &acs_url, &state, Utc::now(), signer);
        Ok(match request {
            Ok(request) => Started::ToIdp { state, outgoing: request.outgoing },
            Err(e) => Started::NotMade(e),
        })
    }

    /// The assertion consumer service: verifies the posted `SAMLResponse` (`encoded`) to the
    /// request of the flow named by `relay_state`, off the async workers and within the
    /// consumer's limits. A full queue answers [`Consumed::Busy`] before the flow is taken.
    /// IdP-initiated sign-in (no flow) is not supported: it cannot be bound to a request.
    pub async fn consume(
        &self,
        domain: &Domain,
        provider: &SamlProvider,
        relay_state: &str,
        encoded: String,
        external_url: &str,
    ) -> Result<Consumed, DomainError> {
        let config = &provider.config;
        let Some(admitted) = self.gate.try_enter() else {
            tracing::warn!(provider = %config.id, "SAML response refused: the verification queue is full");
            return Ok(Consumed::Busy);
        };
        let Some(flow) = domain.take_sign_in_flow(&config.id, relay_state).await? else {
            tracing::info!(provider = %config.id, "SAML response without a pending flow (replayed, expired or unsolicited)");
            return Ok(Consumed::UnknownFlow);
        };
        let Some(FlowState::Started { request_id }) = FlowState::decode(&flow.secrets) else {
            return Ok(Consumed::UnknownFlow);
        };
        let check = Check {
            idp: Arc::clone(&provider.idp),
            sp_entity_id: self.entity_id.clone(),
            acs_url: acs_url(config, external_url),
            request_id,
            require_signed_assertion: config.signed_assertion_in_resp,
            require_signed_response: config.signed_envelopes_in_resp,
            groups_attribute: config.groups.claim.clone(),
        };
        let running = admitted.run().await;
        let verified = tokio::task::spawn_blocking(move || {
            let _running = running;
            check.verify(&encoded)
        })
        .await
        .map_err(|e| DomainError::Internal(anyhow::anyhow!("SAML response verification failed: {e}")))?;
        let (email, groups) = match verified {
            Ok(verified) => (verified.email, verified.groups),
            Err(e) => {
                tracing::warn!(provider = %config.id, error = %e, "SAML sign-in refused");
                return Ok(Consumed::Refused { reason: e.to_string(), return_to: flow.return_to });
            }
        };
        let remembered = FlowState::Verified { started: relay_state.to_owned(), email, groups }.encode();
        let state = domain.begin_sign_in_flow(&config.id, &remembered, &flow.return_to).await?;
        Ok(Consumed::Verified { state })
    }

    /// Ends the sign-in whose verified flow is `state`, in the browser that started it only
    /// (its flow cookie, `flow_cookie`, holds the first flow's state): signs the email in
    /// under the provider's policy.
    pub async fn finish(
        &self,
        domain: &Domain,
        provider: &SamlProvider,
        state: &str,
        flow_cookie: Option<&str>,
    ) -> Result<Finished, DomainError> {
        match self.take_verified(domain, provider, state, flow_cookie).await? {
            Some(verified) => Ok(Finished::Done(Box::new(self.sign_in(domain, provider, verified).await?))),
            None => Ok(Finished::UnknownFlow),
        }
    }

    /// The verified flow `state`, taken in the browser that started it only (see
    /// [`Self::finish`]); `None` for an unknown flow or another browser. Signs nobody in: a
    /// test sign-in stops here.
    pub async fn take_verified(
        &self,
        domain: &Domain,
        provider: &SamlProvider,
        state: &str,
        flow_cookie: Option<&str>,
    ) -> Result<Option<VerifiedFlow>, DomainError> {
        let config = &provider.config;
        let Some(flow) = domain.take_sign_in_flow(&config.id, state).await? else {
            return Ok(None);
        };
        let Some(FlowState::Verified { started, email, groups }) = FlowState::decode(&flow.secrets) else {
            return Ok(None);
        };
        if !flow_cookie.is_some_and(|cookie| bool::from(cookie.as_bytes().ct_eq(started.as_bytes()))) {
            tracing::info!(provider = %config.id, "SAML sign-in finished in a browser that did not start it");
            return Ok(None);
        }
        Ok(Some(VerifiedFlow { email, groups, return_to: flow.return_to }))
    }

    /// Signs the verified email in under the provider's policy.
    pub async fn sign_in(
        &self,
        domain: &Domain,
        provider: &SamlProvider,
        verified: VerifiedFlow,
    ) -> Result<ProviderSignInEnd, DomainError> {
        let config = &provider.config;
        let policy = ProviderPolicy { auto_create_users: config.auto_create_users, allow_admins: config.allow_admins };
        let groups = verified.groups.map(|sent| config.groups.keep(sent.iter().map(String::as_str)));
        let identity = ProviderIdentity { email: verified.email, refresh_token: None, groups };
        let outcome = domain.sign_in_with_identity(&config.id, &identity, policy).await?;
        Ok(ProviderSignInEnd { outcome, email: identity.email, return_to: verified.return_to })
    }

    /// The SP metadata for `provider` to import: signed with the SP key when it asks for
    /// signed metadata and a key pair is configured (it is optional without `sign_requests`);
    /// an error, never unsigned metadata, when it cannot be signed.
    pub fn metadata(&self, provider: &SamlProvider, external_url: &str) -> Result<String, Error> {
        let config = &provider.config;
        let signing = self.keys.as_deref().filter(|_| config.sign_requests);
        let xml =
            sp_metadata(&self.entity_id, &acs_url(config, external_url), signing, config.signed_assertion_in_resp);
        match self.keys.as_deref().filter(|_| config.sign_metadata) {
            Some(pair) => sign_metadata(&xml, pair),
            None => Ok(xml),
        }
    }
}

/// The URL of this provider's SAML endpoints, as Firezone 0.x meant `base_url`: the
/// provider's `base_url` (the public URL of `/auth/saml`), else `{external URL}/auth/saml`.
fn saml_base(config: &SamlProviderConfig, external_url: &str) -> String {
    match config.base_url.as_deref() {
        Some(base) => base.trim_end_matches('/').to_owned(),
        None => format!("{external_url}/auth/saml"),
    }
}

fn acs_url(config: &SamlProviderConfig, external_url: &str) -> String {
    format!("{}/sp/consume/{}", saml_base(config, external_url), config.id)
}

/// What a response must match, owned: it goes to the blocking pool.
struct Check {
    idp: Arc<IdpMetadata>,
    sp_entity_id: String,
    acs_url: String,
    request_id: String,
    require_signed_assertion: bool,
    require_signed_response: bool,
    groups_attribute: Option<String>,
}

impl Check {
    /// Decodes and verifies the posted `SAMLResponse` field `encoded`.
    fn verify(&self, encoded: &str) -> Result<Verified, Error> {
        let expected = Expected {
            idp: &self.idp,
            sp_entity_id: &self.sp_entity_id,
            acs_url: &self.acs_url,
            request_id: &self.request_id,
            require_signed_assertion: self.require_signed_assertion,
            require_signed_response: self.require_signed_response,
            now: Utc::now(),
            groups_attribute: self.groups_attribute.as_deref(),
        };
        decode_post_response(encoded).and_then(|xml| verify_response(&xml, &expected))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(base_url: Option<&str>) -> SamlProviderConfig {
        SamlProviderConfig {
            id: "okta".into(),
            label: "Okta".into(),
            metadata: String::new(),
            sign_requests: false,
            sign_metadata: false,
            signed_assertion_in_resp: true,
            signed_envelopes_in_resp: true,
            auto_create_users: false,
            allow_admins: true,
            base_url: base_url.map(str::to_owned),
            groups: ferrozone_domain::group_sync::GroupClaims::reading("groups"),
        }
    }

    #[test]
    fn the_consumer_url_is_under_the_base_url_else_the_external_url() {
        assert_eq!(acs_url(&config(None), "https://vpn.example"), "https://vpn.example/auth/saml/sp/consume/okta");
        let based = config(Some("https://sso.example/auth/saml/"));
        assert_eq!(acs_url(&based, "https://vpn.example"), "https://sso.example/auth/saml/sp/consume/okta");
    }

    #[test]
    fn configuration_errors_name_the_setting_and_the_provider() {
        assert!(SamlSp::new(" ", None, &[]).unwrap_err().contains("FERROZONE_SAML_ENTITY_ID"));
        let error = SamlSp::new(DEFAULT_ENTITY_ID, None, &[config(None)]).unwrap_err();
        assert!(error.starts_with("FERROZONE_SAML_IDENTITY_PROVIDERS: provider `okta`: `metadata`: "), "{error}");
        assert!(SamlSp::new(DEFAULT_ENTITY_ID, None, &[]).unwrap().provider("okta").is_none());
    }
}
