//! Two-factor sign-in with an authenticator app (TOTP, docs/design/sign-in.md, "Two-factor
//! sign-in"): setting one up, the second step of a password sign-in, recovery codes,
//! turning it off, and an administrator's reset. The secret is sealed with the secret key
//! and never shown again after it is set up; recovery codes are stored as keyed hashes.

use uuid::Uuid;
use zeroize::Zeroizing;

use super::sessions::{NewSession, PASSWORD_METHOD};
use super::{Domain, Principal};
use crate::crypto::totp::{self, RECOVERY_CODE_PURPOSE};
use crate::crypto::{verify_password, PendingSignIn, PendingSignInKey, PENDING_SIGN_IN_PURPOSE};
use crate::error::{DomainError, Result};
use crate::model::User;
use crate::time::Timestamp;

/// The issuer an authenticator app shows next to the account.
pub const ISSUER: &str = "Ferrozone";
/// Recovery codes made at a time.
pub const RECOVERY_CODE_COUNT: usize = 10;
/// How long the second step of a sign-in may take, in seconds.
pub const PENDING_SIGN_IN_SECS: i64 = 300;
/// Why a second authenticator cannot be set up.
pub const ALREADY_SET_UP: &str = "is already set up; turn it off first";
/// Why a code is refused.
pub const WRONG_CODE: &str = "is incorrect or was already used";
/// Why two-factor sign-in cannot be turned off.
pub const REQUIRED: &str = "This server requires two-factor sign-in for your account, so it cannot be turned off.";

/// Whether a user signs in with an authenticator code, for the user and the console.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TotpStatus {
    /// Set up and confirmed (a pending set-up does not count).
    pub enrolled: bool,
    /// When it was confirmed.
    pub since: Option<Timestamp>,
    pub recovery_codes_left: u32,
    /// Whether the server requires it of this user (`require_totp`).
    pub required: bool,
}

/// An authenticator being set up: what the app needs, shown this once.
pub struct TotpEnrolment {
    /// The secret in base32, to type in.
    pub secret: Zeroizing<String>,
    /// The `otpauth://` URI, for a QR code.
    pub uri: Zeroizing<String>,
}

/// Fresh recovery codes, shown this once.
pub struct RecoveryCodes(pub Vec<Zeroizing<String>>);

/// What a correct password leads to.
pub enum PasswordChecked {
    /// No second step: the session.
    SignedIn(NewSession),
    /// The user has an authenticator: a code comes next.
    CodeNeeded(User),
    /// The server requires an authenticator the user has not set up: that comes next.
    SetUpNeeded(User),
}

impl Domain {
    /// The user's two-factor status (for their account page and the console).
    pub async fn totp_status(&self, user: &User) -> Result<TotpStatus> {
        let record = self.store().totp_of(user.id).await?;
        let confirmed = record.as_ref().and_then(|r| r.confirmed_at);
        Ok(TotpStatus {
            enrolled: confirmed.is_some(),
            since: confirmed,
            recovery_codes_left: record.filter(|r| r.confirmed_at.is_some()).map_or(0, |r| r.recovery_codes_left),
            required: self.totp_required(user),
        })
    }

    /// [`Domain::totp_status`] of the user with `user_id`, for an administrator.
    pub async fn totp_status_of(&self, actor: &Principal, user_id: Uuid) -> Result<TotpStatus> {
        actor.require_admin()?;
        let user = self.store().user_by_id(user_id).await?.ok_or(DomainError::NotFound)?;
        self.totp_status(&user).await
    }

    /// Whether the server requires two-factor sign-in of `user` now (`require_totp`).
    pub fn totp_required(&self, user: &User) -> bool {
        self.current_values().require_totp.covers(user.role)
    }

    /// What follows a correct password for `user`.
    pub(crate) async fn after_password(&self, user: User) -> Result<PasswordChecked> {
        self.after_first_factor(user, PASSWORD_METHOD).await
    }

    /// What follows a first factor (a password, a sign-in link) that signs in by `method`:
    /// the code of an enrolled authenticator, setting one up where it is required, or else
    /// the session.
    pub(crate) async fn after_first_factor(&self, user: User, method: &str) -> Result<PasswordChecked> {
        let enrolled = self.store().totp_of(user.id).await?.is_some_and(|r| r.confirmed_at.is_some());
        Ok(if enrolled {
            PasswordChecked::CodeNeeded(user)
        } else if self.totp_required(&user) {
            PasswordChecked::SetUpNeeded(user)
        } else {
            PasswordChecked::SignedIn(self.start_session(user, method).await?)
        })
    }

