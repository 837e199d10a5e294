//! Users: list, show, create, update, delete (docs/api.md section 4).

use uuid::Uuid;

use super::{Domain, Principal};
use crate::crypto::hash_password;
use crate::error::{DomainError, Result};
use crate::input::{NewUser, UserChanges};
use crate::model::{email_key, DisabledBy, User, UserUpdate};
use crate::time::Timestamp;
use crate::validate::user as rules;

/// Why an admin's request to disable itself is refused.
pub const CANNOT_DISABLE_ONESELF: &str = "You cannot disable yourself";

impl Domain {
    pub async fn list_users(&self, actor: &Principal) -> Result<Vec<User>> {
        actor.require_admin()?;
        self.store().list_users().await
    }

    /// `key` is a user's UUID or email (case-insensitive).
    pub async fn get_user(&self, actor: &Principal, key: &str) -> Result<User> {
        actor.require_admin()?;
        self.find_user(key).await
    }

    pub async fn find_user(&self, key: &str) -> Result<User> {
        let found = match Uuid::parse_str(key) {
            Ok(id) => self.store().user_by_id(id).await?,
            Err(_) => self.user_with_email(key).await?,
        };
        found.ok_or(DomainError::NotFound)
    }

    /// The user with `email`, matched case-insensitively, if any. An email with a control
    /// character matches nobody: no stored email has one (and PostgreSQL text cannot hold NUL).
    pub async fn user_with_email(&self, email: &str) -> Result<Option<User>> {
        if email.chars().any(char::is_control) || email.trim().is_empty() {
            return Ok(None);
        }
        self.store().user_by_email(&email_key(email)).await
    }

    pub async fn create_user(&self, actor: &Principal, input: &NewUser) -> Result<User> {
        actor.require_admin()?;
        let input = rules::create(input)?;
        let password_hash = match input.password {
            Some(password) => Some(self.passwords.run(move || hash_password(&password)).await??),
            None => None,
        };
        let now = Timestamp::now();
        let user = User::new(input.email, input.role, password_hash, now);
        self.store().insert_user(&user).await?;
        tracing::info!(user.id = %user.id, role = user.role.as_str(), "user created");
        Ok(user)
    }

    pub async fn update_user(&self, actor: &Principal, key: &str, changes: &UserChanges) -> Result<User> {
        actor.require_admin()?;
        let target = self.find_user(key).await?;
        let edit = rules::update(changes)?;
        let own = actor.user_id == Some(target.id);
        if edit.role.is_some_and(|role| own && role != target.role) {
            return Err(DomainError::invalid("role", "You cannot change your own role"));
        }
        let password_hash = match edit.password {
            Some(password) => Some(self.passwords.run(move || hash_password(&password)).await??),
            None => None,
        };
        let update = UserUpdate { email: edit.email, role: edit.role, password_hash, ..UserUpdate::default() };
        self.store().update_user(target.id, &update, Timestamp::now()).await
    }

    /// Disables (`disabled`) or enables the user `key` (UUID or email): the one use case
    /// behind `POST /v0/users/{id}/disable|enable`, the admin console and `ferrozone user
    /// disable|enable` (docs/design/users.md, "Users and admins"). Disabling ends the
    /// user's sessions in the same transaction and its devices leave the peers. An admin
    /// cannot disable itself, nor the last admin that is not disabled, and is recorded as
    /// [`DisabledBy::Admin`]; the local operator ([`Principal::operator`]) may disable
    /// anyone and is [`DisabledBy::Cli`]. Idempotent: disabling a disabled user keeps its
    /// first `disabled_at` and reason, enabling an enabled one changes nothing. Returns
    /// the user and whether anything changed.
    pub async fn set_user_disabled(&self, actor: &Principal, key: &str, disabled: bool) -> Result<(User, bool)> {
        actor.require_admin()?;
        let target = self.find_user(key).await?;
        if target.disabled_at.is_some() == disabled {
            return Ok((target, false));
        }
        if disabled && actor.user_id == Some(target.id) {
            return Err(DomainError::invalid("base", CANNOT_DISABLE_ONESELF));
        }
        let operator = actor.user_id.is_none();
        let update = UserUpdate {
            disabled: Some(disabled),
            disabled_by: Some(if operator { DisabledBy::Cli } else { DisabledBy::Admin }),
            keep_an_enabled_admin: !operator,
            ..UserUpdate::default()
        };
        let user = self.store().update_user(target.id, &update, Timestamp::now()).await?;
        let changed = user.disabled_at != target.disabled_at;
        if changed {
            self.disabled_state_set(&user);
        }
        Ok((user, changed))
    }

    /// After a user was disabled or enabled: its peers leave or return.
    fn disabled_state_set(&self, user: &User) {
        self.peers_changed();
        let by = user.disabled_by.as_ref().map(DisabledBy::as_str);
        tracing::info!(user.id = %user.id, disabled = user.disabled_at.is_some(), disabled_by = by, "user disabled state set");
    }

    pub async fn delete_user(&self, actor: &Principal, key: &str) -> Result<()> {
        actor.require_admin()?;
        let target = self.find_user(key).await?;
        self.store().delete_user(target.id).await?;
        self.peers_changed();
        tracing::info!(user.id = %target.id, "user deleted");
        Ok(())
    }
}
