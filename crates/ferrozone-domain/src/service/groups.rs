//! Groups and their members (docs/design/groups.md), admin only: groups made by hand, and
//! memberships added and removed one at a time.

use uuid::Uuid;

use super::{Domain, Principal};
use crate::error::{DomainError, Result};
use crate::group::{Group, GroupUpdate, Member, MANUAL, MAX_DESCRIPTION_LEN, MAX_NAME_LEN};
use crate::group_sync::{self, GroupSync};
use crate::input::{Patch, WrongTypes};
use crate::rules::DOES_NOT_EXIST;
use crate::store::MemberAdded;
use crate::time::Timestamp;
use crate::validate::input::Check;
use crate::validate::{CANT_BE_BLANK, IS_INVALID};

/// A group's attributes as sent: on a create, an absent name is blank; on an update, an
/// absent attribute keeps its value and `null` clears it (a name cannot be cleared).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupInput {
    pub name: Patch<String>,
    pub description: Patch<String>,
    pub wrong_types: WrongTypes,
}

/// `{"member": {"user_id": …}}`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemberInput {
    pub user_id: Option<String>,
    pub wrong_types: WrongTypes,
}

impl Domain {
    pub async fn list_groups(&self, actor: &Principal) -> Result<Vec<Group>> {
        actor.require_admin()?;
        self.store().list_groups().await
    }

    pub async fn get_group(&self, actor: &Principal, id: Uuid) -> Result<Group> {
        actor.require_admin()?;
        self.store().group_by_id(id).await?.ok_or(DomainError::NotFound)
    }

    pub async fn create_group(&self, actor: &Principal, input: &GroupInput) -> Result<Group> {
        actor.require_admin()?;
        let (name, description) = checked(input, None)?;
        let now = Timestamp::now();
        let group = Group {
            id: Uuid::now_v7(),
            name,
            description,
            source: MANUAL.to_owned(),
            member_count: 0,
            inserted_at: now,
            updated_at: now,
        };
        self.store().insert_group(&group).await?;
        tracing::info!(group.id = %group.id, "group created");
        Ok(group)
    }

    /// Applies `input` onto the stored group: absent attributes keep their values.
    pub async fn update_group(&self, actor: &Principal, id: Uuid, input: &GroupInput) -> Result<Group> {
        actor.require_admin()?;
        let stored = self.store().group_by_id(id).await?.ok_or(DomainError::NotFound)?;
        let (name, description) = checked(input, Some(&stored))?;
        let update = GroupUpdate { id, name, description, now: Timestamp::now() };
        self.store().update_group(&update).await?.ok_or(DomainError::NotFound)
    }

    pub async fn delete_group(&self, actor: &Principal, id: Uuid) -> Result<Group> {
        actor.require_admin()?;
        let deleted = self.store().delete_group(id).await?.ok_or(DomainError::NotFound)?;
        // Its rules and memberships went with it.
        self.rules_changed();
        tracing::info!(group.id = %id, "group deleted");
        Ok(deleted)
    }

    pub async fn group_members(&self, actor: &Principal, id: Uuid) -> Result<Vec<Member>> {
        actor.require_admin()?;
        self.store().group_members(id).await?.ok_or(DomainError::NotFound)
    }

    /// The groups `user` is a member of, by name.
    pub async fn user_groups(&self, actor: &Principal, user: Uuid) -> Result<Vec<Group>> {
        actor.require_admin()?;
        self.store().user_groups(user).await
    }

    /// Makes `user`'s memberships from identity provider `provider_id` exactly `groups` (at
    /// a sign-in or a refresh of the provider's grant), making the groups it names that do
    /// not exist; the data plane is woken when a membership changed.
    pub async fn apply_provider_groups(&self, user: Uuid, provider_id: &str, groups: &[String]) -> Result<GroupSync> {
        let source = group_sync::source_of(provider_id);
        let sync = self.store().sync_user_groups(user, &source, groups, Timestamp::now()).await?;
        if sync.changed() {
            self.rules_changed();
            tracing::info!(
                user.id = %user, provider = provider_id, added = sync.added, removed = sync.removed,
                created = sync.created, "memberships from the identity provider applied"
            );
        }
        Ok(sync)
    }

    /// Makes a user a member by hand: the membership, and whether it is new (`false`: the
    /// user was a member already, nothing changed). An unknown group is `NotFound`; an
    /// unknown user `Invalid` on `user_id`.
    pub async fn add_group_member(&self, actor: &Principal, id: Uuid, input: &MemberInput) -> Result<(Member, bool)> {
        actor.require_admin()?;
        let user = checked_user_id(input)?;
        let added = match self.store().add_group_member(id, user, MANUAL, Timestamp::now()).await? {
            MemberAdded::Added => true,
            MemberAdded::AlreadyMember => false,
            MemberAdded::NoSuchGroup => return Err(DomainError::NotFound),
            MemberAdded::NoSuchUser => return Err(DomainError::invalid("user_id", DOES_NOT_EXIST)),
        };
        if added {
            // The group's rules now decide the user's traffic.
            self.rules_changed();
        }
        // Removed meanwhile by another request: as if never added.
        let member = self.store().group_member(id, user).await?.ok_or(DomainError::NotFound)?;
        Ok((member, added))
    }

