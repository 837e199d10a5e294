//! What administrators see of users beyond `/v0/users`' records: pages of users with their
//! device counts, a user's sessions and what goes with a user (docs/api.md section 4), and
//! signing a user out everywhere.

use uuid::Uuid;

use super::{Domain, Principal};
use crate::error::{DomainError, Result};
use crate::model::{email_key, Session, User};
use crate::store::{Belongings, ListedUser, UserQuery};
use crate::time::Timestamp;

impl Domain {
    /// One page of users; `query.email_contains` is matched case-insensitively.
    pub async fn list_users_page(&self, actor: &Principal, mut query: UserQuery) -> Result<Vec<ListedUser>> {
        actor.require_admin()?;
        // Stored emails have no control character (PostgreSQL text cannot even hold NUL):
        // such a search matches nobody.
        match query.email_contains.as_deref().map(email_key) {
            Some(text) if text.chars().any(char::is_control) => return Ok(Vec::new()),
            Some(text) if text.is_empty() => query.email_contains = None,
            text => query.email_contains = text,
        }
        self.store().list_users_page(&query).await
    }

    /// The user's sessions that have not expired, newest first.
    pub async fn user_sessions(&self, actor: &Principal, key: &str) -> Result<(User, Vec<Session>)> {
        let user = self.get_user(actor, key).await?;
        let sessions = self.store().list_user_sessions(user.id, Timestamp::now()).await?;
        Ok((user, sessions))
    }

    /// Ends every session of the user ("sign out everywhere"); returns how many ended. API
    /// tokens are not sessions: they stay.
    pub async fn sign_out_user(&self, actor: &Principal, key: &str) -> Result<u64> {
        let user = self.get_user(actor, key).await?;
        let ended = self.store().delete_user_sessions(user.id).await?;
        tracing::info!(user.id = %user.id, sessions = ended, "user signed out everywhere");
        Ok(ended)
    }

    /// What deleting the user would delete with it.
    pub async fn user_belongings(&self, actor: &Principal, id: Uuid) -> Result<Belongings> {
        actor.require_admin()?;
        self.store().user_belongings(id).await?.ok_or(DomainError::NotFound)
    }
}
