//! The `rules` row: an egress rule, its destination and port range as sent.

use anyhow::anyhow;
use ferrozone_domain::egress::{Membership, PortType, Ports, Rule, RuleAction, RuleSource};
use ferrozone_domain::error::Result;
use ferrozone_domain::{DomainError, Timestamp};
use uuid::Uuid;

use super::{address, corrupt};
use crate::columns::columns;

columns! {
    /// A `rules` row. Every column but `id` and `inserted_at` is written by an update.
    pub(crate) struct RuleRow in "rules" as "r" {
        id: Uuid [key],
        user_id: Option<Uuid> [edit],
        group_id: Option<Uuid> [edit],
        destination: String [edit],
        action: String [edit],
        port_type: Option<String> [edit],
        port_range: Option<String> [edit],
        inserted_at: i64,
        updated_at: i64 [edit],
    }
}

impl From<&Rule> for RuleRow {
    fn from(rule: &Rule) -> Self {
        Self {
            id: rule.id,
            user_id: rule.user_id,
            group_id: rule.group_id,
            destination: rule.destination.clone(),
            action: rule.action.as_str().to_owned(),
            port_type: rule.ports.as_ref().map(|p| p.port_type.as_str().to_owned()),
            port_range: rule.ports.as_ref().map(|p| p.range.clone()),
            inserted_at: rule.inserted_at.micros(),
            updated_at: rule.updated_at.micros(),
        }
    }
}

impl TryFrom<RuleRow> for Rule {
    type Error = DomainError;

    fn try_from(row: RuleRow) -> Result<Self> {
        let bad = |what: &str, value: &str| corrupt(anyhow!("rule {} has {what} {value:?}", row.id));
        let action = RuleAction::parse(&row.action).ok_or_else(|| bad("action", &row.action))?;
        let ports = match (&row.port_type, &row.port_range) {
            (None, None) => None,
            (Some(port_type), Some(range)) => {
                let port_type = PortType::parse(port_type).ok_or_else(|| bad("port_type", port_type))?;
                Some(Ports { port_type, range: range.clone() })
            }
            (port_type, _) => return Err(bad("port_type", &format!("{port_type:?} without a range"))),
        };
        Ok(Rule {
            id: row.id,
            user_id: row.user_id,
            group_id: row.group_id,
            destination: row.destination,
            action,
            ports,
            inserted_at: Timestamp::from_micros(row.inserted_at),
            updated_at: Timestamp::from_micros(row.updated_at),
        })
    }
}

columns! {
    /// A row of [`crate::sql::RULE_SOURCES`]: an active device's owner and addresses.
    pub(crate) struct RuleSourceRow in "devices" as "d" {
        user_id: Uuid,
        ipv4: Option<String>,
        ipv6: Option<String>,
    }
}

impl TryFrom<RuleSourceRow> for RuleSource {
    type Error = DomainError;

    fn try_from(row: RuleSourceRow) -> Result<Self> {
        let decode = || -> anyhow::Result<RuleSource> {
            Ok(RuleSource {
                user_id: row.user_id,
                ipv4: address(row.ipv4, "ipv4 is not an IPv4 address")?,
                ipv6: address(row.ipv6, "ipv6 is not an IPv6 address")?,
            })
        };
        decode().map_err(corrupt)
    }
}

columns! {
    /// A row of [`crate::sql::RULE_MEMBERSHIPS`]: a membership of a group that a rule names.
    pub(crate) struct RuleMembershipRow in "group_members" as "m" {
        group_id: Uuid,
        user_id: Uuid,
    }
}

impl From<RuleMembershipRow> for Membership {
    fn from(row: RuleMembershipRow) -> Self {
        Membership { group_id: row.group_id, user_id: row.user_id }
    }
}
