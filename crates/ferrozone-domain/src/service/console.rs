//! What the admin console reads beyond the `/v0` resources: every user's API tokens with
//! their owners, and the owners of a page of devices.

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
        actor.require_admin()?;
        let mut owners = HashMap::new();
        for device in devices {
            if owners.contains_key(&device.user_id) {
                continue;
            }
            if let Some(user) = self.store().user_by_id(device.user_id).await? {
                owners.insert(user.id, user);
            }
        }
        Ok(owners)
    }
}