    /// Ends a membership; `NotFound` when the user is not a member (or there is no such
    /// group). A membership an identity provider keeps is refused (`Invalid` on `user_id`):
    /// its next sign-in would bring it back; the provider is where it ends.
    pub async fn remove_group_member(&self, actor: &Principal, id: Uuid, user: Uuid) -> Result<()> {
        actor.require_admin()?;
        let member = self.store().group_member(id, user).await?.ok_or(DomainError::NotFound)?;
        if member.source != MANUAL {
            return Err(DomainError::invalid("user_id", format!("is kept by {} and ends there", member.source)));
        }
        if self.store().remove_group_member(id, user).await? {
            self.rules_changed();
            Ok(())
        } else {
            Err(DomainError::NotFound)
        }
    }
}

/// The name and description `input` gives, onto `stored` for an update.
fn checked(input: &GroupInput, stored: Option<&Group>) -> Result<(String, String)> {
    let mut c = Check::new(&input.wrong_types);
    let name = match (&input.name, stored) {
        (Patch::Absent, Some(stored)) => stored.name.clone(),
        (name, _) => c.bounded_text("name", name.value().map(String::as_str), MAX_NAME_LEN, true),
    };
    let description = match (&input.description, stored) {
        (Patch::Absent, Some(stored)) => stored.description.clone(),
        (text, _) => c.bounded_text("description", text.value().map(String::as_str), MAX_DESCRIPTION_LEN, false),
    };
    c.finish((name, description))
}

fn checked_user_id(input: &MemberInput) -> Result<Uuid> {
    let mut c = Check::new(&input.wrong_types);
    let id = match c.trimmed("user_id", input.user_id.as_deref()) {
        Some(Some(text)) => Uuid::parse_str(text).ok().or_else(|| {
            c.add("user_id", IS_INVALID);
            None
        }),
        Some(None) => {
            c.add("user_id", CANT_BE_BLANK);
            None
        }
        None => None,
    };
    c.finish(id.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(name: Patch<String>, description: Patch<String>) -> GroupInput {
        GroupInput { name, description, wrong_types: WrongTypes::default() }
    }

    fn stored() -> Group {
        Group {
            id: Uuid::nil(),
            name: "Engineering".into(),
            description: "builds".into(),
            source: MANUAL.into(),
            member_count: 0,
            inserted_at: Timestamp::from_secs(1),
            updated_at: Timestamp::from_secs(1),
        }
    }

    fn messages(result: Result<(String, String)>) -> String {
        match result {
            Err(DomainError::Invalid(errors)) => format!("{errors:?}"),
            other => panic!("not invalid: {other:?}"),
        }
    }

    #[test]
    fn a_create_needs_a_name_and_trims_it() {
        let made = checked(&input(Patch::Value(" Ops ".into()), Patch::Absent), None).unwrap();
        assert_eq!(made, ("Ops".to_owned(), String::new()));
        assert!(messages(checked(&input(Patch::Absent, Patch::Absent), None)).contains(CANT_BE_BLANK));
        assert!(messages(checked(&input(Patch::Value("x".repeat(256)), Patch::Absent), None)).contains("at most 255"));
    }

    #[test]
    fn an_update_keeps_what_is_absent_and_clears_a_null_description() {
        let group = stored();
        let kept = checked(&input(Patch::Absent, Patch::Absent), Some(&group)).unwrap();
        assert_eq!(kept, ("Engineering".to_owned(), "builds".to_owned()));
        let cleared = checked(&input(Patch::Absent, Patch::Null), Some(&group)).unwrap();
        assert_eq!(cleared, ("Engineering".to_owned(), String::new()));
        assert!(messages(checked(&input(Patch::Null, Patch::Absent), Some(&group))).contains(CANT_BE_BLANK));
    }

    #[test]
    fn a_member_is_named_by_a_user_id() {
        let member =
            |id: Option<&str>| MemberInput { user_id: id.map(str::to_owned), wrong_types: WrongTypes::default() };
        let id = Uuid::now_v7();
        assert_eq!(checked_user_id(&member(Some(&id.to_string()))).unwrap(), id);
        assert!(checked_user_id(&member(Some("nope"))).is_err());
        assert!(checked_user_id(&member(None)).is_err());
    }
}
