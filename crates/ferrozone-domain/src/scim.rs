//! SCIM 2.0 provisioning (RFC 7643 and 7644; docs/design/scim.md): what a directory such as
//! Okta or Microsoft Entra ID keeps here through `/scim/v2`.
//!
//! A SCIM user is a Ferrozone user with a SCIM profile beside it (its `userName`, kept as
//! given and unique whatever its case, its `externalId`, its names); a SCIM group is a
//! Ferrozone group whose source is [`SOURCE`], with its `externalId`, and its SCIM members
//! are the memberships of that source. The directory authenticates with a provisioning
//! token ([`ScimToken`]), which can do nothing else. Nothing here knows of SCIM's JSON:
//! the face (`ferrozone-scim`) reads and writes it.

use serde_json::json;
use uuid::Uuid;

use crate::audit::{Change, Entry, Subject};
use crate::group::Group;
use crate::model::User;
use crate::time::Timestamp;

/// The source of the groups and memberships SCIM keeps, and the actor kind's name.
pub const SOURCE: &str = "scim";
/// A provisioning token's prefix, so that a leaked one is recognisable.
pub const TOKEN_PREFIX: &str = "fzscim_";
/// The longest `userName`, `externalId`, display name or part of a name.
pub const MAX_TEXT_LEN: usize = 255;
/// The most resources one page of a list holds (`count` above it is lowered to it).
pub const MAX_PAGE: u32 = 1000;
/// The page size when the client gives no `count`.
pub const DEFAULT_PAGE: u32 = 100;

/// A provisioning token as stored: never its secret, only the secret's SHA-256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScimToken {
    pub id: Uuid,
    pub name: String,
    pub token_hash: Vec<u8>,
    /// The admin who created it, while that user exists.
    pub created_by: Option<Uuid>,
    pub inserted_at: Timestamp,
    pub last_used_at: Option<Timestamp>,
    /// Set once, by a revocation; a revoked token authenticates nothing.
    pub revoked_at: Option<Timestamp>,
}

/// The SCIM attributes of a user that the user itself does not hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScimProfile {
    /// As the client gave it (trimmed); compared as [`user_name_key`].
    pub user_name: String,
    /// The client's own id of the user, compared exactly.
    pub external_id: Option<String>,
    pub display_name: Option<String>,
    pub given_name: Option<String>,
    pub family_name: Option<String>,
}

/// A provisioned user: the Ferrozone user and its SCIM profile, with when the profile was
/// made and last changed (SCIM's `meta.created` and `meta.lastModified`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScimUser {
    pub user: User,
    pub profile: ScimProfile,
    pub inserted_at: Timestamp,
    pub updated_at: Timestamp,
}

impl ScimUser {
    /// SCIM's `active`: the user is not disabled.
    pub fn active(&self) -> bool {
        self.user.disabled_at.is_none()
    }

    /// `meta.lastModified`: the later of the user's change and the profile's.
    pub fn last_modified(&self) -> Timestamp {
        self.updated_at.max(self.user.updated_at)
    }
}

/// What a create or a replace of a SCIM user writes: its profile, its email and whether it
/// is active.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScimUserWrite {
    pub profile: ScimProfile,
    pub email: String,
    pub active: bool,
}

/// A SCIM group: the Ferrozone group and its `externalId`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScimGroup {
    pub group: Group,
    pub external_id: Option<String>,
}

/// One SCIM member of a group: the user's id and `userName`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScimMember {
    pub user_id: Uuid,
    pub user_name: String,
}

/// A change to a SCIM group's members, applied in order with the others of its request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MembersChange {
    Add(Vec<Uuid>),
    Remove(Vec<Uuid>),
    /// The SCIM members become exactly these.
    Replace(Vec<Uuid>),
}

impl MembersChange {
    /// Whether [`Self::split`] needs the SCIM members the group has (a replace does).
    pub fn needs_held(&self) -> bool {
        matches!(self, MembersChange::Replace(_))
    }

    /// The users to add and to remove, given the SCIM members the group has (`held`, read
    /// only when [`Self::needs_held`]).
    pub fn split(&self, held: &std::collections::HashSet<Uuid>) -> (Vec<Uuid>, Vec<Uuid>) {
        match self {
            MembersChange::Add(users) => (users.clone(), Vec::new()),
            MembersChange::Remove(users) => (Vec::new(), users.clone()),
            MembersChange::Replace(users) => {
                let wanted: std::collections::HashSet<Uuid> = users.iter().copied().collect();
                (wanted.difference(held).copied().collect(), held.difference(&wanted).copied().collect())
            }
        }
    }
}

