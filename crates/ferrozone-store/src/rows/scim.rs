//! The rows of SCIM provisioning ([`ferrozone_domain::scim`]): provisioning tokens and the
//! SCIM profiles of users.

use ferrozone_domain::scim::{text_key, user_name_key, ScimProfile, ScimToken};
use ferrozone_domain::Timestamp;
use uuid::Uuid;

use crate::columns::columns;

columns! {
    /// A `scim_tokens` row.
    pub(crate) struct ScimTokenRow in "scim_tokens" as "st" {
        id: Uuid [key],
        name: String,
        token_hash: Vec<u8>,
        created_by: Option<Uuid>,
        inserted_at: i64,
        last_used_at: Option<i64>,
        revoked_at: Option<i64>,
    }
}

columns! {
    /// A `scim_users` row: a user's SCIM profile.
    pub(crate) struct ScimUserRow in "scim_users" as "s" {
        user_id: Uuid [key],
        user_name: String [edit],
        user_name_key: String [edit],
        external_id: Option<String> [edit],
        display_name: Option<String> [edit],
        display_name_key: Option<String> [edit],
        given_name: Option<String> [edit],
        family_name: Option<String> [edit],
        inserted_at: i64,
        updated_at: i64 [edit],
    }
}

impl From<&ScimToken> for ScimTokenRow {
    fn from(t: &ScimToken) -> Self {
        Self {
            id: t.id,
            name: t.name.clone(),
            token_hash: t.token_hash.clone(),
            created_by: t.created_by,
            inserted_at: t.inserted_at.micros(),
            last_used_at: t.last_used_at.map(Timestamp::micros),
            revoked_at: t.revoked_at.map(Timestamp::micros),
        }
    }
}

impl From<ScimTokenRow> for ScimToken {
    fn from(r: ScimTokenRow) -> Self {
        Self {
            id: r.id,
            name: r.name,
            token_hash: r.token_hash,
            created_by: r.created_by,
            inserted_at: Timestamp::from_micros(r.inserted_at),
            last_used_at: r.last_used_at.map(Timestamp::from_micros),
            revoked_at: r.revoked_at.map(Timestamp::from_micros),
        }
    }
}

impl ScimUserRow {
    pub(crate) fn new(user_id: Uuid, p: &ScimProfile, inserted_at: Timestamp, now: Timestamp) -> Self {
        Self {
            user_id,
            user_name: p.user_name.clone(),
            user_name_key: user_name_key(&p.user_name),
            external_id: p.external_id.clone(),
            display_name: p.display_name.clone(),
            display_name_key: p.display_name.as_deref().map(text_key),
            given_name: p.given_name.clone(),
            family_name: p.family_name.clone(),
            inserted_at: inserted_at.micros(),
            updated_at: now.micros(),
        }
    }

    /// The profile, with when it was made and last changed.
    pub(crate) fn into_profile(self) -> (ScimProfile, Timestamp, Timestamp) {
        let profile = ScimProfile {
            user_name: self.user_name,
            external_id: self.external_id,
            display_name: self.display_name,
            given_name: self.given_name,
            family_name: self.family_name,
        };
        (profile, Timestamp::from_micros(self.inserted_at), Timestamp::from_micros(self.updated_at))
    }
}

/// A row of [`crate::sql::scim::users`]: a profile and its user, both aliased.
#[derive(Debug)]
pub(crate) struct ScimUserJoinRow {
    pub profile: ScimUserRow,
    pub user: crate::rows::UserRow,
}

impl TryFrom<ScimUserJoinRow> for ferrozone_domain::scim::ScimUser {
    type Error = ferrozone_domain::DomainError;

    fn try_from(row: ScimUserJoinRow) -> ferrozone_domain::error::Result<Self> {
        let user = ferrozone_domain::User::try_from(row.user)?;
        let (profile, inserted_at, updated_at) = row.profile.into_profile();
        Ok(Self { user, profile, inserted_at, updated_at })
    }
}
