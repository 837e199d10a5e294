//! API tokens: issue, authenticate, list, revoke; and the first admin.

use subtle::ConstantTimeEq;
use uuid::Uuid;
use zeroize::Zeroizing;

use super::devices::visible_device;
use super::{Domain, Principal};
use crate::crypto::{hash_token, TOKEN_PREFIX};
use crate::error::{DomainError, Result};
use crate::input::{NewToken, WrongTypes};
use crate::model::{email_key, ApiToken, Device, Role, User};
use crate::time::Timestamp;

/// `last_used_at` is written at most this often per token, so that authenticating a
/// request is a read, not a write. The store's UPDATE carries the same condition, so that
/// processes sharing a database do not write it twice either.
pub const TOUCH_INTERVAL_SECS: i64 = 60;

/// Why a bearer token was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Unknown, malformed, expired or revoked.
    InvalidToken,
    /// The owner is disabled.
    UserDisabled,
}

impl Domain {
    /// Resolves a bearer token to the acting principal, with the owner's current role.
    pub async fn authenticate(&self, secret: &str) -> Result<Result<Principal, Refusal>> {
        let Some(hash) = token_hash(secret) else { return self.authenticate_imported(secret).await };
        let found = self.store().token_by_hash(&hash).await?;
        self.admit(&hash, found).await
    }

    /// [`Self::authenticate`] and [`Self::get_device`] with one read of the store: the
    /// token's refusal comes first, as it does when the two run one after the other.
    pub async fn get_device_with_token(&self, secret: &str, id: Uuid) -> Result<Result<Device, Refusal>> {
        let Some(hash) = token_hash(secret) else {
            let actor = match self.authenticate_imported(secret).await? {
                Ok(actor) => actor,
                Err(refusal) => return Ok(Err(refusal)),
            };
            return self.get_device(&actor, id).await.map(Ok);
        };
        let (found, device) = self.store().token_and_device(&hash, id).await?;
        let actor = match self.admit(&hash, found).await? {
            Ok(actor) => actor,
            Err(refusal) => return Ok(Err(refusal)),
        };
        visible_device(&actor, device).map(Ok)
    }

    /// The principal of a token found by its hash (compared in constant time): see
    /// [`Self::admit_found`].
    async fn admit(&self, hash: &[u8], found: Option<(ApiToken, User)>) -> Result<Result<Principal, Refusal>> {
        let found = found.filter(|(token, _)| bool::from(token.token_hash.as_slice().ct_eq(hash)));
        self.admit_found(found).await
    }

    /// The principal of a token whose secret was checked, unless it is expired or its
    /// owner is disabled. Records the use now and then (see [`TOUCH_INTERVAL_SECS`]).
    pub(super) async fn admit_found(&self, found: Option<(ApiToken, User)>) -> Result<Result<Principal, Refusal>> {
        let Some((token, user)) = found else {
            return Ok(Err(Refusal::InvalidToken));
        };
        let now = Timestamp::now();
        if token.expires_at <= now {
            return Ok(Err(Refusal::InvalidToken));
        }
        if user.disabled_at.is_some() {
            return Ok(Err(Refusal::UserDisabled));
        }
        let stale = token.last_used_at.is_none_or(|t| t.plus_secs(TOUCH_INTERVAL_SECS) <= now);
        if stale {
            // Off the request path: the answer does not wait for the write.
            let store = self.shared_store();
            tokio::spawn(async move {
                if let Err(e) = store.touch_token(token.id, now).await {
                    tracing::warn!(token.id = %token.id, error = %e, "recording token use failed");
                }
            });
        }
        Ok(Ok(Principal { user_id: Some(user.id), role: user.role, token_id: Some(token.id) }))
    }

    /// Issues a token for the user with `email` (the command line); the secret is returned
    /// once and never stored. The same rules as `POST /v0/tokens`.
    pub async fn create_token(
        &self,
        email: &str,
        name: Option<&str>,
        days: Option<u32>,
    ) -> Result<(ApiToken, Zeroizing<String>)> {
        let user = self.user_with_email(email).await?.ok_or(DomainError::NotFound)?;
        let input = NewToken {
            name: Some(name.map(str::trim).filter(|n| !n.is_empty()).unwrap_or("api").to_owned()),
            expires_in_days: days.map(i64::from),
            wrong_types: WrongTypes::default(),
        };
        self.issue_token(user.id, &input).await
    }

    /// The tokens of the user with `email` (the command line).
    pub async fn list_tokens(&self, email: &str) -> Result<Vec<ApiToken>> {
        let user = self.user_with_email(email).await?.ok_or(DomainError::NotFound)?;
        self.list_tokens_as(&Principal::operator(), Some(user.id)).await
    }

    /// Revokes any token (the command line, as the operator).
    pub async fn revoke_token(&self, id: Uuid) -> Result<()> {
        self.revoke_token_as(&Principal::operator(), id).await
    }

    /// On a database without any admin, creates `email` as an admin (or promotes the
    /// existing user) and returns a one-time token for it. Returns `None` when an admin
    /// exists, also when another process sharing the database won the race.
    pub async fn bootstrap_admin(&self, email: &str) -> Result<Option<Zeroizing<String>>> {
        self.bootstrap_admin_with_password(email, None).await
    }

    /// [`Domain::bootstrap_admin`], giving the admin `password` too (checked against the
    /// password rules, hashed like every password), so that it can sign in on the web at
    /// once. A user that exists and is promoted gets it as well: the operator asked for
    /// this password for the first admin. With an admin in the database nothing changes.
    pub async fn bootstrap_admin_with_password(
        &self,
        email: &str,
        password: Option<Zeroizing<String>>,
    ) -> Result<Option<Zeroizing<String>>> {
        if self.store().count_admins().await? > 0 {
            return Ok(None);
        }
        let password_hash = match password {
            Some(password) => {
                if let Some(problem) = crate::validate::user::password_problem(&password) {
                    return Err(DomainError::invalid("password", problem));
                }
                Some(self.passwords.run(move || crate::crypto::hash_password(&password)).await??)
            }
            None => None,
        };
        let now = Timestamp::now();
        match self.store().user_by_email(&email_key(email)).await? {
            Some(user) => {
                let promote = crate::model::UserUpdate { role: Some(Role::Admin), password_hash, ..Default::default() };
                self.store().update_user(user.id, &promote, now).await?;
            }
            None => {
                let user = User::new(email.trim().to_owned(), Role::Admin, password_hash, now);
                match self.store().insert_user(&user).await {
                    Ok(()) => {}
                    Err(DomainError::Invalid(_)) => return Ok(None),
                    Err(e) => return Err(e),
                }
            }
        }
        // Processes starting together on one database can all get here (each saw no admin
        // and then found or promoted the same user); one setting, stored once whatever the
        // race, decides which of them prints the token.
        let claim = Uuid::new_v4();
        let stored = self.store().init_setting(FIRST_TOKEN_SETTING, claim.as_bytes()).await?;
        if stored != claim.as_bytes() {
            return Ok(None);
        }
        let (_, secret) = self.create_token(email, Some("bootstrap"), None).await?;
        Ok(Some(secret))
    }
}

/// The setting that records which process issued the first admin's token.
const FIRST_TOKEN_SETTING: &str = "first_admin_token_issuer";

/// The stored hash of a bearer token, or `None` for a string that cannot be one.
fn token_hash(secret: &str) -> Option<[u8; 32]> {
    secret.starts_with(TOKEN_PREFIX).then(|| hash_token(secret))
}
