//! SCIM provisioning's use cases (docs/design/scim.md): the provisioning tokens, which an
//! admin creates and revokes, and what a directory does with one. Every write that changes
//! who is active or who is a member wakes the data plane after its commit, so a deactivated
//! user's devices leave the gateways as a disabled user's do.

use uuid::Uuid;
use zeroize::Zeroizing;

use super::{Domain, Principal};
use crate::crypto::{hash_token, prefixed_secret};
use crate::error::{DomainError, Result};
use crate::group;
use crate::model::{email_key, User};
use crate::scim::{
    text_key, GroupFilter, Listed, MembersChanged, Page, ScimGroup, ScimGroupWrite, ScimMember, ScimToken, ScimUser,
    ScimUserWrite, UserFilter, MAX_TEXT_LEN, SOURCE, TOKEN_PREFIX,
};
use crate::time::Timestamp;
use crate::validate::user::is_email;
use crate::validate::CANT_BE_BLANK;

/// How often a token's `last_used_at` is written at most: once a minute is what an
/// operator needs to tell a token in use from a forgotten one, and a directory pushing
/// thousands of changes writes it once.
const TOUCH_EVERY_MICROS: i64 = 60_000_000;

impl Domain {
    /// A new provisioning token named `name`, and its secret (shown once, never stored).
    pub async fn create_scim_token(&self, actor: &Principal, name: &str) -> Result<(ScimToken, Zeroizing<String>)> {
        actor.require_admin()?;
        let name = name.trim();
        if name.is_empty() {
            return Err(DomainError::invalid("name", CANT_BE_BLANK));
        }
        if name.chars().count() > MAX_TEXT_LEN {
            return Err(DomainError::invalid("name", crate::validate::at_most(MAX_TEXT_LEN)));
        }
        let secret = prefixed_secret(TOKEN_PREFIX);
        let token = ScimToken {
            id: Uuid::now_v7(),
            name: name.to_owned(),
            token_hash: hash_token(&secret).to_vec(),
            created_by: actor.user_id,
            inserted_at: Timestamp::now(),
            last_used_at: None,
            revoked_at: None,
        };
        self.store().insert_scim_token(&token).await?;
        tracing::info!(scim_token.id = %token.id, "provisioning token created");
        Ok((token, secret))
    }

    pub async fn list_scim_tokens(&self, actor: &Principal) -> Result<Vec<ScimToken>> {
        actor.require_admin()?;
        self.store().list_scim_tokens().await
    }

    /// Revokes a token: from the next request on, it authenticates nothing.
    pub async fn revoke_scim_token(&self, actor: &Principal, id: Uuid) -> Result<ScimToken> {
        actor.require_admin()?;
        let token = self.store().revoke_scim_token(id, Timestamp::now()).await?.ok_or(DomainError::NotFound)?;
        tracing::info!(scim_token.id = %id, "provisioning token revoked");
        Ok(token)
    }

    /// The unrevoked token whose secret is `secret`; `None` for anything else.
    pub async fn scim_token(&self, secret: &str) -> Result<Option<ScimToken>> {
        if !secret.starts_with(TOKEN_PREFIX) {
            return Ok(None);
        }
        let Some(token) = self.store().scim_token_by_hash(&hash_token(secret)).await? else { return Ok(None) };
        if token.revoked_at.is_some() {
            return Ok(None);
        }
        let now = Timestamp::now();
        if token.last_used_at.is_none_or(|used| now.micros() - used.micros() >= TOUCH_EVERY_MICROS) {
            self.store().touch_scim_token(token.id, now).await?;
        }
        Ok(Some(token))
    }

    pub async fn scim_users(&self, filter: &UserFilter, page: Page) -> Result<Listed<ScimUser>> {
        if *filter == UserFilter::All {
            let every = self.every_scim_user(page).await?;
            return Ok(Listed { total: every.total, resources: every.resources });
        }
        self.store().scim_users(filter, page).await
    }

    pub async fn scim_user(&self, id: Uuid) -> Result<ScimUser> {
        self.store().scim_user(id).await?.ok_or(DomainError::NotFound)
    }

