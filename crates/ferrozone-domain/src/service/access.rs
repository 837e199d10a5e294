//! Check access: what the egress rules do with traffic from a user's or a device's tunnel
//! address to one destination (docs/design/egress-rules.md, "Check access"). Admin only,
//! like the rules; it reads, never writes.

use std::net::IpAddr;

use uuid::Uuid;

use super::{Domain, Principal};
use crate::egress::{decide, Packet, Rule, RuleAction, RuleScope, Transport};
use crate::error::{DomainError, Errors, Result};
use crate::validate::{CANT_BE_BLANK, IS_INVALID};

/// `user_id`: neither a user nor a device was named.
pub const NO_SOURCE: &str = "name a user or a device";
/// `device_id`: both were named.
pub const TWO_SOURCES: &str = "name a user or a device, not both";
/// `destination`: not one address (a network, a name).
pub const NOT_AN_ADDRESS: &str = "must be an IP address";
/// `protocol`: not one of the three.
pub const PROTOCOLS: &str = "must be one of: tcp, udp, icmp";
/// `port`: outside 1..=65535.
pub const PORT_RANGE: &str = "must be an integer from 1 to 65535";
/// `port` with `icmp`.
pub const NO_PORT_FOR_ICMP: &str = "must be blank for icmp";
/// `user_id` or `device_id`: no such user or device.
pub const DOES_NOT_EXIST: &str = "does not exist";

/// The question as sent (query parameters or a form), each field trimmed text; empty
/// fields count as absent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccessQuestion {
    pub user_id: Option<String>,
    pub device_id: Option<String>,
    pub destination: Option<String>,
    pub protocol: Option<String>,
    pub port: Option<String>,
}

/// Whose traffic the question is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    User(Uuid),
    Device(Uuid),
}

/// What decided the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecidedBy {
    /// A rule, [`AccessAnswer::rule`].
    Rule,
    /// No rule matched: the default action.
    DefaultAction,
    /// The user is disabled: their devices are off the interface, nothing leaves them.
    UserDisabled,
}

impl DecidedBy {
    pub const fn as_str(self) -> &'static str {
        match self {
            DecidedBy::Rule => "rule",
            DecidedBy::DefaultAction => "default_action",
            DecidedBy::UserDisabled => "user_disabled",
        }
    }
}

/// The answer: what happens, what decided it, and whose traffic it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessAnswer {
    pub action: RuleAction,
    pub decided_by: DecidedBy,
    pub rule: Option<Rule>,
    /// The name of the deciding rule's group, for a group's rule.
    pub group_name: Option<String>,
    pub default_action: RuleAction,
    pub user_id: Uuid,
    pub device_id: Option<Uuid>,
}

impl AccessAnswer {
    /// The answer in one sentence, as the console shows it.
    pub fn explanation(&self) -> String {
        let verb = match self.action {
            RuleAction::Accept => "Allowed",
            RuleAction::Drop => "Dropped",
        };
        match (self.decided_by, &self.rule) {
            (DecidedBy::Rule, Some(rule)) => {
                let scope = match (rule.scope(), &self.group_name) {
                    (RuleScope::User(_), _) => "the user's rule".to_owned(),
                    (RuleScope::Group(_), Some(name)) => format!("the rule of group \u{201c}{name}\u{201d}"),
                    (RuleScope::Group(_), None) => "a group's rule".to_owned(),
                    (RuleScope::Everyone, _) => "the global rule".to_owned(),
                };
                let ports = rule
                    .ports
                    .as_ref()
                    .map(|ports| format!(", {} {}", ports.port_type.as_str().to_uppercase(), ports.range))
                    .unwrap_or_default();
                format!("{verb} by {scope} {} {}{ports}.", rule.action.as_str(), rule.destination)
            }
            (DecidedBy::UserDisabled, _) => {
                "Dropped: the user is disabled, so their devices are off the VPN.".to_owned()
            }
            _ => format!("{verb} by the default action ({}): no rule matches.", self.default_action.as_str()),
        }
    }
}

impl Domain {
    /// What the rules in effect do with `question`'s traffic.
    pub async fn check_access(&self, actor: &Principal, question: &AccessQuestion) -> Result<AccessAnswer> {
        actor.require_admin()?;
        let (source, destination, transport) = check(question)?;
        let (user_id, device_id) = match source {
            Source::User(id) => (id, None),
            Source::Device(id) => {
                let device = self.store().device_by_id(id).await?;
                let device = device.ok_or_else(|| DomainError::invalid("device_id", DOES_NOT_EXIST))?;
                (device.user_id, Some(id))
            }
        };
        let user = self.store().user_by_id(user_id).await?;
        let user = user.ok_or_else(|| DomainError::invalid("user_id", DOES_NOT_EXIST))?;
        let default_action = self.current_values().egress_default_action;
        let answer = |action, decided_by, rule| AccessAnswer {
            action,
            decided_by,
            rule,
            group_name: None,
            default_action,
            user_id,
            device_id,
        };
        if user.disabled_at.is_some() {
            return Ok(answer(RuleAction::Drop, DecidedBy::UserDisabled, None));
        }
        let (rules, groups) = tokio::try_join!(self.store().list_rules(), self.store().user_groups(user_id))?;
        let group_ids: Vec<Uuid> = groups.iter().map(|group| group.id).collect();
        let packet = Packet { user_id: Some(user_id), groups: &group_ids, destination, transport };
        let decision = decide(&rules, &packet, default_action);
        Ok(match decision.rule {
            Some(rule) => {
                let group = groups.iter().find(|group| Some(group.id) == rule.group_id);
                AccessAnswer {
                    group_name: group.map(|group| group.name.clone()),
                    ..answer(decision.action, DecidedBy::Rule, Some(rule.clone()))
                }
            }
            None => answer(decision.action, DecidedBy::DefaultAction, None),
        })
    }
}

