//! Writing egress rules: the owner must exist and no rule of the same action and scope may
//! overlap, also when processes sharing a PostgreSQL database write at once (the rules
//! table is locked against other rule writers for the transaction, see
//! [`WriteTx::lock_rules`]).

use uuid::Uuid;

use crate::audit::changes;
use crate::egress::{Rule, RuleScope, OVERLAPS};
use crate::error::Result;
use crate::input::RuleChanges;
use crate::time::Timestamp;
use crate::validate::rule::check_update;
use crate::DomainError;

use super::tx::{finish, Begin, WriteTx};

/// `user`: the rule's user does not exist (Firezone reports it on `user`, not `user_id`).
pub fn missing_user() -> DomainError {
    DomainError::invalid("user", super::DOES_NOT_EXIST)
}

/// `group`: the rule's group does not exist.
pub fn missing_group() -> DomainError {
    DomainError::invalid("group", super::DOES_NOT_EXIST)
}

/// Inserts `rule` in its own transaction.
pub async fn insert_rule(db: &dyn Begin, rule: &Rule) -> Result<()> {
    let mut tx = db.begin().await?;
    let result = insert_rule_in(tx.as_mut(), rule).await;
    finish(tx, result).await
}

/// Applies `changes` to the stored rule in its own transaction; `None` when it is gone.
/// The stored rule is read with the rules locked, so two edits of one rule at once each
/// build on the other's committed result: neither loses the other's change.
pub async fn update_rule(db: &dyn Begin, id: Uuid, changes: &RuleChanges, now: Timestamp) -> Result<Option<Rule>> {
    let mut tx = db.begin().await?;
    let result = update_rule_in(tx.as_mut(), id, changes, now).await;
    finish(tx, result).await
}

/// The body of [`insert_rule`].
pub async fn insert_rule_in(tx: &mut dyn WriteTx, rule: &Rule) -> Result<()> {
    check(tx, rule).await?;
    tx.insert_rule(rule).await?;
    tx.record(changes::rule_created(rule)).await
}

/// The body of [`update_rule`].
pub async fn update_rule_in(
    tx: &mut dyn WriteTx,
    id: Uuid,
    changes: &RuleChanges,
    now: Timestamp,
) -> Result<Option<Rule>> {
    let Some(stored) = tx.lock_rule(id).await? else { return Ok(None) };
    let rule = check_update(&stored, changes)?.into_rule(id, stored.inserted_at, now);
    check(tx, &rule).await?;
    tx.update_rule(&rule).await?;
    if let Some(entry) = changes::rule_updated(&stored, &rule) {
        tx.record(entry).await?;
    }
    Ok(Some(rule))
}

/// The user or group exists; then, with the rules locked, none overlaps `rule` (itself
/// excepted).
async fn check(tx: &mut dyn WriteTx, rule: &Rule) -> Result<()> {
    match rule.scope() {
        RuleScope::User(user_id) if tx.lock_user(user_id).await?.is_none() => return Err(missing_user()),
        RuleScope::Group(group_id) if !tx.lock_group(group_id).await? => return Err(missing_group()),
        _ => {}
    }
    let existing = tx.lock_rules(rule.action, rule.scope()).await?;
    if existing.iter().any(|other| rule.overlaps(other)) {
        return Err(DomainError::invalid("destination", OVERLAPS));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use uuid::Uuid;

    use super::super::fake::FakeDb;
    use super::*;
    use crate::egress::RuleAction;
    use crate::input::Patch;
    use crate::model::Role;

    fn rule(destination: &str, user_id: Option<Uuid>) -> Rule {
        let at = Timestamp::from_micros(0);
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

    fn messages(err: &DomainError, key: &str) -> Vec<String> {
        let DomainError::Invalid(errors) = err else { panic!("not Invalid: {err:?}") };
        errors.get(key).unwrap_or_default().to_vec()
    }

    #[tokio::test]
    async fn overlapping_rules_and_unknown_users_are_refused() {
        let db = FakeDb::default();
        let alice = db.add_user(Role::Unprivileged);
        let first = rule("10.0.0.0/8", None);
        insert_rule(&db, &first).await.unwrap();
        let err = insert_rule(&db, &rule("10.1.0.0/16", None)).await.unwrap_err();
        assert_eq!(messages(&err, "destination"), [OVERLAPS]);
        insert_rule(&db, &rule("10.1.0.0/16", Some(alice))).await.unwrap();
        let err = insert_rule(&db, &rule("1.1.1.1", Some(Uuid::now_v7()))).await.unwrap_err();
        assert_eq!(messages(&err, "user"), ["does not exist"]);

        let moved = RuleChanges { destination: Patch::Value("10.2.0.0/16".to_owned()), ..Default::default() };
        let now = Timestamp::now();
        let updated = update_rule(&db, first.id, &moved, now).await.unwrap();
        assert_eq!(updated.map(|r| r.destination), Some("10.2.0.0/16".to_owned()), "not an overlap with its old self");
        let unknown = update_rule(&db, Uuid::now_v7(), &moved, now).await.unwrap();
        assert_eq!(unknown, None, "an unknown rule is not written");
        assert_eq!(db.state().rules.len(), 2);
    }

    #[tokio::test]
    async fn a_group_rule_needs_its_group_and_overlaps_only_that_groups_rules() {
        let db = FakeDb::default();
        let staff = Uuid::now_v7();
        let of_group = |group_id, destination| Rule { group_id, ..rule(destination, None) };
        let err = insert_rule(&db, &of_group(Some(staff), "10.0.0.0/8")).await.unwrap_err();
        assert_eq!(messages(&err, "group"), ["does not exist"]);
        db.add_group(staff);
        insert_rule(&db, &of_group(Some(staff), "10.0.0.0/8")).await.unwrap();
        insert_rule(&db, &rule("10.0.0.0/8", None)).await.unwrap();
        let err = insert_rule(&db, &of_group(Some(staff), "10.1.0.0/16")).await.unwrap_err();
        assert_eq!(messages(&err, "destination"), [OVERLAPS]);
        let ops = Uuid::now_v7();
        db.add_group(ops);
        insert_rule(&db, &of_group(Some(ops), "10.1.0.0/16")).await.unwrap();
        assert_eq!(db.state().rules.len(), 3);
    }
}
