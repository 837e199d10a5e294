//! The egress rules as the nftables table enforces them: the domain's [`EgressPolicy`] (rules
//! as stored, sources as tunnel addresses) to the model the renderer reads.

use std::collections::HashMap;
use std::net::IpAddr;

use crate::nft::{Egress, EgressRule, IfName, PortMatch, Protocol, Scope, Verdict};
use ferrozone_domain::egress::{
    parse_destination, parse_port_range, EgressPolicy, PortType, Rule, RuleAction, RuleScope,
};
use ipnet::IpNet;
use uuid::Uuid;

/// A stored rule the table cannot hold (the database was edited by hand), and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub id: Uuid,
    pub problem: String,
}

/// The `Egress` of the table: every rule that parses, in id order (so the same policy
/// renders the same text), a user's rule matching the addresses of that user's active
/// devices and a group's rule those of its members' (none when there are none: a disabled
/// user's rules match nothing, as its peers are gone). A stored rule that does not parse is
/// left out and returned, for the caller to warn about: one bad row must not leave the
/// whole table unapplied.
pub fn egress(policy: &EgressPolicy, wireguard: IfName) -> (Egress, Vec<Skipped>) {
    let sources = Sources::of(policy);
    let mut sorted: Vec<&Rule> = policy.rules.iter().collect();
    sorted.sort_by_key(|rule| rule.id);
    let (mut rules, mut skipped) = (Vec::with_capacity(sorted.len()), Vec::new());
    for rule in sorted {
        match egress_rule(rule, &sources) {
            Ok(rule) => rules.push(rule),
            Err(problem) => skipped.push(Skipped { id: rule.id, problem }),
        }
    }
    (Egress { wireguard, rules, default: verdict(policy.default_action) }, skipped)
}

/// The source addresses of every user, and of every group a rule names, each sorted.
struct Sources {
    by_user: HashMap<Uuid, Vec<IpAddr>>,
    by_group: HashMap<Uuid, Vec<IpAddr>>,
}

impl Sources {
    fn of(policy: &EgressPolicy) -> Self {
        let mut by_user: HashMap<Uuid, Vec<IpAddr>> = HashMap::new();
        for source in &policy.sources {
            let addresses = source.ipv4.map(IpAddr::V4).into_iter().chain(source.ipv6.map(IpAddr::V6));
            by_user.entry(source.user_id).or_default().extend(addresses);
        }
        let mut by_group: HashMap<Uuid, Vec<IpAddr>> = HashMap::new();
        for membership in &policy.memberships {
            let addresses = by_user.get(&membership.user_id).into_iter().flatten();
            by_group.entry(membership.group_id).or_default().extend(addresses);
        }
        for addresses in by_user.values_mut().chain(by_group.values_mut()) {
            addresses.sort_unstable();
            addresses.dedup();
        }
        Self { by_user, by_group }
    }
}

fn egress_rule(rule: &Rule, sources: &Sources) -> Result<EgressRule, String> {
    let destination =
        destination(&rule.destination).ok_or_else(|| format!("destination {:?} does not parse", rule.destination))?;
    let ports = match &rule.ports {
        None => None,
        Some(ports) => {
            let (first, last) = parse_port_range(&ports.range)
                .map_err(|problem| format!("port_range {:?} does not parse: {problem}", ports.range))?;
            Some(PortMatch { protocol: protocol(ports.port_type), first, last })
        }
    };
    let scope = match rule.scope() {
        RuleScope::Everyone => Scope::Everyone,
        RuleScope::User(id) => Scope::Sources(sources.by_user.get(&id).cloned().unwrap_or_default()),
        RuleScope::Group(id) => Scope::Group(sources.by_group.get(&id).cloned().unwrap_or_default()),
    };
    Ok(EgressRule { scope, destination, verdict: verdict(rule.action), ports })
}

/// The destination as a network, host bits kept (the renderer truncates).
fn destination(text: &str) -> Option<IpNet> {
    let network = parse_destination(text)?;
    IpNet::new(network.addr, network.prefix).ok()
}

fn protocol(port_type: PortType) -> Protocol {
    match port_type {
        PortType::Tcp => Protocol::Tcp,
        PortType::Udp => Protocol::Udp,
    }
}

fn verdict(action: RuleAction) -> Verdict {
    match action {
        RuleAction::Accept => Verdict::Accept,
        RuleAction::Drop => Verdict::Drop,
    }
}

#[cfg(test)]
mod tests;
