//! The egress rules as the elements of sixteen named interval sets, eight per family.
//!
//! A set is chosen by family, scope (user or global), ports (or not) and verdict, so that one
//! lookup per set decides a packet whatever the number of rules. User sets are keyed by
//! `source . destination`: a user rule gives one element per tunnel address of the user of
//! the destination's family.

use std::fmt::{self, Write};
use std::net::IpAddr;

use ipnet::IpNet;

use super::render::{Egress, EgressRule, Protocol, Scope, Verdict};

/// The number of sets: 2 families × (user, global) × (port, plain) × (accept, drop).
pub(crate) const SET_COUNT: usize = 16;

/// One of the sets, numbered in Firezone's precedence order within a family: user
/// port-accept, user port-drop, user accept, user drop, then the same four global ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SetId(usize);

impl SetId {
    /// Every set: IPv4's eight, then IPv6's, each family in precedence order.
    pub(crate) fn all() -> impl Iterator<Item = SetId> {
        (0..SET_COUNT).map(SetId)
    }

    fn of(v6: bool, user: bool, ports: bool, verdict: Verdict) -> Self {
        let drop = verdict == Verdict::Drop;
        Self(usize::from(v6) * 8 + usize::from(!user) * 4 + usize::from(!ports) * 2 + usize::from(drop))
    }

    fn v6(self) -> bool {
        self.0 >= 8
    }
    fn user(self) -> bool {
        self.0 % 8 < 4
    }
    fn ports(self) -> bool {
        self.0 % 4 < 2
    }
    fn verdict(self) -> &'static str {
        if self.0.is_multiple_of(2) {
            "accept"
        } else {
            "drop"
        }
    }
    fn family(self) -> &'static str {
        if self.v6() {
            "ip6"
        } else {
            "ip"
        }
    }

    /// `user_ip_port_accept`, …, `ip6_drop`.
    pub(crate) fn name(self) -> String {
        let user = if self.user() { "user_" } else { "" };
        let ports = if self.ports() { "port_" } else { "" };
        format!("{user}{}_{ports}{}", self.family(), self.verdict())
    }

    /// The set's key type, e.g. `ipv4_addr . ipv4_addr . inet_proto . inet_service`.
    pub(crate) fn key_type(self) -> String {
        let addr = if self.v6() { "ipv6_addr" } else { "ipv4_addr" };
        let mut key = if self.user() { format!("{addr} . {addr}") } else { addr.to_owned() };
        if self.ports() {
            key.push_str(" . inet_proto . inet_service");
        }
        key
    }

    /// The `egress` chain's rule that looks the packet up in this set.
    pub(crate) fn rule(self) -> String {
        let family = self.family();
        let mut key = String::new();
        if self.user() {
            key.push_str(&format!("{family} saddr . "));
        }
        key.push_str(&format!("{family} daddr"));
        if self.ports() {
            key.push_str(" . meta l4proto . th dport");
        }
        format!("{key} @{} {}", self.name(), self.verdict())
    }
}

/// One set element. The field order is the sort order the overlap sweep relies on: by
/// source, protocol, destination (network address, then shorter prefixes first), ports.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Element {
    pub(super) source: Option<IpAddr>,
    /// 0 for plain rules, else the IP protocol number.
    protocol: u8,
    /// Truncated to its network.
    pub(super) destination: IpNet,
    pub(super) first: u16,
    pub(super) last: u16,
}

impl Element {
    /// `tcp` or `udp` for a port rule's element.
    pub(super) fn protocol_name(&self) -> Option<&'static str> {
        match self.protocol {
            TCP => Some("tcp"),
            UDP => Some("udp"),
            _ => None,
        }
    }
}

impl fmt::Display for Element {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(source) = self.source {
            write!(f, "{source} . ")?;
        }
        let host = self.destination.prefix_len() == self.destination.max_prefix_len();
        if host {
            write!(f, "{}", self.destination.addr())?;
        } else {
            write!(f, "{}", self.destination)?;
        }
        if let Some(protocol) = self.protocol_name() {
            write!(f, " . {protocol} . {}", self.first)?;
            if self.last != self.first {
                write!(f, "-{}", self.last)?;
            }
        }
        Ok(())
    }
}

const TCP: u8 = 6;
const UDP: u8 = 17;

/// The elements of every set, indexed by [`SetId`], each sorted and free of overlaps.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct SetElements(pub(crate) [Vec<Element>; SET_COUNT]);

