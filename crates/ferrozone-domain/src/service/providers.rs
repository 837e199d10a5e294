//! Sign-in through an identity provider (docs/design/identity-providers.md, "Provider sign-in"): the
//! one-time flows that carry a browser to the provider and back, and what happens once the
//! provider vouched for an email.
//!
//! The protocols (OpenID Connect in `ferrozone-oidc`, SAML in `ferrozone-saml`) end every
//! sign-in with [`Domain::sign_in_with_identity`], only with an email the provider proved.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use zeroize::Zeroizing;

use super::sessions::NewSession;
use super::Domain;
use crate::audit::{context, Actor, ActorKind};
use crate::client::client_network;
use crate::crypto::{hash_session_secret, random_secret, Sealed};
use crate::error::{DomainError, Result};
use crate::input::NewUser;
use crate::model::{self, email_key, Role, User};
use crate::providers::ProviderPolicy;
use crate::time::Timestamp;
use crate::validate::user as rules;

/// How long a browser may take at the provider before its flow expires.
pub const FLOW_SECS: i64 = 600;

/// The longest `return_to` a flow keeps; a longer one is replaced by `/`.
pub const RETURN_TO_MAX: usize = 512;

/// What a provider sign-in came to.
pub enum ProviderSignIn {
    /// A session was created (and, if allowed, the user before it).
    SignedIn(NewSession),
    /// The email belongs to no user and the provider may not create users.
    NotAllowed,
    /// The user exists but is disabled.
    Disabled,
    /// The user is an admin and the provider may not sign admins in (`allow_admins: false`).
    AdminNotAllowed,
    /// The email cannot be matched safely: its Unicode lower case differs from its ASCII
    /// lower case (`\u{212A}ate@…`, with a Kelvin sign, would otherwise be `kate@…`), or it
    /// matches a user's email only beyond ASCII case.
    UnusableEmail,
}

/// Who an identity provider vouched for at a sign-in, and what it left for later.
pub struct ProviderIdentity {
    /// The email the provider proved.
    pub email: String,
    /// An OpenID Connect refresh token, for the refresh job (SAML leaves none).
    pub refresh_token: Option<Zeroizing<String>>,
    /// The groups the provider says the user is in, filtered by its configuration
    /// ([`crate::group_sync::GroupClaims::keep`]); `None`: the provider's groups are not
    /// read, or could not be, and the user's memberships stay as they are.
    pub groups: Option<Vec<String>>,
}

/// A provider sign-in at its end: what it came to for the proven `email`, and where the
/// browser goes next (its flow's `return_to`).
pub struct ProviderSignInEnd {
    pub outcome: ProviderSignIn,
    pub email: String,
    pub return_to: String,
}

/// A flow brought back by its `state`: what it remembered, and where to go afterwards.
pub struct ReturningFlow {
    pub secrets: Zeroizing<Vec<u8>>,
    pub return_to: String,
}

impl Domain {
    /// The end of every provider sign-in: signs `identity` in through the provider
    /// `provider_id` under its `policy` ([`Self::sign_in_through_provider`]: the user found or
    /// created, the sign-in recorded, the session created) and, when that signed someone in
    /// and the provider left a refresh token, keeps the token as the user's connection to
    /// the provider ([`Self::save_oidc_connection`]).
    pub async fn sign_in_with_identity(
        &self,
        provider_id: &str,
        identity: &ProviderIdentity,
        policy: ProviderPolicy,
    ) -> Result<ProviderSignIn> {
        let outcome = self.sign_in_through_provider(provider_id, &identity.email, policy).await?;
        if let ProviderSignIn::SignedIn(session) = &outcome {
            if let Some(token) = &identity.refresh_token {
                self.save_oidc_connection(session.user.id, provider_id, token).await?;
            }
            if let Some(groups) = &identity.groups {
                self.apply_provider_groups(session.user.id, provider_id, groups).await?;
            }
        }
        Ok(outcome)
    }

    /// Signs in the user with `email`, which the provider `method` (its id) vouched for.
    /// An unknown email becomes an unprivileged user without a password only when
    /// `auto_create` is true; otherwise the pre-provisioned users are the allow-list.
    /// Admins may sign in ([`Self::sign_in_through_provider`] says otherwise).
    pub async fn sign_in_with_provider(&self, method: &str, email: &str, auto_create: bool) -> Result<ProviderSignIn> {
        let policy = ProviderPolicy { auto_create_users: auto_create, allow_admins: true };
        self.sign_in_through_provider(method, email, policy).await
    }

