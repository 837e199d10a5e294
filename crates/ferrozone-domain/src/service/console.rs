//! What the admin console reads beyond the `/v0` resources: every user's API tokens with
//! their owners, and the users a page names (the owners of its devices, the users of its
//! rules).

use std::collections::HashMap;

use uuid::Uuid;

use super::{Domain, Principal};
use crate::error::Result;
use crate::model::{ApiToken, Device, User};
use crate::store::TokenPage;

impl Domain {
    /// One page of every user's tokens, each with its owner: an admin's to see.
    pub async fn list_all_tokens(&self, actor: &Principal, page: TokenPage) -> Result<Vec<(ApiToken, User)>> {
        actor.require_admin()?;
        self.store().list_all_tokens(page).await
    }

    /// Each owner of `devices` (a page of them), one read per distinct owner: a page lists
    /// at most a few dozen devices, whatever the size of the table.
    pub async fn device_owners(&self, actor: &Principal, devices: &[Device]) -> Result<HashMap<Uuid, User>> {
        let ids: Vec<Uuid> = devices.iter().map(|device| device.user_id).collect();
        self.users_by_id(actor, &ids).await
    }

    /// The users `ids` name (a page's worth), one read per distinct id; an id no user has
    /// any more is left out.
    pub async fn users_by_id(&self, actor: &Principal, ids: &[Uuid]) -> Result<HashMap<Uuid, User>> {
        actor.require_admin()?;
        let mut users = HashMap::new();
        for &id in ids {
            if users.contains_key(&id) {
                continue;
            }
            if let Some(user) = self.store().user_by_id(id).await? {
                users.insert(user.id, user);
            }
        }
        Ok(users)
    }
}
