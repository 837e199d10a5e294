//! The egress rules as the nftables table enforces them: the domain's [`EgressPolicy`] (rules
//! as stored, sources as tunnel addresses) to the model the renderer reads.

use std::collections::HashMap;
use std::net::IpAddr;

use ferrozone_domain::egress::{parse_destination, parse_port_range, EgressPolicy, PortType, Rule, RuleAction};
use ferrozone_wg::nft::{Egress, EgressRule, IfName, PortMatch, Protocol, Scope, Verdict};
use ipnet::IpNet;
use uuid::Uuid;

use crate::config::EgressDefaultAction;

/// The `Egress` of the table: every rule that parses, in id order (so the same policy
/// renders the same text), a user's rule matching the addresses of that user's active
/// devices (none when it has none: a disabled user's rules match nothing, as its peers are
/// gone). A stored rule that does not parse (the database was edited by hand) is skipped
/// with a warning: one bad row must not leave the whole table unapplied.
pub fn egress(policy: &EgressPolicy, wireguard: IfName, default: EgressDefaultAction) -> Egress {
    let sources = sources_by_user(policy);
    let mut rules: Vec<&Rule> = policy.rules.iter().collect();
    rules.sort_by_key(|rule| rule.id);
    let rules = rules.into_iter().filter_map(|rule| egress_rule(rule, &sources)).collect();
    Egress { wireguard, rules, default: verdict_of_default(default) }
}

/// Every user's source addresses, sorted.
fn sources_by_user(policy: &EgressPolicy) -> HashMap<Uuid, Vec<IpAddr>> {
    let mut by_user: HashMap<Uuid, Vec<IpAddr>> = HashMap::new();
    for source in &policy.sources {
        let addresses = source.ipv4.map(IpAddr::V4).into_iter().chain(source.ipv6.map(IpAddr::V6));
        by_user.entry(source.user_id).or_default().extend(addresses);
    }
    for addresses in by_user.values_mut() {
        addresses.sort_unstable();
    }
    by_user
}

fn egress_rule(rule: &Rule, sources: &HashMap<Uuid, Vec<IpAddr>>) -> Option<EgressRule> {
    let Some(destination) = destination(&rule.destination) else {
        tracing::warn!(rule.id = %rule.id, destination = rule.destination, "a stored rule's destination does not parse: skipped");
        return None;
    };
    let ports = match &rule.ports {
        None => None,
        Some(ports) => match parse_port_range(&ports.range) {
            Ok((first, last)) => Some(PortMatch { protocol: protocol(ports.port_type), first, last }),
            Err(problem) => {
                tracing::warn!(rule.id = %rule.id, port_range = ports.range, problem, "a stored rule's port range does not parse: skipped");
                return None;
            }
        },
    };
    let scope = match rule.user_id {
        None => Scope::Everyone,
        Some(user_id) => Scope::Sources(sources.get(&user_id).cloned().unwrap_or_default()),
    };
    Some(EgressRule { scope, destination, verdict: verdict(rule.action), ports })
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

fn verdict_of_default(default: EgressDefaultAction) -> Verdict {
    match default {
        EgressDefaultAction::Accept => Verdict::Accept,
        EgressDefaultAction::Drop => Verdict::Drop,
    }
}

#[cfg(test)]
mod tests;
