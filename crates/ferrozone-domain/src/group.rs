//! Groups of users (docs/design/groups.md): a name unique whatever its case, a description,
//! where the group comes from, and its members, each membership marked with where it comes
//! from. Administrators keep the groups made by hand; memberships are added and removed one
//! at a time.

use serde_json::json;
use uuid::Uuid;

use crate::audit::{Change, Entry, Subject};
use crate::time::Timestamp;

/// The longest name.
pub const MAX_NAME_LEN: usize = 255;
/// The longest description.
pub const MAX_DESCRIPTION_LEN: usize = 1024;
/// The source of a group or a membership made by hand (the API, the console).
pub const MANUAL: &str = "manual";

/// A group as stored, with how many members it has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub id: Uuid,
    pub name: String,
    pub description: String,
    /// Where it comes from: [`MANUAL`].
    pub source: String,
    pub member_count: i64,
    pub inserted_at: Timestamp,
    pub updated_at: Timestamp,
}

/// One member of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub user_id: Uuid,
    pub email: String,
    /// Where the membership comes from: [`MANUAL`].
    pub source: String,
    pub inserted_at: Timestamp,
}

/// A group's name as compared for uniqueness: lower-cased, so that `Engineering` and
/// `engineering` cannot both exist.
pub fn name_key(name: &str) -> String {
    name.to_lowercase()
}

/// What an update writes: the new name and description, with `updated_at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupUpdate {
    pub id: Uuid,
    pub name: String,
    pub description: String,
    pub now: Timestamp,
}

impl GroupUpdate {
    /// `group` as this update leaves it (its row is locked or written alone meanwhile).
    pub fn applied_to(&self, group: &Group) -> Group {
        Group { name: self.name.clone(), description: self.description.clone(), updated_at: self.now, ..group.clone() }
    }
}

/// `group.created`: its name and description.
pub fn created_entry(group: &Group) -> Entry {
    let changes = vec![
        Change::value("name", None, Some(json!(group.name))),
        Change::value("description", None, Some(json!(group.description))),
    ];
    Entry::new("group.created", Subject::new("group", group.id), changes)
}

/// `group.updated`: what changed of its name and description.
pub fn updated_entry(before: &Group, after: &Group) -> Entry {
    let mut changes = Vec::new();
    if before.name != after.name {
        changes.push(Change::value("name", Some(json!(before.name)), Some(json!(after.name))));
    }
    if before.description != after.description {
        changes.push(Change::value("description", Some(json!(before.description)), Some(json!(after.description))));
    }
    Entry::new("group.updated", Subject::new("group", after.id), changes)
}

/// `group.deleted`: its name, and how many members it had.
pub fn deleted_entry(group: &Group) -> Entry {
    let changes = vec![
        Change::value("name", Some(json!(group.name)), None),
        Change::value("member_count", Some(json!(group.member_count)), None),
    ];
    Entry::new("group.deleted", Subject::new("group", group.id), changes)
}

/// `group.member_added`: which user.
pub fn member_added_entry(group: Uuid, user: Uuid) -> Entry {
    Entry::new(
        "group.member_added",
        Subject::new("group", group),
        vec![Change::value("user_id", None, Some(json!(user)))],
    )
}

/// `group.member_removed`: which user.
pub fn member_removed_entry(group: Uuid, user: Uuid) -> Entry {
    let changes = vec![Change::value("user_id", Some(json!(user)), None)];
    Entry::new("group.member_removed", Subject::new("group", group), changes)
}

/// The events of a membership an identity provider's sign-in changed: the user and the
/// provider, so that the log tells a directory's change from an administrator's.
pub fn synced_member_entry(added: bool, group: Uuid, user: Uuid, source: &str) -> Entry {
    let (action, user_change) = if added {
        ("group.member_added", Change::value("user_id", None, Some(json!(user))))
    } else {
        ("group.member_removed", Change::value("user_id", Some(json!(user)), None))
    };
    let source_change = Change::value("source", None, Some(json!(source)));
    Entry::new(action, Subject::new("group", group), vec![user_change, source_change])
}

/// A group an identity provider named and nobody had made: `name`, no description, the
/// provider as its source.
pub fn from_provider(name: &str, source: &str, now: Timestamp) -> Group {
    Group {
        id: Uuid::now_v7(),
        name: name.to_owned(),
        description: String::new(),
        source: source.to_owned(),
        member_count: 0,
        inserted_at: now,
        updated_at: now,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(name: &str, description: &str) -> Group {
        Group {
            id: Uuid::nil(),
            name: name.into(),
            description: description.into(),
            source: MANUAL.into(),
            member_count: 0,
            inserted_at: Timestamp::from_secs(1),
            updated_at: Timestamp::from_secs(1),
        }
    }

    #[test]
    fn names_compare_whatever_their_case() {
        assert_eq!(name_key("Engineering"), name_key("ENGINEERING"));
        assert_ne!(name_key("Engineering"), name_key("Engineers"));
    }

    #[test]
    fn an_update_records_only_what_changed() {
        let entry = updated_entry(&group("a", "same"), &group("b", "same"));
        let fields: Vec<&str> = entry.changes.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(fields, ["name"]);
    }
}
