//! Egress rules (Firezone's `/v0/rules`): the model, the parsing of destinations and port
//! ranges with Firezone's messages, and the overlap that two rules may not have.
//!
//! `destination` and `port_range` are kept exactly as the client sent them (Terraform
//! compares them); what they mean is parsed from that text whenever it is needed.

mod decide;
mod parse;

use std::net::{Ipv4Addr, Ipv6Addr};

use uuid::Uuid;

use crate::Timestamp;

pub use decide::{applying_to, decide, lookup_step, Decision, Packet, Transport};
pub use parse::{parse_destination, parse_port_range, Network};

/// `destination`: overlaps a rule of the same action and scope.
pub const OVERLAPS: &str = "destination overlaps with an existing rule";
/// `port_range`: not `lo-hi`, `lo - hi`, `n` or `[lo,hi)`.
pub const BAD_FORMAT: &str = "bad format";
/// `port_range`: `lo` above `hi`.
pub const LOWER_ABOVE_UPPER: &str = "lower value cannot be higher than upper value";
/// `port_range`: a port outside 1..=65535.
pub const OUT_OF_RANGE: &str = "port is not within valid range";

/// What a rule does with matching traffic, and what the gateway does with traffic no rule
/// matches (`egress_default_action`, accept unless set).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum RuleAction {
    #[default]
    Accept,
    Drop,
}

impl RuleAction {
    pub const fn as_str(self) -> &'static str {
        match self {
            RuleAction::Accept => "accept",
            RuleAction::Drop => "drop",
        }
    }

    /// Each value with the name a client sends and reads.
    pub const NAMES: [(&'static str, Self); 2] = [("accept", Self::Accept), ("drop", Self::Drop)];

    pub fn parse(s: &str) -> Option<Self> {
        Self::NAMES.iter().find(|(name, _)| *name == s).map(|(_, action)| *action)
    }
}

/// The transport protocol of a port rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PortType {
    Tcp,
    Udp,
}

impl PortType {
    pub const fn as_str(self) -> &'static str {
        match self {
            PortType::Tcp => "tcp",
            PortType::Udp => "udp",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "tcp" => Some(PortType::Tcp),
            "udp" => Some(PortType::Udp),
            _ => None,
        }
    }
}

/// A port rule's protocol and range, the range as sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ports {
    pub port_type: PortType,
    pub range: String,
}

/// An egress rule: a user's (`user_id`), a group's (`group_id`, Ferrozone's own), or,
/// with neither, every user's. Never both (docs/design/groups.md, "Group rules").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub id: Uuid,
    pub user_id: Option<Uuid>,
    pub group_id: Option<Uuid>,
    /// An address or CIDR, as sent (host bits kept).
    pub destination: String,
    pub action: RuleAction,
    pub ports: Option<Ports>,
    pub inserted_at: Timestamp,
    pub updated_at: Timestamp,
}

/// Whose traffic a rule decides, in the order the scopes are looked up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RuleScope {
    /// One user's devices.
    User(Uuid),
    /// The devices of a group's members.
    Group(Uuid),
    /// Every device.
    Everyone,
}

impl RuleScope {
    /// 0 for a user's rules, 1 for a group's, 2 for the global ones: the lookup order.
    pub const fn rank(self) -> u8 {
        match self {
            RuleScope::User(_) => 0,
            RuleScope::Group(_) => 1,
            RuleScope::Everyone => 2,
        }
    }
}

impl Rule {
    /// The rule's scope. A row naming both a user and a group (the database refuses it)
    /// counts as the user's.
    pub fn scope(&self) -> RuleScope {
        match (self.user_id, self.group_id) {
            (Some(user), _) => RuleScope::User(user),
            (None, Some(group)) => RuleScope::Group(group),
            (None, None) => RuleScope::Everyone,
        }
    }

    /// Whether `self` and `other` may not both exist: same action and scope (the same user,
    /// the same group, or both global; with or without ports, same protocol), overlapping
    /// destinations and, for port rules, overlapping ranges. Text that does not parse
    /// overlaps nothing. Rules of two groups may overlap: a member of both gets the first
    /// match in lookup order, as with a user's rule and a global one.
    pub fn overlaps(&self, other: &Rule) -> bool {
        if self.id == other.id || self.action != other.action || self.scope() != other.scope() {
            return false;
        }
        let ports_overlap = match (&self.ports, &other.ports) {
            (None, None) => true,
            (Some(a), Some(b)) => a.port_type == b.port_type && ranges_overlap(&a.range, &b.range),
            _ => false,
        };
        ports_overlap && destinations_overlap(&self.destination, &other.destination)
    }
}

/// What the data plane enforces, read from one snapshot: every rule, the members of every
/// group a rule names, and the tunnel addresses of the active devices (owner not disabled)
/// of every user a rule names or who is a member of such a group; and what happens to
/// traffic no rule matches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EgressPolicy {
    pub rules: Vec<Rule>,
    pub default_action: RuleAction,
    /// One entry per active device of a user with a rule or in a group with one, in no
    /// order.
    pub sources: Vec<RuleSource>,
    /// The memberships of the groups that rules name, in no order.
    pub memberships: Vec<Membership>,
}

/// An [`EgressPolicy`] without its sources, from one snapshot: what a change of the rules or
/// the memberships alone moves (docs/design/groups.md, "Membership changes").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EgressRules {
    pub rules: Vec<Rule>,
    pub default_action: RuleAction,
    /// The memberships of the groups that rules name, in no order.
    pub memberships: Vec<Membership>,
}

/// A user's membership of a group that a rule names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Membership {
    pub group_id: Uuid,
    pub user_id: Uuid,
}

/// The tunnel addresses of one active device, and whose it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleSource {
    pub user_id: Uuid,
    pub ipv4: Option<Ipv4Addr>,
    pub ipv6: Option<Ipv6Addr>,
}

fn ranges_overlap(a: &str, b: &str) -> bool {
    match (parse_port_range(a), parse_port_range(b)) {
        (Ok((a_lo, a_hi)), Ok((b_lo, b_hi))) => a_lo <= b_hi && b_lo <= a_hi,
        _ => false,
    }
}

fn destinations_overlap(a: &str, b: &str) -> bool {
    match (parse_destination(a), parse_destination(b)) {
        (Some(a), Some(b)) => a.overlaps(&b),
        _ => false,
    }
}

#[cfg(test)]
mod tests;
