//! Updating and deleting users, with the last-admin rule.

use ferrozone_domain::error::Result;
use ferrozone_domain::model::{Role, User, UserUpdate};
use ferrozone_domain::{DomainError, Timestamp};
use uuid::Uuid;

use crate::tx::{finish, Begin, WriteTx};

const LAST_ADMIN: &str = "cannot remove the last admin";

/// Applies `update`; `updated_at` moves only when a stored value changes.
pub(crate) async fn update_user(db: &dyn Begin, id: Uuid, update: &UserUpdate, now: Timestamp) -> Result<User> {
    let mut tx = db.begin().await?;
    let result = update_in(tx.as_mut(), id, update, now).await;
    finish(tx, result).await
}

pub(crate) async fn update_in(tx: &mut dyn WriteTx, id: Uuid, update: &UserUpdate, now: Timestamp) -> Result<User> {
    // Admins are locked before the target (the global lock order), and only when the
    // update could remove one.
    let demoting = update.role == Some(Role::Unprivileged);
    let admins = if demoting { tx.lock_admins().await? } else { Vec::new() };
    let stored = tx.lock_user(id).await?.ok_or(DomainError::NotFound)?;
    if demoting && stored.role == Role::Admin && is_last_admin(&admins, id) {
        return Err(DomainError::invalid("base", LAST_ADMIN));
    }
    let Some(changed) = apply(&stored, update, now) else { return Ok(stored) };
    tx.update_user(&changed).await?;
    // A new password signs the user out everywhere (docs/api.md section 8).
    if update.password_hash.is_some() {
        tx.delete_sessions(id).await?;
    }
    Ok(changed)
}

/// Deletes a user with its devices (whose addresses are released) and tokens.
pub(crate) async fn delete_user(db: &dyn Begin, id: Uuid) -> Result<()> {
    let mut tx = db.begin().await?;
    let result = delete_in(tx.as_mut(), id).await;
    finish(tx, result).await
}

pub(crate) async fn delete_in(tx: &mut dyn WriteTx, id: Uuid) -> Result<()> {
    let admins = tx.lock_admins().await?;
    let stored = tx.lock_user(id).await?.ok_or(DomainError::NotFound)?;
    if stored.role == Role::Admin && is_last_admin(&admins, id) {
        return Err(DomainError::invalid("base", LAST_ADMIN));
    }
    if !tx.delete_user(id).await? {
        return Err(DomainError::NotFound);
    }
    Ok(())
}

/// Whether no admin other than `id` is left.
fn is_last_admin(admins: &[Uuid], id: Uuid) -> bool {
    !admins.iter().any(|admin| *admin != id)
}

/// The user after `update`, or `None` when nothing stored would change. A new password
/// hash always counts as a change (the same password hashes differently each time).
fn apply(stored: &User, update: &UserUpdate, now: Timestamp) -> Option<User> {
    let mut user = stored.clone();
    if let Some(email) = &update.email {
        user.email.clone_from(email);
    }
    if let Some(role) = update.role {
        user.role = role;
    }
    match update.disabled {
        Some(true) => user.disabled_at = user.disabled_at.or(Some(now)),
        Some(false) => user.disabled_at = None,
        None => {}
    }
    let new_password = update.password_hash.is_some();
    if new_password {
        user.password_hash.clone_from(&update.password_hash);
    }
    if user == *stored && !new_password {
        return None;
    }
    user.updated_at = now;
    Some(user)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user() -> User {
        User {
            id: Uuid::nil(),
            email: "a@example.com".into(),
            role: Role::Admin,
            password_hash: None,
            disabled_at: None,
            last_signed_in_at: None,
            last_signed_in_method: None,
            inserted_at: Timestamp::from_micros(1),
            updated_at: Timestamp::from_micros(1),
        }
    }

    #[test]
    fn only_real_changes_count() {
        let now = Timestamp::from_micros(9);
        assert_eq!(apply(&user(), &UserUpdate::default(), now), None);
        let same = UserUpdate { email: Some("a@example.com".into()), role: Some(Role::Admin), ..UserUpdate::default() };
        assert_eq!(apply(&user(), &same, now), None);
        let email = UserUpdate { email: Some("A@example.com".into()), ..UserUpdate::default() };
        let changed = apply(&user(), &email, now).unwrap();
        assert_eq!((changed.email.as_str(), changed.updated_at), ("A@example.com", now));
        let password = UserUpdate { password_hash: Some("h".into()), ..UserUpdate::default() };
        assert_eq!(apply(&user(), &password, now).unwrap().password_hash.as_deref(), Some("h"));
    }

    #[test]
    fn disabling_keeps_the_first_timestamp() {
        let (first, later) = (Timestamp::from_micros(5), Timestamp::from_micros(9));
        let disable = UserUpdate { disabled: Some(true), ..UserUpdate::default() };
        let disabled = apply(&user(), &disable, first).unwrap();
        assert_eq!((disabled.disabled_at, disabled.updated_at), (Some(first), first));
        assert_eq!(apply(&disabled, &disable, later), None, "already disabled: no change");
        let enable = UserUpdate { disabled: Some(false), ..UserUpdate::default() };
        let enabled = apply(&disabled, &enable, later).unwrap();
        assert_eq!((enabled.disabled_at, enabled.updated_at), (None, later));
        assert_eq!(apply(&enabled, &enable, later), None, "already enabled: no change");
    }

    #[test]
    fn last_admin() {
        let (a, b) = (Uuid::from_u128(1), Uuid::from_u128(2));
        assert!(is_last_admin(&[a], a));
        assert!(is_last_admin(&[], a));
        assert!(!is_last_admin(&[a, b], a));
    }
}
