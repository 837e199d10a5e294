//! The use cases that check a password or a code under this process's sign-in throttle
//! ([`super::throttle`]): password sign-in, a code (an authenticator's or a recovery code),
//! and a change of one's own password. Each attempt is counted before it is checked,
//! forgiven when it succeeds, and given back when it was never checked. The web pages and
//! the `/v0` API call these same functions, so one account has one budget whichever way
//! it is guessed at.

use std::future::Future;
use std::net::IpAddr;

use uuid::Uuid;

use super::account::is_wrong_password;
use super::throttle::Refused;
use super::totp::PasswordChecked;
use super::{Domain, Principal};
use crate::error::{DomainError, Result};
use crate::input::PasswordChange;
use crate::model::{email_key, User};

impl Domain {
    /// Signs in with `email` and `password` from `address`, counted against the account's
    /// throttle: refused unchecked (`Err`) when it used its attempts; a wrong password is
    /// recorded as a refused sign-in (`Ok(None)`); an attempt the password gate turned away
    /// (`Busy`) or that found password sign-in off (`Disallowed`) is given back.
    pub async fn sign_in_with_password_throttled(
        &self,
        email: &str,
        password: &str,
        address: IpAddr,
    ) -> Result<std::result::Result<Option<PasswordChecked>, Refused>> {
        let account = email_key(email);
        if let Err(refused) = self.throttle.reserve(&account, address) {
            return Ok(Err(refused));
        }
        let checked = self.sign_in_with_password(email, password).await;
        match &checked {
            Ok(Some(_)) => self.throttle.succeeded(&account, address),
            Ok(None) => self.record_refused_sign_in(email, "password", "bad_password", address).await,
            Err(DomainError::Busy(_) | DomainError::Disallowed(_)) => self.throttle.release(&account, address),
            Err(_) => {}
        }
        checked.map(Ok)
    }

    /// Runs `check` of a code `user` sent from `address`, as `method` (`totp` or
    /// `recovery_code`, as the audit log names it), counted as a password attempt is: refused
    /// unchecked (`Err`) when the account used its attempts, forgiven when it succeeds
    /// (`Some`), recorded as a refused sign-in when the code is wrong (`None`).
    pub async fn check_code_throttled<T>(
        &self,
        user: &User,
        address: IpAddr,
        method: &str,
        check: impl Future<Output = Result<Option<T>>>,
    ) -> Result<std::result::Result<Option<T>, Refused>> {
        let account = email_key(&user.email);
        if let Err(refused) = self.throttle.reserve(&account, address) {
            return Ok(Err(refused));
        }
        let outcome = check.await;
        match &outcome {
            Ok(Some(_)) => self.throttle.succeeded(&account, address),
            Ok(None) => self.record_refused_sign_in(&user.email, method, "bad_code", address).await,
            Err(_) => self.throttle.release(&account, address),
        }
        outcome.map(Ok)
    }

    /// Changes the caller's password, under the sign-in throttle of the account: refused
    /// unchecked (`Err`) when it used its attempts; a wrong current password counts as a
    /// failed sign-in, a change as a successful one, and an attempt whose current password
    /// was never checked is given back.
    pub async fn change_own_password_throttled(
        &self,
        actor: &Principal,
        address: IpAddr,
        input: &PasswordChange,
        keep_session: Option<Uuid>,
    ) -> Result<std::result::Result<(), Refused>> {
        let account = email_key(&self.own_user(actor).await?.email);
        if let Err(refused) = self.throttle.reserve(&account, address) {
            return Ok(Err(refused));
        }
        let changed = self.change_own_password(actor, input, keep_session).await;
        match &changed {
            Ok(()) => self.throttle.succeeded(&account, address),
            Err(e) if is_wrong_password(e) => {}
            Err(_) => self.throttle.release(&account, address),
        }
        changed.map(Ok)
    }
}
