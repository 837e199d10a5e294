//! What the admin console reads beyond the `/v0` resources: every user's API tokens with
//! their owners, and the users a page names (the owners of its devices, the users of its
//! rules).

use std::collections::HashMap;

use uuid::Uuid;

use super::{Domain, Principal};
use crate::error::Result;
use crate::model::{ApiToken, Device, User};
use crate::store::TokenPage;

/// The most ids one read of [`Domain::users_by_id`] asks for (a statement's parameters).
pub const USERS_PER_READ: usize = 500;

impl Domain {
    /// One page of every user's tokens, each with its owner: an admin's to see.
    pub async fn list_all_tokens(&self, actor: &Principal, page: TokenPage) -> Result<Vec<(ApiToken, User)>> {
        actor.require_admin()?;
        self.store().list_all_tokens(page).await
    }

    /// Each owner of `devices` (a page of them), in one statement: a page lists at most a few
    /// dozen devices, whatever the size of the table.
    pub async fn device_owners(&self, actor: &Principal, devices: &[Device]) -> Result<HashMap<Uuid, User>> {
        let ids: Vec<Uuid> = devices.iter().map(|device| device.user_id).collect();
        self.users_by_id(actor, &ids).await
    }

    /// The users `ids` name (a page's worth), each distinct id once, in one statement per
    /// [`USERS_PER_READ`]: on PostgreSQL a read per owner was a round trip each, which made
    /// the console's devices page five times as slow as `GET /v0/devices?limit=50`. An id no
    /// user has any more is left out.
    pub async fn users_by_id(&self, actor: &Principal, ids: &[Uuid]) -> Result<HashMap<Uuid, User>> {
        actor.require_admin()?;
        let mut distinct = ids.to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        let mut users = HashMap::with_capacity(distinct.len());
        for chunk in distinct.chunks(USERS_PER_READ) {
            users.extend(self.store().users_by_ids(chunk).await?.into_iter().map(|user| (user.id, user)));
        }
        Ok(users)
    }
}
