//! Users: list, show, create, update, delete (docs/api.md section 4).

use uuid::Uuid;

use super::{Domain, Principal};
use crate::crypto::hash_password;
use crate::error::{DomainError, Result};
use crate::input::{NewUser, UserChanges};
use crate::model::{email_key, DisabledBy, User, UserUpdate};
use crate::time::Timestamp;
use crate::validate::user as rules;

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
        if own && edit.disabled == Some(true) && target.disabled_at.is_none() {
            return Err(DomainError::invalid("disabled_at", "You cannot disable yourself"));
        }
        let password_hash = match edit.password {
            Some(password) => Some(self.passwords.run(move || hash_password(&password)).await??),
            None => None,
        };
        let update = UserUpdate {
            email: edit.email,
            role: edit.role,
            password_hash,
            disabled: edit.disabled,
            disabled_by: Some(DisabledBy::Admin),
            keep_an_enabled_admin: true,
            keep_session: None,
        };
        let user = self.store().update_user(target.id, &update, Timestamp::now()).await?;
        if user.disabled_at != target.disabled_at {
            self.disabled_state_set(&user);
        }
        Ok(user)
    }

    /// Disables (`disabled`) or enables the user with `email`, for the local operator:
    /// a disabled user's tokens are refused and its sessions end (the same store rule as
    /// [`Domain::update_user`]). Unlike an update through the API, any user may be
    /// disabled, the last admin included. Returns the user and whether anything changed;
    /// disabling a disabled user keeps its original `disabled_at` and reason; a user
    /// disabled here is [`DisabledBy::Cli`].
    pub async fn set_user_disabled(&self, email: &str, disabled: bool) -> Result<(User, bool)> {
        let target = self.user_with_email(email).await?.ok_or(DomainError::NotFound)?;
        if target.disabled_at.is_some() == disabled {
            return Ok((target, false));
        }
        let update =
            UserUpdate { disabled: Some(disabled), disabled_by: Some(DisabledBy::Cli), ..UserUpdate::default() };
        let user = self.store().update_user(target.id, &update, Timestamp::now()).await?;
        self.disabled_state_set(&user);
        Ok((user, true))
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
