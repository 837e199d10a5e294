//! Groups and their members: names unique whatever their case, members listed by email and
//! counted, memberships that go with their group or their user, and an audit event for every
//! write that changes something.

use ferrozone_domain::audit::AuditQuery;
use ferrozone_domain::group::{Group, GroupUpdate, MANUAL};
use ferrozone_domain::model::Role;
use ferrozone_domain::store::MemberAdded;
use ferrozone_domain::Timestamp;
use ferrozone_store::testing::TestDb;
use uuid::Uuid;

use crate::support::{add_user, assert_invalid, db};

pub fn group(name: &str) -> Group {
    let now = Timestamp::now();
    Group {
        id: Uuid::now_v7(),
        name: name.to_owned(),
        description: String::new(),
        source: MANUAL.to_owned(),
        member_count: 0,
        inserted_at: now,
        updated_at: now,
    }
}

async fn actions(db: &TestDb) -> Vec<String> {
    let query = AuditQuery { after_seq: Some(0), limit: 1000, ..AuditQuery::default() };
    let records = db.store.audit_records(&query).await.unwrap();
    records.into_iter().map(|r| r.action).filter(|a| a.starts_with("group.")).collect()
}

#[tokio::test]
async fn names_are_unique_whatever_their_case_and_groups_list_by_name() {
    let db = db().await;
    let ops = group("Ops");
    db.store.insert_group(&ops).await.unwrap();
    db.store.insert_group(&group("engineering")).await.unwrap();
    assert_invalid(db.store.insert_group(&group("OPS")).await, "name", "has already been taken");
    let names: Vec<String> = db.store.list_groups().await.unwrap().into_iter().map(|g| g.name).collect();
    assert_eq!(names, ["engineering", "Ops"]);

    let renamed =
        GroupUpdate { id: ops.id, name: "Operations".into(), description: "on call".into(), now: Timestamp::now() };
    let updated = db.store.update_group(&renamed).await.unwrap().expect("the group exists");
    assert_eq!((updated.name.as_str(), updated.description.as_str()), ("Operations", "on call"));
    let taken = GroupUpdate { name: "ENGINEERING".into(), ..renamed.clone() };
    assert_invalid(db.store.update_group(&taken).await, "name", "has already been taken");
    let missing = GroupUpdate { id: Uuid::now_v7(), ..renamed };
    assert!(db.store.update_group(&missing).await.unwrap().is_none());
    assert_eq!(actions(&db).await, ["group.created", "group.created", "group.updated"]);
}

#[tokio::test]
async fn members_are_listed_by_email_counted_and_go_with_their_group_or_user() {
    let db = db().await;
    let (bob, alice) = (
        add_user(&db, "bob@example.com", Role::Unprivileged).await,
        add_user(&db, "alice@example.com", Role::Unprivileged).await,
    );
    let team = group("Team");
    db.store.insert_group(&team).await.unwrap();
    let now = Timestamp::now();
    assert_eq!(db.store.add_group_member(team.id, bob.id, MANUAL, now).await.unwrap(), MemberAdded::Added);
    assert_eq!(db.store.add_group_member(team.id, alice.id, MANUAL, now).await.unwrap(), MemberAdded::Added);
    assert_eq!(db.store.add_group_member(team.id, bob.id, MANUAL, now).await.unwrap(), MemberAdded::AlreadyMember);
    assert_eq!(db.store.add_group_member(team.id, Uuid::now_v7(), MANUAL, now).await.unwrap(), MemberAdded::NoSuchUser);
    assert_eq!(db.store.add_group_member(Uuid::now_v7(), bob.id, MANUAL, now).await.unwrap(), MemberAdded::NoSuchGroup);

    let members = db.store.group_members(team.id).await.unwrap().expect("the group exists");
    let emails: Vec<&str> = members.iter().map(|m| m.email.as_str()).collect();
    assert_eq!(emails, ["alice@example.com", "bob@example.com"]);
    assert!(members.iter().all(|m| m.source == MANUAL));
    assert_eq!(db.store.group_by_id(team.id).await.unwrap().unwrap().member_count, 2);
    assert!(db.store.group_members(Uuid::now_v7()).await.unwrap().is_none());
    let bobs = db.store.group_member(team.id, bob.id).await.unwrap().expect("bob is a member");
    assert_eq!((bobs.email.as_str(), bobs.source.as_str()), ("bob@example.com", MANUAL));
    assert!(db.store.group_member(team.id, Uuid::now_v7()).await.unwrap().is_none());

    assert!(db.store.remove_group_member(team.id, bob.id).await.unwrap());
    assert!(!db.store.remove_group_member(team.id, bob.id).await.unwrap(), "a second removal changes nothing");
    db.store.delete_user(alice.id).await.unwrap();
    assert_eq!(
        db.store.group_by_id(team.id).await.unwrap().unwrap().member_count,
        0,
        "a deleted user's membership goes"
    );

    db.store.add_group_member(team.id, bob.id, MANUAL, now).await.unwrap();
    let deleted = db.store.delete_group(team.id).await.unwrap().expect("the group existed");
    assert_eq!(deleted.member_count, 1, "the deleted group as it was");
    assert!(db.store.delete_group(team.id).await.unwrap().is_none());
    assert_eq!(
        actions(&db).await,
        [
            "group.created",
            "group.member_added",
            "group.member_added",
            "group.member_removed",
            "group.member_added",
            "group.deleted"
        ]
    );
}
