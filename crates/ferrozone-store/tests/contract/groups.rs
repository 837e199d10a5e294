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

/// A provider's sign-in makes the user's memberships from that provider exactly the groups
/// it names: groups made when missing (found whatever their case otherwise), its own
/// memberships ended when no longer named, memberships made by hand left alone.
#[tokio::test]
async fn a_providers_groups_are_applied_as_a_whole() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Unprivileged).await;
    let ops = group("Ops");
    db.store.insert_group(&ops).await.unwrap();
    let payroll = group("Payroll");
    db.store.insert_group(&payroll).await.unwrap();
    db.store.add_group_member(payroll.id, alice.id, MANUAL, Timestamp::now()).await.unwrap();
    let names = |list: &[&str]| list.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>();

    let sync =
        db.store.sync_user_groups(alice.id, "idp:corp", &names(&["eng", "ops", "payroll"]), Timestamp::now()).await;
    let sync = sync.unwrap();
    assert_eq!((sync.created, sync.added, sync.removed), (1, 2, 0), "eng made; ops and eng joined; payroll already");
    let mine = |db: &TestDb| {
        let store = db.store.clone();
        async move {
            let mut out = Vec::new();
            for g in store.user_groups(alice.id).await.unwrap() {
                let m = store.group_member(g.id, alice.id).await.unwrap().unwrap();
                out.push(format!("{}:{}", g.name, m.source));
            }
            out
        }
    };
    assert_eq!(mine(&db).await, ["eng:idp:corp", "Ops:idp:corp", "Payroll:manual"]);
    let eng = db.store.list_groups().await.unwrap().into_iter().find(|g| g.name == "eng").unwrap();
    assert_eq!(eng.source, "idp:corp");

    let sync = db.store.sync_user_groups(alice.id, "idp:corp", &names(&["ENG"]), Timestamp::now()).await.unwrap();
    assert_eq!((sync.created, sync.added, sync.removed), (0, 0, 1), "ops ended; eng found whatever its case");
    assert_eq!(mine(&db).await, ["eng:idp:corp", "Payroll:manual"]);
    let sync = db.store.sync_user_groups(alice.id, "idp:other", &[], Timestamp::now()).await.unwrap();
    assert_eq!(sync, Default::default(), "another provider's memberships are not this one's");
    let unknown = db.store.sync_user_groups(Uuid::now_v7(), "idp:corp", &names(&["x"]), Timestamp::now()).await;
    assert_eq!(unknown.unwrap(), Default::default(), "nothing for an unknown user");
    let audited = actions(&db).await;
    assert_eq!(audited.iter().filter(|a| *a == "group.member_removed").count(), 1, "{audited:?}");
}