    /// Makes a new secret for `user` (replacing one whose set-up was never confirmed) and
    /// returns it for the app; it counts only once a code from it is confirmed. Refused
    /// (`Invalid { totp }`) when an authenticator is set up already.
    pub async fn start_totp(&self, user: &User) -> Result<TotpEnrolment> {
        let secret = totp::new_secret();
        let sealed = self.cipher().seal(&secret);
        if !self.store().start_totp(user.id, &sealed, Timestamp::now()).await? {
            return Err(DomainError::invalid("totp", ALREADY_SET_UP));
        }
        tracing::info!(user.id = %user.id, "two-factor set-up started");
        Ok(enrolment(user, &secret))
    }

    /// The pending set-up of `user`, shown again (a code from it was mistyped, say); `None`
    /// when none is pending. A confirmed secret is never shown again.
    pub async fn pending_totp(&self, user: &User) -> Result<Option<TotpEnrolment>> {
        let Some(record) = self.store().totp_of(user.id).await? else { return Ok(None) };
        if record.confirmed_at.is_some() {
            return Ok(None);
        }
        let secret = self.cipher().open(&record.sealed_secret)?;
        Ok(Some(enrolment(user, &secret)))
    }

    /// The user acting through `actor` (a token's or a session's); the local operator is
    /// no user (`NotFound`).
    pub async fn acting_user(&self, actor: &Principal) -> Result<User> {
        let id = actor.user_id.ok_or(DomainError::NotFound)?;
        self.store().user_by_id(id).await?.ok_or(DomainError::NotFound)
    }

    /// Confirms the pending set-up with a current `code`; returns the first recovery codes,
    /// or `None` (nothing changes) when the code is wrong or no set-up is pending.
    pub async fn confirm_totp(&self, user_id: Uuid, code: &str) -> Result<Option<RecoveryCodes>> {
        let Some(record) = self.store().totp_of(user_id).await? else { return Ok(None) };
        if record.confirmed_at.is_some() {
            return Ok(None);
        }
        let secret = self.cipher().open(&record.sealed_secret)?;
        let Some(step) = totp::matching_step(&secret, code, unix_now(), None) else { return Ok(None) };
        let (codes, hashes) = self.new_codes();
        if !self.store().confirm_totp(user_id, step, Timestamp::now(), &hashes).await? {
            return Ok(None);
        }
        tracing::info!(user.id = %user_id, "two-factor sign-in set up");
        Ok(Some(codes))
    }

    /// Whether `code` is a current code of the user's confirmed authenticator, not used
    /// before; if so it is now used.
    pub async fn check_totp_code(&self, user_id: Uuid, code: &str) -> Result<bool> {
        let Some(record) = self.store().totp_of(user_id).await? else { return Ok(false) };
        if record.confirmed_at.is_none() {
            return Ok(false);
        }
        let secret = self.cipher().open(&record.sealed_secret)?;
        let Some(step) = totp::matching_step(&secret, code, unix_now(), record.last_step) else { return Ok(false) };
        self.store().accept_totp_step(user_id, step).await
    }

    /// Whether `code` is a current authenticator code or an unused recovery code of the
    /// user's; either is used up by this.
    pub async fn check_second_factor(&self, user_id: Uuid, code: &str) -> Result<bool> {
        if totp::normalize_code(code).is_some() {
            return self.check_totp_code(user_id, code).await;
        }
        let Some(normalized) = totp::normalize_recovery_code(code) else { return Ok(false) };
        let hash = totp::hash_recovery_code(&self.cipher().derive_key(RECOVERY_CODE_PURPOSE), &normalized);
        let used = self.store().use_recovery_code(user_id, &hash).await?;
        if used {
            tracing::info!(user.id = %user_id, "a recovery code was used");
        }
        Ok(used)
    }

    /// New recovery codes in place of the old ones, for a current `code`; `None` when the
    /// code is wrong (or there is no authenticator).
    pub async fn new_recovery_codes(&self, user_id: Uuid, code: &str) -> Result<Option<RecoveryCodes>> {
        if !self.check_totp_code(user_id, code).await? {
            return Ok(None);
        }
        let (codes, hashes) = self.new_codes();
        if !self.store().replace_recovery_codes(user_id, &hashes).await? {
            return Ok(None);
        }
        tracing::info!(user.id = %user_id, "new recovery codes made");
        Ok(Some(codes))
    }