/// The question's fields, each checked, every problem reported at its field.
fn check(q: &AccessQuestion) -> Result<(Source, IpAddr, Transport)> {
    let mut errors = Errors::new();
    let uuid = |field: &str, text: &Option<String>, errors: &mut Errors| {
        let text = present(text)?;
        let id = Uuid::parse_str(text).ok();
        if id.is_none() {
            errors.add(field, IS_INVALID);
        }
        id
    };
    let user = uuid("user_id", &q.user_id, &mut errors);
    let device = uuid("device_id", &q.device_id, &mut errors);
    let source = match (present(&q.user_id), present(&q.device_id)) {
        (None, None) => {
            errors.add("user_id", NO_SOURCE);
            None
        }
        (Some(_), Some(_)) => {
            errors.add("device_id", TWO_SOURCES);
            None
        }
        _ => user.map(Source::User).or(device.map(Source::Device)),
    };
    let destination = match present(&q.destination) {
        None => Err(CANT_BE_BLANK),
        Some(text) => text.parse::<IpAddr>().map_err(|_| NOT_AN_ADDRESS),
    };
    let destination = destination.map_err(|message| errors.add("destination", message)).ok();
    let transport = transport(q).map_err(|(field, message)| errors.add(field, message)).ok();
    match (source, destination, transport) {
        (Some(source), Some(destination), Some(transport)) if errors.is_empty() => Ok((source, destination, transport)),
        _ => Err(DomainError::Invalid(errors)),
    }
}

fn transport(q: &AccessQuestion) -> std::result::Result<Transport, (&'static str, &'static str)> {
    let port = present(&q.port);
    let protocol = present(&q.protocol).ok_or(("protocol", CANT_BE_BLANK))?;
    let port_number = || {
        let port = port.ok_or(("port", CANT_BE_BLANK))?;
        port.parse::<u16>().ok().filter(|p| *p >= 1).ok_or(("port", PORT_RANGE))
    };
    match protocol {
        "tcp" => port_number().map(Transport::Tcp),
        "udp" => port_number().map(Transport::Udp),
        "icmp" if port.is_some() => Err(("port", NO_PORT_FOR_ICMP)),
        "icmp" => Ok(Transport::Other),
        _ => Err(("protocol", PROTOCOLS)),
    }
}

/// The field's text, trimmed, unless it is missing or blank.
fn present(field: &Option<String>) -> Option<&str> {
    field.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn question(pairs: &[(&str, &str)]) -> AccessQuestion {
        let get = |name: &str| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).to_owned());
        AccessQuestion {
            user_id: get("user_id"),
            device_id: get("device_id"),
            destination: get("destination"),
            protocol: get("protocol"),
            port: get("port"),
        }
    }

    fn errors(pairs: &[(&str, &str)]) -> Vec<(String, Vec<String>)> {
        match check(&question(pairs)) {
            Err(DomainError::Invalid(errors)) => {
                errors.iter().map(|(field, messages)| (field.to_owned(), messages.to_vec())).collect()
            }
            other => panic!("expected errors, got {other:?}"),
        }
    }

    fn one(field: &str, message: &str) -> Vec<(String, Vec<String>)> {
        vec![(field.to_owned(), vec![message.to_owned()])]
    }

    #[test]
    fn every_field_is_checked_at_its_name() {
        let id = Uuid::now_v7().to_string();
        let good = [("user_id", id.as_str()), ("destination", "10.0.0.1"), ("protocol", "tcp"), ("port", "443")];
        assert_eq!(check(&question(&good)).unwrap().2, Transport::Tcp(443));
        let icmp = [("device_id", id.as_str()), ("destination", " 2001:db8::1 "), ("protocol", "icmp")];
        assert_eq!(check(&question(&icmp)).unwrap().2, Transport::Other);
        let cases: [(&[(&str, &str)], _); 7] = [
            (&[("destination", "10.0.0.1"), ("protocol", "icmp")], one("user_id", NO_SOURCE)),
            (
                &[("user_id", &id), ("device_id", &id), ("destination", "10.0.0.1"), ("protocol", "icmp")],
                one("device_id", TWO_SOURCES),
            ),
            (&[("user_id", "me"), ("destination", "10.0.0.1"), ("protocol", "icmp")], one("user_id", IS_INVALID)),
            (
                &[("user_id", &id), ("destination", "10.0.0.0/8"), ("protocol", "icmp")],
                one("destination", NOT_AN_ADDRESS),
            ),
            (&[("user_id", &id), ("destination", "10.0.0.1"), ("protocol", "sctp")], one("protocol", PROTOCOLS)),
            (
                &[("user_id", &id), ("destination", "10.0.0.1"), ("protocol", "udp"), ("port", "65536")],
                one("port", PORT_RANGE),
            ),
            (
                &[("user_id", &id), ("destination", "10.0.0.1"), ("protocol", "icmp"), ("port", "1")],
                one("port", NO_PORT_FOR_ICMP),
            ),
        ];
        for (pairs, expected) in cases {
            assert_eq!(errors(pairs), expected, "{pairs:?}");
        }
        let blank = errors(&[("user_id", " "), ("port", "0")]);
        let fields: Vec<&str> = blank.iter().map(|(field, _)| field.as_str()).collect();
        assert_eq!(fields, ["destination", "protocol", "user_id"], "every blank field at once");
    }
}
