//! Updating and deleting users, with the last-admin rule.

use crate::audit::changes;
use crate::error::Result;
use crate::model::{Role, User, UserUpdate};
use crate::{DomainError, Timestamp};
use uuid::Uuid;

use super::tx::{finish, Begin, WriteTx};
use super::LAST_ADMIN;

/// Why disabling a user through the API is refused when it would leave no admin enabled.
pub const LAST_ENABLED_ADMIN: &str = "cannot disable the last admin";

/// Applies `update`; `updated_at` moves only when a stored value changes.
pub async fn update_user(db: &dyn Begin, id: Uuid, update: &UserUpdate, now: Timestamp) -> Result<User> {
    let mut tx = db.begin().await?;
    let result = update_in(tx.as_mut(), id, update, now).await;
    finish(tx, result).await
}

/// The body of [`update_user`], in the caller's transaction.
pub async fn update_in(tx: &mut dyn WriteTx, id: Uuid, update: &UserUpdate, now: Timestamp) -> Result<User> {
    // Admins are locked before the target (the global lock order), and only when the
    // update could remove one.
    let demoting = update.role == Some(Role::Unprivileged);
    let guarding = update.keep_an_enabled_admin && update.disabled == Some(true);
    let admins = if demoting || guarding { tx.lock_admins().await? } else { Vec::new() };
    let stored = tx.lock_user(id).await?.ok_or(DomainError::NotFound)?;
    if demoting && stored.role == Role::Admin && is_last_admin(&admins, id) {
        return Err(DomainError::invalid("base", LAST_ADMIN));
    }
    if guarding
        && stored.role == Role::Admin
        && stored.disabled_at.is_none()
        && !other_admin_enabled(tx, &admins, id).await?
    {
        return Err(DomainError::invalid("base", LAST_ENABLED_ADMIN));
    }
    let Some(changed) = apply(&stored, update, now) else { return Ok(stored) };
    tx.update_user(&changed).await?;
    // A new password, or disabling, signs the user out everywhere (docs/design/sign-in.md,
    // "Sign-in and sessions"), but for the session that changed its own password.
    let disabling = stored.disabled_at.is_none() && changed.disabled_at.is_some();
    if update.password_hash.is_some() || disabling {
        let keep = if disabling { None } else { update.keep_session };
        tx.delete_sessions(id, keep).await?;
    }
    if let Some(entry) = changes::user_updated(&stored, &changed) {
        tx.record(entry).await?;
    }
    Ok(changed)
}

