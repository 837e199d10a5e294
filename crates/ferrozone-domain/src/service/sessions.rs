//! Browser sessions: password sign-in, authenticating a session, sign-out
//! (docs/design/sign-in.md, "Sign-in and sessions").

use subtle::ConstantTimeEq;
use uuid::Uuid;
use zeroize::Zeroizing;

use super::tokens::Refusal;
use super::totp::PasswordChecked;
use super::{Domain, Principal};
use crate::crypto::{csrf_token, excessive_cost, hash_session_secret, random_secret, verify_password_or_dummy};
use crate::error::{DomainError, Result};
use crate::model::{Session, User};
use crate::time::Timestamp;

/// Why a password sign-in is refused when `local_auth_enabled` is off.
pub const LOCAL_AUTH_OFF: &str =
    "Signing in with a password is turned off on this server; sign in with an identity provider.";

/// The `last_signed_in_method` of a password sign-in.
pub const PASSWORD_METHOD: &str = "password";

/// A session just created: its secret, for the cookie, shown once and never stored.
pub struct NewSession {
    pub secret: Zeroizing<String>,
    pub user: User,
}

/// A session that authenticated a request.
#[derive(Debug)]
pub struct ActiveSession {
    pub id: Uuid,
    pub principal: Principal,
    pub user: User,
    /// What writes through this session must carry in `x-csrf-token`.
    pub csrf_token: String,
}

impl Domain {
    /// Checks an email and password; on success creates a session and records the sign-in,
    /// unless a second step (an authenticator code, or setting one up) must come first.
    /// Every refusal (unknown email, no password, wrong password, disabled user) is the same
    /// `None`, and costs the same: one argon2 verification, against a dummy hash when there
    /// is no real one. The dummy check may not take the password gate's reserve: under a
    /// flood of unknown emails it is the one refused (`Busy`).
    ///
    /// With `local_auth_enabled` off (read per use) nothing is checked: `Disallowed`.
    pub async fn sign_in_with_password(&self, email: &str, password: &str) -> Result<Option<PasswordChecked>> {
        if !self.local_auth_enabled() {
            return Err(DomainError::Disallowed(LOCAL_AUTH_OFF));
        }
        let user = self.user_with_email(email).await?;
        let phc = user.as_ref().and_then(|u| u.password_hash.clone());
        if let Some((user, why)) = user.as_ref().zip(phc.as_deref().and_then(excessive_cost)) {
            tracing::warn!(user.id = %user.id, "password sign-in refused without hashing: {why}; give the user a new password (`ferrozone user set-password`)");
        }
        let password = Zeroizing::new(password.to_owned());
        let verified = match phc {
            // The dummy hash stays out of the reserve kept for real accounts.
            None => self.passwords.run_unreserved(move || verify_password_or_dummy(&password, None)).await?,
            Some(phc) => self.passwords.run(move || verify_password_or_dummy(&password, Some(&phc))).await?,
        };
        let Some(user) = user.filter(|u| verified && u.disabled_at.is_none()) else {
            return Ok(None);
        };
        Ok(Some(self.after_password(user).await?))
    }

    /// Whether people may sign in with a password now (`local_auth_enabled`). Sign-in
    /// through a provider and API tokens do not depend on it.
    pub fn local_auth_enabled(&self) -> bool {
        self.current_values().local_auth_enabled
    }

    /// A fresh token for the sign-in form, valid for `lifetime_secs`.
    pub fn sign_in_form_token(&self, lifetime_secs: u64) -> String {
        let lifetime = i64::try_from(lifetime_secs).unwrap_or(i64::MAX);
        self.form_key.issue((Timestamp::now().micros() / 1_000_000).saturating_add(lifetime))
    }

    /// Whether `token` is a sign-in form token this server issued and that has not expired.
    pub fn check_sign_in_form_token(&self, token: &str) -> bool {
        self.form_key.verify(token, Timestamp::now().micros() / 1_000_000)
    }

    /// Creates a session for `user`, who just signed in by `method` (`password` or a
    /// provider id), and records the sign-in. Expired sessions are cleaned up on the way.
    pub(crate) async fn start_session(&self, user: User, method: &str) -> Result<NewSession> {
        let now = Timestamp::now();
        if let Err(e) = self.store().delete_expired_sessions(now).await {
            tracing::warn!(error = %e, "deleting expired sessions failed");
        }
        let secret = random_secret();
        let session = Session {
            id: Uuid::now_v7(),
            user_id: user.id,
            secret_hash: hash_session_secret(&secret).to_vec(),
            inserted_at: now,
            expires_at: now.plus_secs(i64::from(self.settings().session_hours) * 3600),
        };
        self.store().insert_session(&session, method).await?;
        self.store().record_sign_in(user.id, method, now).await?;
        if self.vpn_session().expires() {
            // The sign-in renews the user's VPN session: an expired one's devices come back.
            self.peers_changed();
        }
        tracing::info!(user.id = %user.id, session.id = %session.id, method, "signed in");
        Ok(NewSession { secret, user })
    }

    /// The session with `secret`, unless it is unknown or expired (`InvalidToken`) or its
    /// user is disabled (`UserDisabled`). The user is read afresh on every call.
    pub async fn authenticate_session(&self, secret: &str) -> Result<Result<ActiveSession, Refusal>> {
        let hash = hash_session_secret(secret);
        let Some((session, user)) = self.store().session_by_hash(&hash).await? else {
            return Ok(Err(Refusal::InvalidToken));
        };
        if !bool::from(session.secret_hash.as_slice().ct_eq(&hash)) || session.expires_at <= Timestamp::now() {
            return Ok(Err(Refusal::InvalidToken));
        }
        if user.disabled_at.is_some() {
            return Ok(Err(Refusal::UserDisabled));
        }
        let principal = Principal { user_id: Some(user.id), role: user.role, token_id: None };
        Ok(Ok(ActiveSession { id: session.id, principal, user, csrf_token: csrf_token(secret) }))
    }

    /// Ends every session of the user with `email` (for the local operator); returns the
    /// user and how many sessions ended.
    pub async fn sign_out_everywhere(&self, email: &str) -> Result<(User, u64)> {
        let user = self.user_with_email(email).await?.ok_or(crate::DomainError::NotFound)?;
        let ended = self.store().delete_user_sessions(user.id).await?;
        tracing::info!(user.id = %user.id, ended, "signed out everywhere");
        Ok((user, ended))
    }

    /// Deletes the sessions that expired by now; returns how many went. `serve` calls it
    /// periodically, so the table does not keep sessions nobody signs back into.
    pub async fn delete_expired_sessions(&self) -> Result<u64> {
        self.store().delete_expired_sessions(Timestamp::now()).await
    }

    /// Deletes the session with `secret`, if there is one.
    pub async fn sign_out(&self, secret: &str) -> Result<()> {
        if let Some((session, _)) = self.store().session_by_hash(&hash_session_secret(secret)).await? {
            self.store().delete_session(session.id).await?;
            tracing::info!(session.id = %session.id, "signed out");
        }
        Ok(())
    }
}
