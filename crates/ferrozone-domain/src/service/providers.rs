//! Sign-in through an identity provider (docs/api.md section 8, "Provider sign-in"): the
//! one-time flows that carry a browser to the provider and back, and what happens once the
//! provider vouched for an email.
//!
//! The protocols (OpenID Connect, SAML) live in the HTTP layer; they call
//! [`Domain::sign_in_with_provider`] only with an email the provider proved.

use serde_json::{Map, Value};
use zeroize::Zeroizing;

use super::sessions::NewSession;
use super::Domain;
use crate::crypto::{hash_session_secret, random_secret, Sealed};
use crate::error::{DomainError, Result};
use crate::model::{self, User};
use crate::time::Timestamp;
use crate::validate::user as rules;

/// How long a browser may take at the provider before its flow expires.
pub const FLOW_SECS: i64 = 600;

/// What a provider sign-in came to.
pub enum ProviderSignIn {
    /// A session was created (and, if allowed, the user before it).
    SignedIn(NewSession),
    /// The email belongs to no user and the provider may not create users.
    NotAllowed,
    /// The user exists but is disabled.
    Disabled,
}

/// A flow brought back by its `state`: what it remembered, and where to go afterwards.
pub struct ReturningFlow {
    pub secrets: Zeroizing<Vec<u8>>,
    pub return_to: String,
}

impl Domain {
    /// Signs in the user with `email`, which the provider `method` (its id) vouched for.
    /// An unknown email becomes an unprivileged user without a password only when
    /// `auto_create` is true; otherwise the pre-provisioned users are the allow-list.
    pub async fn sign_in_with_provider(&self, method: &str, email: &str, auto_create: bool) -> Result<ProviderSignIn> {
        let user = match self.user_for_provider(email, auto_create).await? {
            Some(user) => user,
            None => {
                tracing::info!(provider = method, "provider sign-in refused: unknown email and no auto-create");
                return Ok(ProviderSignIn::NotAllowed);
            }
        };
        if user.disabled_at.is_some() {
            tracing::info!(user.id = %user.id, provider = method, "provider sign-in refused: user disabled");
            return Ok(ProviderSignIn::Disabled);
        }
        Ok(ProviderSignIn::SignedIn(self.start_session(user, method).await?))
    }

    async fn user_for_provider(&self, email: &str, auto_create: bool) -> Result<Option<User>> {
        if let Some(user) = self.user_with_email(email).await? {
            return Ok(Some(user));
        }
        if !auto_create {
            return Ok(None);
        }
        let attrs = Map::from_iter([("email".to_owned(), Value::String(email.to_owned()))]);
        let Ok(input) = rules::create(&attrs) else {
            tracing::warn!("provider sign-in refused: the provider's email is not a valid user email");
            return Ok(None);
        };
        let now = Timestamp::now();
        let user = User::new(input.email, model::Role::Unprivileged, None, now);
        match self.store().insert_user(&user).await {
            Ok(()) => {
                tracing::info!(user.id = %user.id, "user created by a provider sign-in");
                Ok(Some(user))
            }
            // Another sign-in of the same email created it first: use that one.
            Err(DomainError::Invalid(_)) => self.user_with_email(email).await,
            Err(e) => Err(e),
        }
    }

    /// Starts a flow for `provider_id`: stores `secrets` (sealed) and `return_to` under a
    /// fresh random `state`, which is returned and works once, for [`FLOW_SECS`].
    pub async fn begin_sign_in_flow(
        &self,
        provider_id: &str,
        secrets: &[u8],
        return_to: &str,
    ) -> Result<Zeroizing<String>> {
        let state = random_secret();
        let now = Timestamp::now();
        let flow = model::SignInFlow {
            state_hash: hash_session_secret(&state).to_vec(),
            provider_id: provider_id.to_owned(),
            sealed: self.cipher.seal(secrets),
            return_to: return_to.to_owned(),
            expires_at: now.plus_secs(FLOW_SECS),
        };
        self.store().insert_sign_in_flow(&flow, now).await?;
        Ok(state)
    }

    /// Ends the flow with `state`: `None` when there is none (never started, already
    /// used, expired) or it belongs to another provider. Either way it cannot be used again.
    pub async fn take_sign_in_flow(&self, provider_id: &str, state: &str) -> Result<Option<ReturningFlow>> {
        if state.is_empty() || state.len() > 512 {
            return Ok(None);
        }
        let Some(flow) = self.store().take_sign_in_flow(&hash_session_secret(state)).await? else {
            return Ok(None);
        };
        if flow.provider_id != provider_id || flow.expires_at <= Timestamp::now() {
            return Ok(None);
        }
        let secrets = self.cipher.open(&Sealed(flow.sealed.0))?;
        Ok(Some(ReturningFlow { secrets, return_to: flow.return_to }))
    }
}