/// What a replace or a patch writes of a SCIM group: a new name and `externalId` when
/// given, and its members' changes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScimGroupWrite {
    pub name: Option<String>,
    /// `Some(None)` clears it.
    pub external_id: Option<Option<String>>,
    pub members: Vec<MembersChange>,
}

/// How many memberships a group write added and removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MembersChanged {
    pub added: u64,
    pub removed: u64,
}

impl MembersChanged {
    pub fn any(self) -> bool {
        self.added + self.removed > 0
    }
}

/// The users a list asks for: a filter on one attribute with `eq`, or all of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserFilter {
    All,
    /// By [`user_name_key`].
    UserName(String),
    ExternalId(String),
    /// By [`text_key`].
    DisplayName(String),
    Id(Uuid),
    /// By [`crate::model::email_key`].
    Email(String),
}

/// The groups a list asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupFilter {
    All,
    /// By [`crate::group::name_key`].
    DisplayName(String),
    ExternalId(String),
    Id(Uuid),
}

/// One page of a list: SCIM's 1-based `startIndex` and its `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    pub start_index: u64,
    pub count: u32,
}

impl Page {
    /// The rows to skip.
    pub fn offset(self) -> u64 {
        self.start_index.saturating_sub(1)
    }
}

/// A page of resources and how many match in all (`totalResults`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed<T> {
    pub total: u64,
    pub resources: Vec<T>,
}

/// Where a page of every SCIM user begins, in the order they were provisioned
/// (docs/design/scim.md, "Paging").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// After skipping this many.
    Offset(u64),
    /// After the user with this key (`inserted_at`, user id).
    After(Timestamp, Uuid),
}

/// A page of every SCIM user, with the count and the [`generation`](Self::generation) read
/// in the same snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsersPage {
    pub total: u64,
    /// Moves whenever a SCIM user is made or removed: two reads with the same generation
    /// saw the same users in the same order.
    pub generation: u64,
    pub resources: Vec<ScimUser>,
}

/// `userName` as compared for uniqueness and filters: RFC 7643 makes it case-insensitive.
pub fn user_name_key(user_name: &str) -> String {
    text_key(user_name)
}

/// A case-insensitive attribute as compared (`displayName`).
pub fn text_key(text: &str) -> String {
    text.trim().to_lowercase()
}

/// `scim_token.created`: its name.
pub fn token_created(token: &ScimToken) -> Entry {
    let changes = vec![Change::value("name", None, Some(json!(token.name)))];
    Entry::new("scim_token.created", Subject::new("scim_token", token.id), changes)
}

/// `scim_token.revoked`: its name.
pub fn token_revoked(token: &ScimToken) -> Entry {
    let changes = vec![Change::value("revoked_at", None, Some(json!(token.revoked_at)))];
    Entry::new("scim_token.revoked", Subject::new("scim_token", token.id), changes)
}

/// `user.provisioned`: the profile a SCIM client gave a user it made or linked.
pub fn profile_entry(action: &'static str, user: Uuid, before: Option<&ScimProfile>, after: &ScimProfile) -> Entry {
    let fields = |p: Option<&ScimProfile>| {
        [
            ("user_name", p.map(|p| json!(p.user_name))),
            ("external_id", p.map(|p| json!(p.external_id))),
            ("display_name", p.map(|p| json!(p.display_name))),
        ]
    };
    let changes = fields(before)
        .into_iter()
        .zip(fields(Some(after)))
        .filter(|((_, old), (_, new))| old != new)
        .map(|((field, old), (_, new))| Change::value(field, old, new))
        .collect();
    Entry::new(action, Subject::new("user", user), changes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_names_compare_whatever_their_case() {
        assert_eq!(user_name_key(" Alice@Example.COM "), "alice@example.com");
        assert_ne!(user_name_key("alice"), user_name_key("alicia"));
    }

    #[test]
    fn a_profile_entry_records_only_what_changed() {
        let before = ScimProfile { user_name: "a".into(), ..ScimProfile::default() };
        let after = ScimProfile { user_name: "a".into(), external_id: Some("x".into()), ..ScimProfile::default() };
        let entry = profile_entry("user.provisioned", Uuid::nil(), Some(&before), &after);
        let fields: Vec<&str> = entry.changes.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(fields, ["external_id"]);
        let first = profile_entry("user.provisioned", Uuid::nil(), None, &after);
        assert_eq!(first.changes.len(), 3, "a new profile records each attribute");
    }

    #[test]
    fn pages_count_from_one() {
        assert_eq!(Page { start_index: 1, count: 10 }.offset(), 0);
        assert_eq!(Page { start_index: 0, count: 10 }.offset(), 0, "below 1 is 1 (RFC 7644 3.4.2.4)");
        assert_eq!(Page { start_index: 21, count: 10 }.offset(), 20);
    }
}
