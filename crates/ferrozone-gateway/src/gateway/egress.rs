//! The egress rules as the nftables table enforces them: the domain's [`EgressPolicy`] (rules
//! as stored, sources as tunnel addresses) to the model the renderer reads.

use std::collections::HashMap;
use std::net::IpAddr;

use crate::nft::{Egress, EgressRule, IfName, PortMatch, Protocol, Scope, Verdict};
use ferrozone_domain::egress::{
    parse_destination, parse_port_range, EgressPolicy, EgressRules, Membership, PortType, Rule, RuleAction, RuleScope,
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
    egress_of(&policy.rules, &policy.memberships, policy.default_action, &UserSources::of(policy), wireguard)
}

/// [`egress`] of `rules` (read without sources) with the sources of an earlier read, `users`
/// (docs/design/groups.md, "Membership changes"); `None` when a rule or a membership names a
/// user `users` does not cover: the policy must be read whole.
pub fn egress_with(rules: &EgressRules, users: &UserSources, wireguard: IfName) -> Option<(Egress, Vec<Skipped>)> {
    let named = named_users(&rules.rules, &rules.memberships);
    if !named.into_iter().all(|user| users.0.contains_key(&user)) {
        return None;
    }
    Some(egress_of(&rules.rules, &rules.memberships, rules.default_action, users, wireguard))
}

fn egress_of(
    rules: &[Rule],
    memberships: &[Membership],
    default: RuleAction,
    users: &UserSources,
    wireguard: IfName,
) -> (Egress, Vec<Skipped>) {
    let sources = Sources { by_user: &users.0, by_group: by_group(memberships, users) };
    let mut sorted: Vec<&Rule> = rules.iter().collect();
    sorted.sort_by_key(|rule| rule.id);
    let (mut rules, mut skipped) = (Vec::with_capacity(sorted.len()), Vec::new());
    for rule in sorted {
        match egress_rule(rule, &sources) {
            Ok(rule) => rules.push(rule),
            Err(problem) => skipped.push(Skipped { id: rule.id, problem }),
        }
    }
    (Egress { wireguard, rules, default: verdict(default) }, skipped)
}

/// The tunnel addresses of the active devices of users, each sorted, as one read of the
/// whole policy found them: an entry for every user a rule or a membership named then (none
/// for a user without active devices), so that a later read of the rules alone can tell
/// whether it names anyone whose devices were not read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserSources(HashMap<Uuid, Vec<IpAddr>>);

impl UserSources {
    pub fn of(policy: &EgressPolicy) -> Self {
        let mut by_user: HashMap<Uuid, Vec<IpAddr>> =
            named_users(&policy.rules, &policy.memberships).into_iter().map(|user| (user, Vec::new())).collect();
        for source in &policy.sources {
            let addresses = source.ipv4.map(IpAddr::V4).into_iter().chain(source.ipv6.map(IpAddr::V6));
            by_user.entry(source.user_id).or_default().extend(addresses);
        }
        for addresses in by_user.values_mut() {
            addresses.sort_unstable();
            addresses.dedup();
        }
        Self(by_user)
    }
}

/// The users whose rules or whose groups' rules the table holds.
fn named_users(rules: &[Rule], memberships: &[Membership]) -> Vec<Uuid> {
    let ruled = rules.iter().filter_map(|rule| match rule.scope() {
        RuleScope::User(id) => Some(id),
        RuleScope::Group(_) | RuleScope::Everyone => None,
    });
    ruled.chain(memberships.iter().map(|membership| membership.user_id)).collect()
}

/// The source addresses of each group a membership names, sorted.
fn by_group(memberships: &[Membership], users: &UserSources) -> HashMap<Uuid, Vec<IpAddr>> {
    let mut by_group: HashMap<Uuid, Vec<IpAddr>> = HashMap::new();
    for membership in memberships {
        let addresses = users.0.get(&membership.user_id).into_iter().flatten();
        by_group.entry(membership.group_id).or_default().extend(addresses);
    }
    for addresses in by_group.values_mut() {
        addresses.sort_unstable();
        addresses.dedup();
    }
    by_group
}

/// The source addresses of every user, and of every group a rule names, each sorted.
struct Sources<'a> {
    by_user: &'a HashMap<Uuid, Vec<IpAddr>>,
    by_group: HashMap<Uuid, Vec<IpAddr>>,
}

fn egress_rule(rule: &Rule, sources: &Sources<'_>) -> Result<EgressRule, String> {
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