/// Whether an admin other than `id`, among the locked `admins`, is not disabled.
async fn other_admin_enabled(tx: &mut dyn WriteTx, admins: &[Uuid], id: Uuid) -> Result<bool> {
    for admin in admins.iter().filter(|admin| **admin != id) {
        if tx.lock_user(*admin).await?.is_some_and(|u| u.disabled_at.is_none()) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Deletes a user with its devices (whose addresses are released) and tokens.
pub async fn delete_user(db: &dyn Begin, id: Uuid) -> Result<()> {
    let mut tx = db.begin().await?;
    let result = delete_in(tx.as_mut(), id).await;
    finish(tx, result).await
}

/// The body of [`delete_user`], in the caller's transaction.
pub async fn delete_in(tx: &mut dyn WriteTx, id: Uuid) -> Result<()> {
    let admins = tx.lock_admins().await?;
    let stored = tx.lock_user(id).await?.ok_or(DomainError::NotFound)?;
    if stored.role == Role::Admin && is_last_admin(&admins, id) {
        return Err(DomainError::invalid("base", LAST_ADMIN));
    }
    let belongings = tx.belongings(id).await?;
    if !tx.delete_user(id).await? {
        return Err(DomainError::NotFound);
    }
    tx.record(changes::user_deleted(&stored, &belongings)).await
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
        Some(true) if user.disabled_at.is_none() => {
            user.disabled_at = Some(now);
            user.disabled_by.clone_from(&update.disabled_by);
        }
        Some(false) => (user.disabled_at, user.disabled_by) = (None, None),
        Some(true) | None => {}
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
    use crate::model::DisabledBy;
    use crate::rules::fake::FakeDb;

    fn user() -> User {
        User {
            id: Uuid::nil(),
            email: "a@example.com".into(),
            role: Role::Admin,
            password_hash: None,
            disabled_at: None,
            disabled_by: None,
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
    fn disabling_keeps_the_first_reason_and_enabling_clears_it() {
        let (first, later) = (Timestamp::from_micros(5), Timestamp::from_micros(9));
        let by = |who: DisabledBy| UserUpdate { disabled: Some(true), disabled_by: Some(who), ..UserUpdate::default() };
        let provider = DisabledBy::IdentityProvider("google".into());
        let disabled = apply(&user(), &by(provider.clone()), first).unwrap();
        assert_eq!(disabled.disabled_by, Some(provider));
        assert_eq!(apply(&disabled, &by(DisabledBy::Admin), later), None, "the first reason stays");
        let enable = UserUpdate { disabled: Some(false), disabled_by: Some(DisabledBy::Cli), ..UserUpdate::default() };
        let enabled = apply(&disabled, &enable, later).unwrap();
        assert_eq!((enabled.disabled_at, enabled.disabled_by), (None, None));
        let renamed = UserUpdate {
            email: Some("b@example.com".into()),
            disabled_by: Some(DisabledBy::Cli),
            ..UserUpdate::default()
        };
        assert_eq!(apply(&user(), &renamed, later).unwrap().disabled_by, None, "a reason alone disables nothing");
    }

    #[test]
    fn last_admin() {
        let (a, b) = (Uuid::from_u128(1), Uuid::from_u128(2));
        assert!(is_last_admin(&[a], a));
        assert!(is_last_admin(&[], a));
        assert!(!is_last_admin(&[a, b], a));
    }

    fn base(err: DomainError) -> Vec<String> {
        let DomainError::Invalid(errors) = err else { panic!("not Invalid: {err:?}") };
        errors.get("base").expect("a base error").to_vec()
    }

    fn demote() -> UserUpdate {
        UserUpdate { role: Some(Role::Unprivileged), ..UserUpdate::default() }
    }

    #[tokio::test]
    async fn the_last_admin_can_be_neither_demoted_nor_deleted() {
        let db = FakeDb::default();
        let (admin, user) = (db.add_user(Role::Admin), db.add_user(Role::Unprivileged));
        let now = Timestamp::from_micros(9);
        assert_eq!(base(update_user(&db, admin, &demote(), now).await.unwrap_err()), [LAST_ADMIN]);
        assert_eq!(base(delete_user(&db, admin).await.unwrap_err()), [LAST_ADMIN]);
        assert_eq!(db.state().users[&admin].role, Role::Admin, "nothing changed");

        delete_user(&db, user).await.unwrap();
        let second = db.add_user(Role::Admin);
        assert_eq!(update_user(&db, admin, &demote(), now).await.unwrap().role, Role::Unprivileged);
        assert_eq!(base(delete_user(&db, second).await.unwrap_err()), [LAST_ADMIN]);
        delete_user(&db, admin).await.unwrap();
        assert!(matches!(delete_user(&db, admin).await, Err(DomainError::NotFound)));
    }

    fn disable(guarded: bool) -> UserUpdate {
        UserUpdate { disabled: Some(true), keep_an_enabled_admin: guarded, ..UserUpdate::default() }
    }

    #[tokio::test]
    async fn the_api_cannot_disable_the_last_enabled_admin_the_operator_can() {
        let db = FakeDb::default();
        let (admin, second) = (db.add_user(Role::Admin), db.add_user(Role::Admin));
        let now = Timestamp::from_micros(9);
        assert!(update_user(&db, second, &disable(true), now).await.unwrap().disabled_at.is_some());
        assert_eq!(base(update_user(&db, admin, &disable(true), now).await.unwrap_err()), [LAST_ENABLED_ADMIN]);
        assert_eq!(db.state().users[&admin].disabled_at, None, "nothing changed");
        let user = db.add_user(Role::Unprivileged);
        assert!(update_user(&db, user, &disable(true), now).await.unwrap().disabled_at.is_some());
        let unguarded = update_user(&db, admin, &disable(false), now).await.unwrap();
        assert_eq!(unguarded.disabled_at, Some(now), "the operator may disable the last admin");
    }

    /// Sessions of `owners`, in order, the n-th with id n.
    fn sessions_of(owners: &[Uuid]) -> Vec<(Uuid, Uuid)> {
        owners.iter().zip(1..).map(|(owner, n)| (*owner, Uuid::from_u128(n))).collect()
    }

    /// The owners of the sessions left.
    fn owners(db: &FakeDb) -> Vec<Uuid> {
        db.state().sessions.iter().map(|(owner, _)| *owner).collect()
    }

    #[tokio::test]
    async fn disabling_ends_every_session_of_its_user() {
        let db = FakeDb::default();
        let (user, other) = (db.add_user(Role::Unprivileged), db.add_user(Role::Admin));
        db.state().sessions = sessions_of(&[user, other, user]);
        let now = Timestamp::from_micros(9);
        let keeping = UserUpdate { keep_session: Some(Uuid::from_u128(1)), ..disable(true) };
        update_user(&db, user, &keeping, now).await.unwrap();
        assert_eq!(owners(&db), [other], "only the user's sessions end, every one of them");
        let enable = UserUpdate { disabled: Some(false), ..UserUpdate::default() };
        update_user(&db, user, &enable, now).await.unwrap();
        db.state().sessions = sessions_of(&[user, other]);
        update_user(&db, other, &enable, now).await.unwrap();
        assert_eq!(owners(&db), [user, other], "enabling ends none");
    }

    #[tokio::test]
    async fn a_new_password_ends_every_session_of_its_user() {
        let db = FakeDb::default();
        let (user, other) = (db.add_user(Role::Unprivileged), db.add_user(Role::Admin));
        db.state().sessions = sessions_of(&[user, other, user]);
        let now = Timestamp::from_micros(9);
        let email = UserUpdate { email: Some("new@example.com".into()), ..UserUpdate::default() };
        update_user(&db, user, &email, now).await.unwrap();
        assert_eq!(owners(&db), [user, other, user], "another change keeps the sessions");

        let password = UserUpdate { password_hash: Some("h".into()), ..UserUpdate::default() };
        let changed = update_user(&db, user, &password, now).await.unwrap();
        assert_eq!(changed.password_hash.as_deref(), Some("h"));
        assert_eq!(owners(&db), [other], "only the user's sessions end");
    }

    #[tokio::test]
    async fn a_new_password_may_keep_the_session_that_set_it() {
        let db = FakeDb::default();
        let (user, other) = (db.add_user(Role::Unprivileged), db.add_user(Role::Admin));
        db.state().sessions = sessions_of(&[user, other, user]);
        let keep = Uuid::from_u128(3);
        let password =
            UserUpdate { password_hash: Some("h".into()), keep_session: Some(keep), ..UserUpdate::default() };
        update_user(&db, user, &password, Timestamp::from_micros(9)).await.unwrap();
        assert_eq!(db.state().sessions, [(other, Uuid::from_u128(2)), (user, keep)]);
    }

    #[tokio::test]
    async fn an_update_that_changes_nothing_writes_nothing() {
        let db = FakeDb::default();
        let user = db.add_user(Role::Unprivileged);
        let stored = db.state().users[&user].clone();
        let same = UserUpdate { email: Some(stored.email.clone()), ..UserUpdate::default() };
        assert_eq!(update_user(&db, user, &same, Timestamp::from_micros(9)).await.unwrap(), stored);
        assert_eq!(db.state().users[&user].updated_at, stored.updated_at);
        assert!(matches!(
            update_user(&db, Uuid::nil(), &same, Timestamp::from_micros(9)).await,
            Err(DomainError::NotFound)
        ));
    }
}