    /// Turns `user`'s two-factor sign-in off (a pending set-up goes too), proven by a current
    /// `code` or the `password`; false when neither is right. Refused (`Disallowed`) while
    /// the server requires it of the user.
    pub async fn turn_off_totp(&self, user: &User, code: Option<&str>, password: Option<&str>) -> Result<bool> {
        if self.totp_required(user) {
            return Err(DomainError::Disallowed(REQUIRED));
        }
        let proven = match (code, password, user.password_hash.clone()) {
            (Some(code), _, _) if !code.trim().is_empty() => self.check_second_factor(user.id, code).await?,
            (_, Some(password), Some(phc)) if !password.is_empty() => {
                let password = Zeroizing::new(password.to_owned());
                self.password_gate().run(move || verify_password(&password, &phc)).await?
            }
            _ => false,
        };
        if proven {
            self.store().delete_totp(user.id).await?;
            tracing::info!(user.id = %user.id, "two-factor sign-in turned off");
        }
        Ok(proven)
    }

    /// Removes the authenticator of the user with `user_id` (who lost it), for an
    /// administrator. Their sessions go on; their next password sign-in needs no code (or,
    /// when required, sets a new authenticator up).
    pub async fn reset_totp(&self, actor: &Principal, user_id: Uuid) -> Result<()> {
        actor.require_admin()?;
        self.store().user_by_id(user_id).await?.ok_or(DomainError::NotFound)?;
        self.store().delete_totp(user_id).await?;
        tracing::info!(user.id = %user_id, "two-factor sign-in reset by an administrator");
        Ok(())
    }

    /// The token of a sign-in waiting for `user_id`'s second step, going to `return_to`.
    pub fn pending_sign_in_token(&self, user_id: Uuid, return_to: &str) -> String {
        let expires_at = unix_now().saturating_add(PENDING_SIGN_IN_SECS);
        self.pending_key().issue(&PendingSignIn { user_id, expires_at, return_to: return_to.to_owned() })
    }

    /// What a pending sign-in `token` says, if this server issued it and it has not expired.
    pub fn check_pending_sign_in(&self, token: &str) -> Option<PendingSignIn> {
        self.pending_key().verify(token, unix_now())
    }

    /// The user of a pending sign-in, if they may still sign in with a password (exists,
    /// not disabled, password sign-in on).
    pub async fn pending_user(&self, pending: &PendingSignIn) -> Result<Option<User>> {
        if !self.local_auth_enabled() {
            return Ok(None);
        }
        let user = self.store().user_by_id(pending.user_id).await?;
        Ok(user.filter(|u| u.disabled_at.is_none() && u.password_hash.is_some()))
    }

    /// The second step of a password sign-in: a session when `code` is a current
    /// authenticator code or a recovery code of the user's; `None` otherwise.
    pub async fn sign_in_with_code(&self, user: User, code: &str) -> Result<Option<NewSession>> {
        if !self.check_second_factor(user.id, code).await? {
            return Ok(None);
        }
        Ok(Some(self.start_session(user, PASSWORD_METHOD).await?))
    }

    /// The set-up step of a password sign-in the server requires two-factor for: confirms
    /// the pending authenticator with `code`, then starts the session.
    pub async fn sign_in_setting_up(&self, user: User, code: &str) -> Result<Option<(RecoveryCodes, NewSession)>> {
        let Some(codes) = self.confirm_totp(user.id, code).await? else { return Ok(None) };
        Ok(Some((codes, self.start_session(user, PASSWORD_METHOD).await?)))
    }

    fn pending_key(&self) -> PendingSignInKey {
        PendingSignInKey::new(self.cipher().derive_key(PENDING_SIGN_IN_PURPOSE))
    }

    /// [`RECOVERY_CODE_COUNT`] fresh codes and their stored hashes.
    fn new_codes(&self) -> (RecoveryCodes, Vec<Vec<u8>>) {
        let key = self.cipher().derive_key(RECOVERY_CODE_PURPOSE);
        let codes: Vec<_> = (0..RECOVERY_CODE_COUNT).map(|_| totp::new_recovery_code()).collect();
        let hashes = codes.iter().map(|c| totp::hash_recovery_code(&key, &c.replace('-', ""))).collect();
        (RecoveryCodes(codes), hashes)
    }
}

/// What an authenticator app needs of `secret`.
fn enrolment(user: &User, secret: &[u8]) -> TotpEnrolment {
    let text = Zeroizing::new(totp::base32(secret));
    let uri = Zeroizing::new(totp::otpauth_uri(ISSUER, &user.email, &text));
    TotpEnrolment { secret: text, uri }
}

fn unix_now() -> i64 {
    Timestamp::now().micros().div_euclid(1_000_000)
}