impl SetElements {
    /// The elements of `egress`'s rules. nft refuses an element overlapping another in the
    /// same interval set ("File exists"), which would fail the whole table; the API's
    /// overlap check prevents it, but one bad row must never stop enforcement. So exact
    /// duplicates are merged, and an element overlapping one kept before it in the same set
    /// is skipped with a warning. That is safe: elements of one set share the verdict, so
    /// where the two overlap the packet gets the verdict it would have had anyway. (Networks
    /// either nest or are disjoint, and the wider one is kept, so a plain rule loses nothing;
    /// a port range overlapping another only in part loses the part outside it.)
    pub(crate) fn of(egress: &Egress) -> Self {
        let mut sets: [Vec<Element>; SET_COUNT] = Default::default();
        for rule in &egress.rules {
            add_rule(&mut sets, rule);
        }
        for (index, elements) in sets.iter_mut().enumerate() {
            elements.sort_unstable();
            elements.dedup();
            let skipped = without_overlaps(elements);
            for element in skipped {
                tracing::warn!(set = SetId(index).name(), element = %element,
                    "an egress rule overlaps another of the same scope and action: its overlapping part is skipped");
            }
        }
        Self(sets)
    }

    /// The elements of one set.
    pub(crate) fn get(&self, set: SetId) -> &[Element] {
        &self.0[set.0]
    }
}

fn add_rule(sets: &mut [Vec<Element>; SET_COUNT], rule: &EgressRule) {
    let destination = rule.destination.trunc();
    let v6 = destination.addr().is_ipv6();
    let (protocol, first, last) = match rule.ports {
        Some(ports) => {
            let protocol = match ports.protocol {
                Protocol::Tcp => TCP,
                Protocol::Udp => UDP,
            };
            (protocol, ports.first.min(ports.last), ports.first.max(ports.last))
        }
        None => (0, 0, u16::MAX),
    };
    let user = matches!(rule.scope, Scope::Sources(_));
    let set = &mut sets[SetId::of(v6, user, rule.ports.is_some(), rule.verdict).0];
    let element = |source| Element { source, protocol, destination, first, last };
    match &rule.scope {
        Scope::Everyone => set.push(element(None)),
        Scope::Sources(sources) => {
            set.extend(sources.iter().filter(|source| source.is_ipv6() == v6).map(|source| element(Some(*source))));
        }
    }
}

/// Removes from sorted, duplicate-free `elements` each one overlapping an element kept before
/// it, and returns those. One pass over the sort order: within a source and protocol,
/// destinations come by network address with wider networks first, so the networks that
/// could contain the current one are exactly a stack of its ancestors (networks nest or are
/// disjoint); each holds the port ranges kept for it, sorted and disjoint, searched by
/// bisection. O(n log n) for n elements (the stack is at most 129 deep).
fn without_overlaps(elements: &mut Vec<Element>) -> Vec<Element> {
    let mut skipped = Vec::new();
    let mut kept: Vec<Element> = Vec::with_capacity(elements.len());
    // The ancestors of the current destination: (network, its kept port ranges).
    let mut stack: Vec<(IpNet, Vec<(u16, u16)>)> = Vec::new();
    for element in elements.drain(..) {
        let same_group = kept.last().is_some_and(|k| (k.source, k.protocol) == (element.source, element.protocol));
        if !same_group {
            stack.clear();
        }
        while stack.last().is_some_and(|(network, _)| !network.contains(&element.destination)) {
            stack.pop();
        }
        let overlapping = stack.iter().any(|(_, ranges)| ranges_overlap(ranges, element.first, element.last));
        if overlapping {
            skipped.push(element);
            continue;
        }
        match stack.last_mut() {
            Some((network, ranges)) if *network == element.destination => ranges.push((element.first, element.last)),
            _ => stack.push((element.destination, vec![(element.first, element.last)])),
        }
        kept.push(element);
    }
    *elements = kept;
    skipped
}

/// Whether `first..=last` overlaps one of `ranges` (sorted by start, disjoint).
fn ranges_overlap(ranges: &[(u16, u16)], first: u16, last: u16) -> bool {
    // The last range starting at or before `last` is the only candidate: those before it
    // end before it starts.
    let after = ranges.partition_point(|(start, _)| *start <= last);
    after > 0 && ranges[after - 1].1 >= first
}

