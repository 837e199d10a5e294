//! Egress rules (Firezone's rule changeset): create and update cast the same attributes
//! onto a draft (empty on create, the stored rule on update), then check the result with
//! Firezone's messages. The user's existence and the overlap are the store's
//! ([`crate::rules::egress`]).

use uuid::Uuid;

use super::{CANT_BE_BLANK, IS_INVALID};
use crate::egress::{parse_destination, parse_port_range, PortType, Ports, Rule, RuleAction};
use crate::error::{DomainError, Errors, Result};
use crate::input::{NewRule, Patch, RuleChanges, WrongTypes};
use crate::time::Timestamp;

/// A rule's attributes as text, before they are checked.
#[derive(Debug, Clone, Default)]
struct Draft {
    destination: Option<String>,
    action: Option<String>,
    port_type: Option<String>,
    port_range: Option<String>,
    user_id: Option<String>,
    group_id: Option<String>,
}

/// The checked attributes of a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedRule {
    pub user_id: Option<Uuid>,
    pub group_id: Option<Uuid>,
    pub destination: String,
    pub action: RuleAction,
    pub ports: Option<Ports>,
}

impl CheckedRule {
    pub fn into_rule(self, id: Uuid, inserted_at: Timestamp, updated_at: Timestamp) -> Rule {
        let CheckedRule { user_id, group_id, destination, action, ports } = self;
        Rule { id, user_id, group_id, destination, action, ports, inserted_at, updated_at }
    }
}

/// A new rule's attributes; `action` defaults to `drop`.
pub fn check_create(input: &NewRule) -> Result<CheckedRule> {
    let changes = RuleChanges {
        destination: input.destination.clone().map_or(Patch::Absent, Patch::Value),
        action: input.action.clone().map_or(Patch::Absent, Patch::Value),
        port_type: input.port_type.clone().map_or(Patch::Absent, Patch::Value),
        port_range: input.port_range.clone().map_or(Patch::Absent, Patch::Value),
        user_id: input.user_id.clone().map_or(Patch::Absent, Patch::Value),
        group_id: input.group_id.clone().map_or(Patch::Absent, Patch::Value),
        wrong_types: input.wrong_types.clone(),
    };
    let draft = Draft { action: Some(RuleAction::Drop.as_str().to_owned()), ..Draft::default() };
    check(apply(draft, &changes), &changes)
}

/// `rule` with `changes` cast onto it.
pub fn check_update(rule: &Rule, changes: &RuleChanges) -> Result<CheckedRule> {
    let draft = Draft {
        destination: Some(rule.destination.clone()),
        action: Some(rule.action.as_str().to_owned()),
        port_type: rule.ports.as_ref().map(|p| p.port_type.as_str().to_owned()),
        port_range: rule.ports.as_ref().map(|p| p.range.clone()),
        user_id: rule.user_id.map(|id| id.to_string()),
        group_id: rule.group_id.map(|id| id.to_string()),
    };
    check(apply(draft, changes), changes)
}

fn apply(draft: Draft, changes: &RuleChanges) -> Draft {
    Draft {
        destination: cast(draft.destination, &changes.destination),
        action: cast(draft.action, &changes.action),
        port_type: cast(draft.port_type, &changes.port_type),
        port_range: cast(draft.port_range, &changes.port_range),
        user_id: cast(draft.user_id, &changes.user_id),
        group_id: cast(draft.group_id, &changes.group_id),
    }
}

/// Absent keeps `old`; `null` and `""` (Ecto's empty value) clear it.
fn cast(old: Option<String>, patch: &Patch<String>) -> Option<String> {
    match patch {
        Patch::Absent => old,
        Patch::Null => None,
        Patch::Value(v) if v.is_empty() => None,
        Patch::Value(v) => Some(v.clone()),
    }
}

fn check(draft: Draft, changes: &RuleChanges) -> Result<CheckedRule> {
    let mut errors = Errors::new();
    for attribute in ["destination", "action", "port_type", "port_range", "user_id", "group_id"] {
        if changes.wrong_types.has(attribute) {
            errors.add(attribute, IS_INVALID);
        }
    }
    let wrong = &changes.wrong_types;
    let destination =
        required(&mut errors, wrong, "destination", draft.destination, |d| parse_destination(d).is_some());
    let action = required(&mut errors, wrong, "action", draft.action, |a| RuleAction::parse(a).is_some());
    let ports = ports(&mut errors, wrong, draft.port_type, draft.port_range);
    let user_id = id(&mut errors, "user_id", draft.user_id);
    let group_id = id(&mut errors, "group_id", draft.group_id);
    if user_id.is_some() && group_id.is_some() {
        errors.add("group_id", WITH_USER_ID);
    }
    match (destination, action.as_deref().and_then(RuleAction::parse)) {
        (Some(destination), Some(action)) if errors.is_empty() => {
            Ok(CheckedRule { user_id, group_id, destination, action, ports })
        }
        _ => Err(DomainError::Invalid(errors)),
    }
}

/// `group_id`: a rule is a user's or a group's, never both.
pub const WITH_USER_ID: &str = "must be blank when user_id is set";

/// A UUID attribute: absent, or `is invalid` when it does not parse.
fn id(errors: &mut Errors, field: &str, text: Option<String>) -> Option<Uuid> {
    let parsed = Uuid::parse_str(text.as_deref()?).ok();
    if parsed.is_none() {
        errors.add(field, IS_INVALID);
    }
    parsed
}

/// `can't be blank`, unless the attribute was sent with a wrong type (then it is
/// `is invalid` only).
fn blank(errors: &mut Errors, wrong: &WrongTypes, field: &str) {
    if !wrong.has(field) {
        errors.add(field, CANT_BE_BLANK);
    }
}

/// The value if it is there and `valid`; `can't be blank` or `is invalid` otherwise.
fn required(
    errors: &mut Errors,
    wrong: &WrongTypes,
    field: &str,
    value: Option<String>,
    valid: impl Fn(&str) -> bool,
) -> Option<String> {
    match value {
        None => blank(errors, wrong, field),
        Some(v) if valid(&v) => return Some(v),
        Some(_) => errors.add(field, IS_INVALID),
    }
    None
}

/// Both or neither; the type one of Firezone's, the range one it parses.
fn ports(errors: &mut Errors, wrong: &WrongTypes, port_type: Option<String>, range: Option<String>) -> Option<Ports> {
    let parsed = port_type.as_deref().map(|t| PortType::parse(t).ok_or(()));
    if let Some(Err(())) = parsed {
        errors.add("port_type", IS_INVALID);
    }
    if let Some(Err(message)) = range.as_deref().map(parse_port_range) {
        errors.add("port_range", message);
    }
    match (parsed, range) {
        (None, None) => None,
        (Some(_), None) => {
            blank(errors, wrong, "port_range");
            None
        }
        (None, Some(_)) => {
            blank(errors, wrong, "port_type");
            None
        }
        (Some(Ok(port_type)), Some(range)) => Some(Ports { port_type, range }),
        (Some(Err(())), Some(_)) => None,
    }
}

#[cfg(test)]
mod tests;
