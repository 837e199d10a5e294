//! Egress rules: a round trip keeps the text as sent, the user must exist, overlapping
//! rules are refused (also when created at once), updates and deletes, and the cascade
//! with the user.

use std::sync::Arc;

use ferrozone_domain::egress::{PortType, Ports, Rule, RuleAction, OVERLAPS};
use ferrozone_domain::input::{Patch, RuleChanges};
use ferrozone_domain::model::Role;
use ferrozone_domain::{DomainError, Timestamp};
use uuid::Uuid;

use crate::support::{add_user, db};

pub fn rule(destination: &str, user_id: Option<Uuid>) -> Rule {
    let at = Timestamp::from_micros(1_700_000_000_000_000);
    let destination = destination.to_owned();
    Rule {
        id: Uuid::now_v7(),
        user_id,
        group_id: None,
        destination,
        action: RuleAction::Drop,
        ports: None,
        inserted_at: at,
        updated_at: at,
    }
}

/// A change of the destination alone.
fn to(destination: &str) -> RuleChanges {
    RuleChanges { destination: Patch::Value(destination.to_owned()), ..Default::default() }
}

fn messages(err: &DomainError, key: &str) -> Vec<String> {
    let DomainError::Invalid(errors) = err else { panic!("not Invalid: {err:?}") };
    errors.get(key).unwrap_or_default().to_vec()
}

#[tokio::test]
async fn a_rule_round_trips_as_sent_and_goes_with_its_user() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Unprivileged).await;
    let ports = Some(Ports { port_type: PortType::Udp, range: "10 - 20".to_owned() });
    let stored = Rule { action: RuleAction::Accept, ports, ..rule(" 1.1.1.1/24", Some(alice.id)) };
    db.store.insert_rule(&stored).await.unwrap();
    let global = rule("::1", None);
    db.store.insert_rule(&global).await.unwrap();
    assert_eq!(db.store.rule_by_id(stored.id).await.unwrap(), Some(stored.clone()));
    assert_eq!(db.store.list_rules().await.unwrap().len(), 2);

    let later = stored.updated_at.plus_secs(5);
    let global_any_port =
        RuleChanges { user_id: Patch::Null, port_type: Patch::Null, port_range: Patch::Null, ..Default::default() };
    let moved = db.store.update_rule(stored.id, &global_any_port, later).await.unwrap();
    let expected = Rule { user_id: None, ports: None, updated_at: later, ..stored.clone() };
    assert_eq!(moved.as_ref(), Some(&expected), "inserted_at stays");
    assert_eq!(db.store.rule_by_id(stored.id).await.unwrap(), Some(expected));
    let unknown = db.store.update_rule(Uuid::now_v7(), &global_any_port, later).await.unwrap();
    assert_eq!(unknown, None, "an unknown rule");

    let owned = rule("3.3.3.3", Some(alice.id));
    db.store.insert_rule(&owned).await.unwrap();
    db.store.delete_user(alice.id).await.unwrap();
    assert_eq!(db.store.rule_by_id(owned.id).await.unwrap(), None, "deleted with its user");
    assert!(db.store.delete_rule(global.id).await.unwrap());
    assert!(!db.store.delete_rule(global.id).await.unwrap());
    assert_eq!(db.store.list_rules().await.unwrap().len(), 1);
}

#[tokio::test]
async fn unknown_users_and_overlaps_are_refused() {
    let db = db().await;
    let err = db.store.insert_rule(&rule("1.1.1.1", Some(Uuid::now_v7()))).await.unwrap_err();
    assert_eq!(messages(&err, "user"), ["does not exist"]);

    let wide = rule("10.0.0.0/8", None);
    db.store.insert_rule(&wide).await.unwrap();
    let err = db.store.insert_rule(&rule("10.9.0.0/16", None)).await.unwrap_err();
    assert_eq!(messages(&err, "destination"), [OVERLAPS]);
    let other = rule("11.0.0.0/8", None);
    db.store.insert_rule(&other).await.unwrap();
    let err = db.store.update_rule(other.id, &to("10.0.0.1"), Timestamp::now()).await.unwrap_err();
    assert_eq!(messages(&err, "destination"), [OVERLAPS]);
    assert_eq!(db.store.rule_by_id(other.id).await.unwrap(), Some(other), "unchanged");

    // Scopes: a user's rules overlap only that user's, of the same action.
    let alice = add_user(&db, "alice@example.com", Role::Unprivileged).await;
    let bob = add_user(&db, "bob@example.com", Role::Unprivileged).await;
    db.store.insert_rule(&rule("10.0.0.1", Some(alice.id))).await.unwrap();
    db.store.insert_rule(&rule("10.0.0.1", Some(bob.id))).await.unwrap();
    db.store.insert_rule(&Rule { action: RuleAction::Accept, ..rule("10.0.0.1", Some(bob.id)) }).await.unwrap();
    let err = db.store.insert_rule(&rule("10.0.0.0/24", Some(alice.id))).await.unwrap_err();
    assert_eq!(messages(&err, "destination"), [OVERLAPS]);
}

#[tokio::test]
async fn of_overlapping_rules_created_at_once_one_is_stored() {
    let db = db().await;
    for round in 1..=10 {
        let tasks: Vec<_> = (0..16)
            .map(|i| {
                let store = Arc::clone(&db.store);
                let destination = if i % 2 == 0 { format!("{round}.0.0.0/8") } else { format!("{round}.{i}.0.0/16") };
                tokio::spawn(async move { store.insert_rule(&rule(&destination, None)).await.is_ok() })
            })
            .collect();
        let mut created = 0;
        for task in tasks {
            created += usize::from(task.await.unwrap());
        }
        assert!(created >= 1, "round {round}: one of them is stored");
    }
    let stored = db.store.list_rules().await.unwrap();
    for (i, a) in stored.iter().enumerate() {
        assert!(stored[i + 1..].iter().all(|b| !a.overlaps(b)), "{a:?} overlaps another");
    }
}

#[tokio::test]
async fn edits_of_one_rule_at_once_both_land() {
    let db = db().await;
    for round in 0..10 {
        let stored = rule(&format!("192.0.2.{round}"), None);
        db.store.insert_rule(&stored).await.unwrap();
        let accept = RuleChanges { action: Patch::Value("accept".to_owned()), ..Default::default() };
        let elsewhere = to(&format!("198.51.100.{round}"));
        let (a, b) = tokio::join!(
            db.store.update_rule(stored.id, &accept, Timestamp::now()),
            db.store.update_rule(stored.id, &elsewhere, Timestamp::now()),
        );
        assert!(a.unwrap().is_some() && b.unwrap().is_some());
        let now = db.store.rule_by_id(stored.id).await.unwrap().unwrap();
        assert_eq!(now.action, RuleAction::Accept, "round {round}: the action change was lost");
        assert_eq!(now.destination, format!("198.51.100.{round}"), "round {round}: the destination change was lost");
    }
}