    /// Makes the user, or links the one with its email (docs/design/scim.md, "Users").
    pub async fn create_scim_user(&self, write: &ScimUserWrite) -> Result<ScimUser> {
        checked(write)?;
        let user = self.store().create_scim_user(write, Timestamp::now()).await?;
        self.peers_changed();
        tracing::info!(user.id = %user.user.id, "user provisioned");
        Ok(user)
    }

    pub async fn replace_scim_user(&self, id: Uuid, write: &ScimUserWrite) -> Result<ScimUser> {
        checked(write)?;
        let user = self.store().replace_scim_user(id, write, Timestamp::now()).await?;
        self.peers_changed();
        Ok(user)
    }

    /// Disables the user and ends its link (it is no SCIM user any more).
    pub async fn delete_scim_user(&self, id: Uuid) -> Result<User> {
        let user = self.store().delete_scim_user(id, Timestamp::now()).await?;
        self.peers_changed();
        tracing::info!(user.id = %id, "user deprovisioned");
        Ok(user)
    }

    pub async fn scim_groups(&self, filter: &GroupFilter, page: Page) -> Result<Listed<ScimGroup>> {
        self.store().scim_groups(filter, page).await
    }

    pub async fn scim_group(&self, id: Uuid) -> Result<ScimGroup> {
        self.store().scim_group(id).await?.ok_or(DomainError::NotFound)
    }

    /// The SCIM members of each of `groups`, as `(group, member)` pairs.
    pub async fn scim_members(&self, groups: &[Uuid]) -> Result<Vec<(Uuid, ScimMember)>> {
        if groups.is_empty() {
            return Ok(Vec::new());
        }
        self.store().scim_members(groups).await
    }

    /// Makes the group `name` (or takes over the group of that name SCIM does not keep yet)
    /// with its members.
    pub async fn create_scim_group(
        &self,
        name: &str,
        external_id: Option<&str>,
        members: &[Uuid],
    ) -> Result<(ScimGroup, MembersChanged)> {
        let name = checked_group_name(name)?;
        let group = group::from_provider(&name, SOURCE, Timestamp::now());
        let (group, changed) = self.store().create_scim_group(&group, external_id, members).await?;
        if changed.any() {
            self.rules_changed();
        }
        tracing::info!(group.id = %group.group.id, "group provisioned");
        Ok((group, changed))
    }

    pub async fn write_scim_group(&self, id: Uuid, write: &ScimGroupWrite) -> Result<(ScimGroup, MembersChanged)> {
        if let Some(name) = &write.name {
            checked_group_name(name)?;
        }
        let written = self.store().write_scim_group(id, write, Timestamp::now()).await?;
        let (group, changed) = written.ok_or(DomainError::NotFound)?;
        if changed.any() {
            self.rules_changed();
        }
        Ok((group, changed))
    }

    /// Deletes a SCIM group, its memberships and its rules with it.
    pub async fn delete_scim_group(&self, id: Uuid) -> Result<()> {
        self.store().scim_group(id).await?.ok_or(DomainError::NotFound)?;
        self.store().delete_group(id).await?.ok_or(DomainError::NotFound)?;
        self.rules_changed();
        tracing::info!(group.id = %id, "group deprovisioned");
        Ok(())
    }
}

/// What the face already read, checked again where the rules live: a `userName`, an email.
fn checked(write: &ScimUserWrite) -> Result<()> {
    if write.profile.user_name.trim().is_empty() {
        return Err(DomainError::invalid("userName", CANT_BE_BLANK));
    }
    if !is_email(&write.email) || email_key(&write.email).is_empty() {
        return Err(DomainError::invalid("emails", crate::validate::user::INVALID_EMAIL));
    }
    Ok(())
}

fn checked_group_name(name: &str) -> Result<String> {
    let name = name.trim();
    if text_key(name).is_empty() {
        return Err(DomainError::invalid("displayName", CANT_BE_BLANK));
    }
    if name.chars().count() > group::MAX_NAME_LEN {
        return Err(DomainError::invalid("displayName", crate::validate::at_most(group::MAX_NAME_LEN)));
    }
    Ok(name.to_owned())
}
