//! The caller's own account (`/v0/me` and the account page): who it is, changing its
//! password, ending its sessions. Every use case here acts on the caller's own user only,
//! whatever its role, so none needs an admin.

use uuid::Uuid;
use zeroize::Zeroizing;

use super::{Domain, Principal};
use crate::crypto::{hash_password, verify_password};
use crate::error::{DomainError, Result};
use crate::input::PasswordChange;
use crate::model::{User, UserUpdate};
use crate::time::Timestamp;
use crate::validate::input::Check;
use crate::validate::user::password_change;

/// What a password change says of a current password that is not the user's.
pub const WRONG_PASSWORD: &str = "is not correct";

/// Why a user who signs in through an identity provider cannot change a password here.
pub const NO_PASSWORD: &str =
    "This account signs in through an identity provider and has no password here: change it there.";

impl Domain {
    /// The caller's own user, read afresh. The local operator has none: `Forbidden`.
    pub async fn own_user(&self, actor: &Principal) -> Result<User> {
        let id = actor.user_id.ok_or(DomainError::Forbidden)?;
        self.store().user_by_id(id).await?.ok_or(DomainError::NotFound)
    }

    /// Changes the caller's password, given its current one; every session of the user
    /// ends but `keep_session` (the browser session that asked, if any). API tokens stay.
    ///
    /// Refusals are `Invalid` with every error of the request; a wrong current password is
    /// [`WRONG_PASSWORD`] on `current_password` (see [`is_wrong_password`], for the sign-in
    /// throttle, which counts it as a failed sign-in). A user without a password (one of an
    /// identity provider) is `Disallowed`. Both the check and the new hash go through the
    /// password gate, in one turn (`Busy` when it is full).
    pub async fn change_own_password(
        &self,
        actor: &Principal,
        input: &PasswordChange,
        keep_session: Option<Uuid>,
    ) -> Result<()> {
        let user = self.own_user(actor).await?;
        let Some(stored) = user.password_hash.clone() else {
            return Err(DomainError::Disallowed(NO_PASSWORD));
        };
        let mut c = Check::new(&input.wrong_types);
        let (current, new) = password_change(&mut c, input);
        let Some(current) = current else { return c.finish(()) };
        let checked = self.passwords.run(move || check_and_hash(&current, &stored, new.as_ref())).await?;
        let new_hash = match checked {
            Checked::Wrong => {
                c.add("current_password", WRONG_PASSWORD);
                return c.finish(());
            }
            Checked::Right(new_hash) => new_hash,
        };
        let Some(password_hash) = new_hash.transpose()? else { return c.finish(()) };
        c.finish(())?;
        let update = UserUpdate { password_hash: Some(password_hash), keep_session, ..UserUpdate::default() };
        self.store().update_user(user.id, &update, Timestamp::now()).await?;
        tracing::info!(user.id = %user.id, "password changed; the user's other sessions ended");
        Ok(())
    }

    /// Ends every browser session of the caller's user, the caller's own included; returns
    /// how many ended. API tokens stay.
    pub async fn sign_out_everywhere_as(&self, actor: &Principal) -> Result<u64> {
        let user_id = actor.user_id.ok_or(DomainError::Forbidden)?;
        let ended = self.store().delete_user_sessions(user_id).await?;
        tracing::info!(user.id = %user_id, ended, "signed out everywhere");
        Ok(ended)
    }
}

/// Whether `error` refused a password change for a wrong current password (and so was a
/// guess at it).
pub fn is_wrong_password(error: &DomainError) -> bool {
    matches!(error, DomainError::Invalid(errors)
        if errors.get("current_password").is_some_and(|m| m.iter().any(|m| m == WRONG_PASSWORD)))
}

/// What checking the current password came to.
enum Checked {
    Wrong,
    /// Right, with the new password's hash when a valid new password was sent.
    Right(Option<anyhow::Result<String>>),
}

/// On a password thread: the current password against the stored hash, then (only when it
/// is right) the new one hashed.
fn check_and_hash(current: &str, stored: &str, new: Option<&Zeroizing<String>>) -> Checked {
    if !verify_password(current, stored) {
        return Checked::Wrong;
    }
    Checked::Right(new.map(|new| hash_password(new)))
}
