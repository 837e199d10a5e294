//! The writes of SCIM users, each in one transaction (docs/design/scim.md, "Users"): a
//! create makes the user or links the one with its email, a replace changes the user and
//! its profile, a delete disables the user and ends the link. Being active follows the
//! directory, but for a user someone else disabled: `active: true` enables only a user SCIM
//! disabled, so that a directory's routine replace never undoes an administrator's disable.

use async_trait::async_trait;
use uuid::Uuid;

use super::tx::WriteTx;
use super::users::update_in;
use crate::audit::changes;
use crate::error::{DomainError, Result};
use crate::model::{email_key, DisabledBy, Role, User, UserUpdate};
use crate::scim::{profile_entry, ScimProfile, ScimUser, ScimUserWrite};
use crate::time::Timestamp;
use crate::validate::TAKEN;

/// The statements SCIM's user writes need beyond [`WriteTx`].
#[async_trait]
pub trait ScimTx: WriteTx {
    /// The user whose [`email_key`] is `key`, locked.
    async fn lock_user_by_email(&mut self, key: &str) -> Result<Option<User>>;
    /// Inserts `user` (the caller records its event).
    async fn insert_user(&mut self, user: &User) -> Result<()>;
    /// The user's SCIM profile, with when it was made and last changed.
    async fn scim_profile(&mut self, user_id: Uuid) -> Result<Option<(ScimProfile, Timestamp, Timestamp)>>;
    /// Writes the profile, making it at `inserted_at` or replacing it; a `userName` another
    /// profile has is `Invalid` on `userName` ([`TAKEN`]).
    async fn put_scim_profile(
        &mut self,
        user_id: Uuid,
        profile: &ScimProfile,
        inserted_at: Timestamp,
        now: Timestamp,
    ) -> Result<()>;
    /// Ends the link; whether there was one.
    async fn delete_scim_profile(&mut self, user_id: Uuid) -> Result<bool>;
}

/// `POST /Users`: a new unprivileged user without a password, or the user that has the
/// email already when no SCIM profile is linked to it (SCIM then keeps that user). A user
/// with that email and a profile is `Invalid` on `emails` ([`TAKEN`]).
pub async fn create_in(tx: &mut dyn ScimTx, write: &ScimUserWrite, now: Timestamp) -> Result<ScimUser> {
    if !write.active {
        // Disabling a user it links may need the admins: locked first, the global lock order.
        tx.lock_admins().await?;
    }
    let user = match tx.lock_user_by_email(&email_key(&write.email)).await? {
        Some(existing) => {
            if tx.scim_profile(existing.id).await?.is_some() {
                return Err(DomainError::invalid("emails", TAKEN));
            }
            let update = activity(&existing, write.active);
            update_in(tx, existing.id, &update, now).await?
        }
        None => {
            let mut user = User::new(write.email.clone(), Role::Unprivileged, None, now);
            if !write.active {
                (user.disabled_at, user.disabled_by) = (Some(now), Some(DisabledBy::Scim));
            }
            tx.insert_user(&user).await?;
            tx.record(changes::user_created(&user)).await?;
            user
        }
    };
    tx.put_scim_profile(user.id, &write.profile, now, now).await?;
    tx.record(profile_entry("user.provisioned", user.id, None, &write.profile)).await?;
    Ok(ScimUser { user, profile: write.profile.clone(), inserted_at: now, updated_at: now })
}

/// `PUT /Users/{id}` (and a `PATCH`, applied onto the user as it is): the email, being
/// active and the profile become `write`'s. `NotFound` when the user has no profile.
pub async fn replace_in(tx: &mut dyn ScimTx, id: Uuid, write: &ScimUserWrite, now: Timestamp) -> Result<ScimUser> {
    let (profile, inserted_at, updated_at) = tx.scim_profile(id).await?.ok_or(DomainError::NotFound)?;
    let mut update = if write.active {
        // Enabling locks no admin: the user first, then nothing else.
        let stored = tx.lock_user(id).await?.ok_or(DomainError::NotFound)?;
        activity(&stored, true)
    } else {
        activity_off()
    };
    update.email = Some(write.email.clone());
    let user = update_in(tx, id, &update, now).await?;
    let updated_at = if profile == write.profile {
        updated_at
    } else {
        tx.put_scim_profile(id, &write.profile, inserted_at, now).await?;
        tx.record(profile_entry("user.provisioned", id, Some(&profile), &write.profile)).await?;
        now
    };
    Ok(ScimUser { user, profile: write.profile.clone(), inserted_at, updated_at })
}

/// `DELETE /Users/{id}`: the user is disabled by SCIM (sessions end, devices leave the
/// gateways) and the link ends; the user and its devices stay for an administrator to
/// delete. `NotFound` when the user has no profile.
pub async fn delete_in(tx: &mut dyn ScimTx, id: Uuid, now: Timestamp) -> Result<User> {
    let (profile, _, _) = tx.scim_profile(id).await?.ok_or(DomainError::NotFound)?;
    let user = update_in(tx, id, &activity_off(), now).await?;
    tx.delete_scim_profile(id).await?;
    let entry = profile_entry("user.deprovisioned", id, Some(&profile), &ScimProfile::default());
    tx.record(entry).await?;
    Ok(user)
}

/// The update that makes `user` active or not as the directory says: disabling by SCIM, or
/// enabling a user only SCIM had disabled.
fn activity(user: &User, active: bool) -> UserUpdate {
    match (active, &user.disabled_by) {
        (false, _) => activity_off(),
        (true, Some(DisabledBy::Scim)) => UserUpdate { disabled: Some(false), ..UserUpdate::default() },
        (true, _) => UserUpdate::default(),
    }
}

/// Disabling by SCIM, never the last enabled admin (a user disabled already keeps its first
/// reason).
fn activity_off() -> UserUpdate {
    UserUpdate {
        disabled: Some(true),
        disabled_by: Some(DisabledBy::Scim),
        keep_an_enabled_admin: true,
        ..UserUpdate::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(disabled_by: Option<DisabledBy>) -> User {
        let mut user = User::new("a@example.com".into(), Role::Unprivileged, None, Timestamp::from_secs(1));
        if disabled_by.is_some() {
            (user.disabled_at, user.disabled_by) = (Some(Timestamp::from_secs(2)), disabled_by);
        }
        user
    }

    #[test]
    fn the_directory_enables_only_a_user_it_disabled() {
        assert_eq!(activity(&user(Some(DisabledBy::Scim)), true).disabled, Some(false));
        assert_eq!(activity(&user(Some(DisabledBy::Admin)), true).disabled, None, "an admin's disable stays");
        assert_eq!(activity(&user(None), true).disabled, None);
        let off = activity(&user(Some(DisabledBy::Admin)), false);
        assert_eq!(
            (off.disabled, off.disabled_by, off.keep_an_enabled_admin),
            (Some(true), Some(DisabledBy::Scim), true)
        );
    }
}
