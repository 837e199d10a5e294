//! Egress rules (Firezone's `/v0/rules`): admin only. Every committed write wakes the data
//! plane ([`Domain::peer_changes`]).

use uuid::Uuid;

use super::{Domain, Principal};
use crate::egress::Rule;
use crate::error::{DomainError, Result};
use crate::input::{NewRule, RuleChanges};
use crate::time::Timestamp;
use crate::validate::rule::check_create;

impl Domain {
    pub async fn list_rules(&self, actor: &Principal) -> Result<Vec<Rule>> {
        actor.require_admin()?;
        self.store().list_rules().await
    }

    pub async fn get_rule(&self, actor: &Principal, id: Uuid) -> Result<Rule> {
        actor.require_admin()?;
        self.store().rule_by_id(id).await?.ok_or(DomainError::NotFound)
    }

    pub async fn create_rule(&self, actor: &Principal, input: &NewRule) -> Result<Rule> {
        actor.require_admin()?;
        let checked = check_create(input)?;
        let now = Timestamp::now();
        let rule = checked.into_rule(Uuid::now_v7(), now, now);
        self.store().insert_rule(&rule).await?;
        self.rules_changed();
        tracing::info!(rule.id = %rule.id, "rule created");
        Ok(rule)
    }

    /// PATCH and PUT alike: omitted attributes keep their stored value.
    pub async fn update_rule(&self, actor: &Principal, id: Uuid, changes: &RuleChanges) -> Result<Rule> {
        actor.require_admin()?;
        let rule = self.store().update_rule(id, changes, Timestamp::now()).await?.ok_or(DomainError::NotFound)?;
        self.rules_changed();
        tracing::info!(rule.id = %rule.id, "rule updated");
        Ok(rule)
    }

    pub async fn delete_rule(&self, actor: &Principal, id: Uuid) -> Result<()> {
        actor.require_admin()?;
        if !self.store().delete_rule(id).await? {
            return Err(DomainError::NotFound);
        }
        self.rules_changed();
        tracing::info!(rule.id = %id, "rule deleted");
        Ok(())
    }
}
