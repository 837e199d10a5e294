//! Personal API tokens through `/v0/tokens` (and the command line): create with a name and
//! a lifetime, list with the last use, revoke. See docs/api.md, "API tokens".

use uuid::Uuid;
use zeroize::Zeroizing;

use super::{Domain, Principal};
use crate::crypto::new_token;
use crate::error::{DomainError, Result};
use crate::input::NewToken;
use crate::model::ApiToken;
use crate::time::Timestamp;
use crate::validate::input::Check;

/// Longest token name, in characters.
pub const MAX_TOKEN_NAME: usize = 64;
/// Most tokens one user may hold (expired ones count until revoked).
pub const MAX_TOKENS_PER_USER: usize = 50;

impl Domain {
    /// Creates a token for the caller; the secret is returned once and never stored.
    pub async fn create_token_as(&self, actor: &Principal, input: &NewToken) -> Result<(ApiToken, Zeroizing<String>)> {
        let user_id = actor.user_id.ok_or(DomainError::Forbidden)?;
        self.issue_token(user_id, input).await
    }

    /// The tokens of `user_id` (the caller's own when `None`); another user's are an
    /// admin's to see. An unknown user is `NotFound`.
    pub async fn list_tokens_as(&self, actor: &Principal, user_id: Option<Uuid>) -> Result<Vec<ApiToken>> {
        let user_id = match user_id {
            Some(id) if actor.user_id != Some(id) => {
                actor.require_admin()?;
                self.store().user_by_id(id).await?.ok_or(DomainError::NotFound)?.id
            }
            Some(id) => id,
            None => actor.user_id.ok_or(DomainError::Forbidden)?,
        };
        self.store().list_tokens(user_id).await
    }

    /// Revokes a token: the caller's own, or any for an admin. Another user's token is
    /// `NotFound` to a non-admin, as if it did not exist.
    pub async fn revoke_token_as(&self, actor: &Principal, id: Uuid) -> Result<()> {
        if !actor.is_admin() {
            let user_id = actor.user_id.ok_or(DomainError::NotFound)?;
            let own = self.store().list_tokens(user_id).await?;
            if !own.iter().any(|t| t.id == id) {
                return Err(DomainError::NotFound);
            }
        }
        if !self.store().delete_token(id).await? {
            return Err(DomainError::NotFound);
        }
        tracing::info!(token.id = %id, "API token revoked");
        Ok(())
    }

    /// Validates `input` and stores a new token of `user_id`.
    pub(crate) async fn issue_token(&self, user_id: Uuid, input: &NewToken) -> Result<(ApiToken, Zeroizing<String>)> {
        let (name, days) = self.check_new_token(input)?;
        if self.store().list_tokens(user_id).await?.len() >= MAX_TOKENS_PER_USER {
            let message = format!("a user may have at most {MAX_TOKENS_PER_USER} tokens; revoke one first");
            return Err(DomainError::invalid("base", message));
        }
        let (secret, hash) = new_token();
        let now = Timestamp::now();
        let token = ApiToken {
            id: Uuid::now_v7(),
            user_id,
            name,
            token_hash: hash.to_vec(),
            inserted_at: now,
            expires_at: now.plus_days(days),
            last_used_at: None,
        };
        self.store().insert_token(&token).await?;
        tracing::info!(token.id = %token.id, user.id = %user_id, days, "API token created");
        Ok((token, secret))
    }

    /// The trimmed name and the lifetime in days, or every error of the request.
    fn check_new_token(&self, input: &NewToken) -> Result<(String, i64)> {
        let mut c = Check::new(&input.wrong_types);
        let name = match c.trimmed("name", input.name.as_deref()) {
            Some(None) => {
                c.add("name", "can't be blank");
                String::new()
            }
            Some(Some(n)) if n.chars().count() > MAX_TOKEN_NAME => {
                c.add("name", format!("should be at most {MAX_TOKEN_NAME} character(s)"));
                String::new()
            }
            Some(Some(n)) => n.to_owned(),
            None => String::new(),
        };
        let max = i64::from(self.settings().token_max_days);
        let default = i64::from(self.settings().token_days).min(max);
        let days = if c.wrong_type("expires_in_days") { default } else { input.expires_in_days.unwrap_or(default) };
        if !(1..=max).contains(&days) {
            c.add("expires_in_days", format!("must be between 1 and {max}"));
        }
        c.finish((name, days))
    }
}