    /// [`Self::sign_in_with_provider`] under the provider's `policy`. Emails compare
    /// case-insensitively in ASCII only (docs/design/identity-providers.md, "Provider sign-in").
    pub async fn sign_in_through_provider(
        &self,
        method: &str,
        email: &str,
        policy: ProviderPolicy,
    ) -> Result<ProviderSignIn> {
        if !folds_as_ascii(email) {
            tracing::warn!(
                provider = method,
                "provider sign-in refused: the email's Unicode lower case is not its ASCII one"
            );
            return Ok(ProviderSignIn::UnusableEmail);
        }
        let user = match self.user_for_provider(email, method, policy.auto_create_users).await? {
            Some(user) if !user.email.trim().eq_ignore_ascii_case(email.trim()) => {
                tracing::warn!(user.id = %user.id, provider = method, "provider sign-in refused: the email matches a user's only beyond ASCII case");
                return Ok(ProviderSignIn::UnusableEmail);
            }
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
        if user.role == Role::Admin && !policy.allow_admins {
            tracing::warn!(user.id = %user.id, provider = method, "provider sign-in refused: this provider may not sign admins in");
            return Ok(ProviderSignIn::AdminNotAllowed);
        }
        Ok(ProviderSignIn::SignedIn(self.start_session(user, method).await?))
    }

    /// The user with `email`, or (with `auto_create`) a new one, created by the provider
    /// `provider_id` as the audit log records it.
    async fn user_for_provider(&self, email: &str, provider_id: &str, auto_create: bool) -> Result<Option<User>> {
        if let Some(user) = self.user_with_email(email).await? {
            return Ok(Some(user));
        }
        if !auto_create {
            return Ok(None);
        }
        let Ok(input) = rules::create(&NewUser { email: Some(email.to_owned()), ..NewUser::default() }) else {
            tracing::warn!("provider sign-in refused: the provider's email is not a valid user email");
            return Ok(None);
        };
        let now = Timestamp::now();
        let user = User::new(input.email, model::Role::Unprivileged, None, now);
        let provider = Actor { kind: ActorKind::Provider, id: Some(provider_id.to_owned()), user_id: None };
        let by_provider = context::Context::new(provider, context::current().origin);
        match context::scope(by_provider, self.store().insert_user(&user)).await {
            Ok(()) => {
                tracing::info!(user.id = %user.id, "user created by a provider sign-in");
                Ok(Some(user))
            }
            // Another sign-in of the same email created it first: use that one.
            Err(DomainError::Invalid(_)) => self.user_with_email(email).await,
            Err(e) => Err(e),
        }
    }

    /// Starts a flow for a browser at `client`, as [`Self::begin_sign_in_flow`] does, unless
    /// that address (an IPv6 one by its /64) already started
    /// [`crate::settings::Settings::sign_in_flows_per_address`] flows in the last
    /// [`FLOW_SECS`]: then `None`, and nothing is stored. A `return_to` longer than
    /// [`RETURN_TO_MAX`] is kept as `/`. Expired flows are deleted on the way.
    pub async fn start_sign_in_flow(
        &self,
        provider_id: &str,
        secrets: &[u8],
        return_to: &str,
        client: IpAddr,
    ) -> Result<Option<Zeroizing<String>>> {
        if !self.flow_starts.admit(client, self.settings().sign_in_flows_per_address) {
            tracing::info!(provider = provider_id, client = %client, "sign-in flow refused: too many from this address");
            return Ok(None);
        }
        let return_to = if return_to.len() <= RETURN_TO_MAX { return_to } else { "/" };
        Ok(Some(self.begin_sign_in_flow(provider_id, secrets, return_to).await?))
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

/// Whether `email`'s Unicode lower case is its ASCII lower case, so that matching it
/// case-insensitively in ASCII and by [`email_key`] agree.
fn folds_as_ascii(email: &str) -> bool {
    email_key(email) == email.trim().to_ascii_lowercase()
}

/// The most client addresses [`FlowStarts`] tracks; past it, stale windows are dropped and
/// then the oldest, so its memory stays bounded.
const MAX_TRACKED: usize = 100_000;

/// Sign-in flows started per client address in fixed windows of [`FLOW_SECS`], in this
/// process's memory.
#[derive(Debug, Default)]
pub(crate) struct FlowStarts {
    windows: Mutex<HashMap<IpAddr, (Instant, u32)>>,
}

impl FlowStarts {
    /// Counts a start from `client`: false (not counted) when it already made `cap`.
    fn admit(&self, client: IpAddr, cap: u32) -> bool {
        let window = Duration::from_secs(FLOW_SECS.unsigned_abs());
        let now = Instant::now();
        let mut windows = self.windows.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if windows.len() >= MAX_TRACKED {
            windows.retain(|_, (first, _)| now.duration_since(*first) < window);
            if windows.len() >= MAX_TRACKED {
                let oldest = windows.iter().min_by_key(|(_, (first, _))| *first).map(|(k, _)| *k);
                oldest.map(|k| windows.remove(&k));
            }
        }
        let (first, count) = windows.entry(client_network(client)).or_insert((now, 0));
        if now.duration_since(*first) >= window {
            (*first, *count) = (now, 0);
        }
        if *count >= cap {
            return false;
        }
        *count += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_starts_are_capped_per_address_and_ipv6_per_64() {
        let starts = FlowStarts::default();
        let one: IpAddr = "192.0.2.1".parse().unwrap();
        assert!((0..3).all(|_| starts.admit(one, 3)));
        assert!(!starts.admit(one, 3), "the fourth start in the window");
        assert!(starts.admit("192.0.2.2".parse().unwrap(), 3), "another address has its own");
        assert!(!starts.admit("::ffff:192.0.2.1".parse().unwrap(), 3), "the mapped form is the same address");
        let v6 = |s: &str| s.parse::<IpAddr>().unwrap();
        assert!((0..3).all(|i| starts.admit(v6(&format!("2001:db8:1:2::{i}")), 3)));
        assert!(!starts.admit(v6("2001:db8:1:2:ffff::1"), 3), "same /64");
        assert!(starts.admit(v6("2001:db8:1:3::1"), 3), "another /64");
    }

    #[test]
    fn only_emails_that_fold_as_ascii_are_usable() {
        assert!(folds_as_ascii(" Kate@Example.com "));
        assert!(folds_as_ascii("élodie@example.com"), "already lower case");
        assert!(!folds_as_ascii("\u{212A}ate@example.com"), "Kelvin sign");
        assert!(!folds_as_ascii("Élodie@example.com"));
    }
}