/// Writes the elements as nft's comma-separated list, one per line, indented by `indent`.
pub(crate) fn write_elements(out: &mut String, elements: &[Element], indent: &str) -> fmt::Result {
    for element in elements {
        writeln!(out, "{indent}{element},")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nft::render::{IfName, PortMatch};

    fn rule(scope: Scope, destination: &str, verdict: Verdict, ports: Option<(Protocol, u16, u16)>) -> EgressRule {
        EgressRule {
            scope,
            destination: destination.parse().unwrap(),
            verdict,
            ports: ports.map(|(protocol, first, last)| PortMatch { protocol, first, last }),
        }
    }

    fn elements(rules: Vec<EgressRule>) -> Vec<(String, Vec<String>)> {
        let egress = Egress { wireguard: IfName::parse("wg0").unwrap(), rules, default: Verdict::Accept };
        let sets = SetElements::of(&egress);
        SetId::all()
            .filter(|set| !sets.get(*set).is_empty())
            .map(|set| (set.name(), sets.get(set).iter().map(ToString::to_string).collect()))
            .collect()
    }

    fn user(addresses: &[&str]) -> Scope {
        Scope::Sources(addresses.iter().map(|a| a.parse().unwrap()).collect())
    }

    #[test]
    fn sets_are_named_typed_and_matched_in_precedence_order() {
        let names: Vec<String> = SetId::all().map(SetId::name).collect();
        assert_eq!(
            names[..8],
            [
                "user_ip_port_accept",
                "user_ip_port_drop",
                "user_ip_accept",
                "user_ip_drop",
                "ip_port_accept",
                "ip_port_drop",
                "ip_accept",
                "ip_drop"
            ]
        );
        assert_eq!(names[8], "user_ip6_port_accept");
        assert_eq!(SetId(9).key_type(), "ipv6_addr . ipv6_addr . inet_proto . inet_service");
        assert_eq!(SetId(6).key_type(), "ipv4_addr");
        assert_eq!(SetId(1).rule(), "ip saddr . ip daddr . meta l4proto . th dport @user_ip_port_drop drop");
        assert_eq!(SetId(14).rule(), "ip6 daddr @ip6_accept accept");
    }

    #[test]
    fn a_user_rule_pairs_each_source_of_the_destination_family() {
        let both = user(&["10.3.2.2", "fd00::2", "10.3.2.3"]);
        let got = elements(vec![
            rule(both.clone(), "1.1.1.1/24", Verdict::Drop, None),
            rule(both, "2001:db8::1/64", Verdict::Accept, Some((Protocol::Udp, 53, 53))),
            rule(user(&["fd00::9"]), "9.9.9.9/32", Verdict::Drop, None),
        ]);
        assert_eq!(
            got,
            [
                (
                    "user_ip_drop".to_owned(),
                    vec!["10.3.2.2 . 1.1.1.0/24".to_owned(), "10.3.2.3 . 1.1.1.0/24".to_owned()]
                ),
                ("user_ip6_port_accept".to_owned(), vec!["fd00::2 . 2001:db8::/64 . udp . 53".to_owned()]),
            ]
        );
    }

    #[test]
    fn duplicates_merge_and_overlaps_in_one_set_are_skipped() {
        let a = user(&["10.3.2.2"]);
        let got = elements(vec![
            rule(Scope::Everyone, "10.0.0.0/8", Verdict::Drop, None),
            rule(Scope::Everyone, "10.1.0.0/16", Verdict::Drop, None),
            rule(Scope::Everyone, "10.1.2.3/8", Verdict::Drop, None),
            rule(Scope::Everyone, "11.0.0.0/8", Verdict::Drop, None),
            // Another set: not an overlap.
            rule(Scope::Everyone, "10.1.0.0/16", Verdict::Accept, None),
            rule(a.clone(), "0.0.0.0/0", Verdict::Accept, Some((Protocol::Tcp, 80, 90))),
            rule(a.clone(), "1.1.1.1/32", Verdict::Accept, Some((Protocol::Tcp, 85, 100))),
            rule(a.clone(), "1.1.1.1/32", Verdict::Accept, Some((Protocol::Tcp, 91, 100))),
            rule(a.clone(), "1.1.1.1/32", Verdict::Accept, Some((Protocol::Udp, 80, 90))),
            rule(a, "0.0.0.0/0", Verdict::Accept, Some((Protocol::Tcp, 443, 443))),
        ]);
        assert_eq!(
            got,
            [
                (
                    "user_ip_port_accept".to_owned(),
                    vec![
                        "10.3.2.2 . 0.0.0.0/0 . tcp . 80-90".to_owned(),
                        "10.3.2.2 . 0.0.0.0/0 . tcp . 443".to_owned(),
                        "10.3.2.2 . 1.1.1.1 . tcp . 91-100".to_owned(),
                        "10.3.2.2 . 1.1.1.1 . udp . 80-90".to_owned(),
                    ]
                ),
                ("ip_accept".to_owned(), vec!["10.1.0.0/16".to_owned()]),
                ("ip_drop".to_owned(), vec!["10.0.0.0/8".to_owned(), "11.0.0.0/8".to_owned()]),
            ]
        );
    }

    #[test]
    fn ten_thousand_overlapping_rules_are_swept_quickly() {
        let rules = (0..10_000u32)
            .map(|i| {
                rule(
                    Scope::Everyone,
                    &format!("10.{}.{}.0/{}", i / 256 % 256, i % 256, 8 + i % 17),
                    Verdict::Drop,
                    None,
                )
            })
            .collect();
        assert_eq!(elements(rules), [("ip_drop".to_owned(), vec!["10.0.0.0/8".to_owned()])]);
    }
}
