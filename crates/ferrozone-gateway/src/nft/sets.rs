//! The egress rules as the elements of twenty-four named interval sets, twelve per family.
//!
//! A set is chosen by family, scope (user, group or global), ports (or not) and verdict, so
//! that one lookup per set decides a packet whatever the number of rules, groups or members.
//! User and group sets are keyed by `source . destination`: a user rule gives one element
//! per tunnel address of the user of the destination's family, a group rule one per tunnel
//! address of each of the group's members.

use std::fmt::{self, Write};
use std::net::IpAddr;

use ipnet::IpNet;

use super::render::{Egress, EgressRule, Protocol, Scope, Verdict};

/// The number of sets: 2 families × (user, group, global) × (port, plain) × (accept, drop).
pub(crate) const SET_COUNT: usize = 24;
/// The sets of one family.
const PER_FAMILY: usize = 12;

/// Whose traffic a set's elements decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    User,
    Group,
    Global,
}

/// One of the sets, numbered in precedence order within a family: user port-accept, user
/// port-drop, user accept, user drop, then the same four of groups, then the four global
/// ones (docs/design/groups.md, "Group rules").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SetId(usize);

impl SetId {
    /// Every set: IPv4's twelve, then IPv6's, each family in precedence order.
    pub(crate) fn all() -> impl Iterator<Item = SetId> {
        (0..SET_COUNT).map(SetId)
    }

    fn of(v6: bool, kind: Kind, ports: bool, verdict: Verdict) -> Self {
        let drop = verdict == Verdict::Drop;
        let rank = match kind {
            Kind::User => 0,
            Kind::Group => 1,
            Kind::Global => 2,
        };
        Self(usize::from(v6) * PER_FAMILY + rank * 4 + usize::from(!ports) * 2 + usize::from(drop))
    }

    fn v6(self) -> bool {
        self.0 >= PER_FAMILY
    }
    fn kind(self) -> Kind {
        match self.0 % PER_FAMILY / 4 {
            0 => Kind::User,
            1 => Kind::Group,
            _ => Kind::Global,
        }
    }
    /// Whether the set is keyed by source as well (a user's or a group's).
    fn sourced(self) -> bool {
        self.kind() != Kind::Global
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

    /// `user_ip_port_accept`, …, `group_ip_drop`, …, `ip6_drop`.
    pub(crate) fn name(self) -> String {
        let scope = match self.kind() {
            Kind::User => "user_",
            Kind::Group => "group_",
            Kind::Global => "",
        };
        let ports = if self.ports() { "port_" } else { "" };
        format!("{scope}{}_{ports}{}", self.family(), self.verdict())
    }

    /// The set's key type, e.g. `ipv4_addr . ipv4_addr . inet_proto . inet_service`.
    pub(crate) fn key_type(self) -> String {
        let addr = if self.v6() { "ipv6_addr" } else { "ipv4_addr" };
        let mut key = if self.sourced() { format!("{addr} . {addr}") } else { addr.to_owned() };
        if self.ports() {
            key.push_str(" . inet_proto . inet_service");
        }
        key
    }

    /// The `egress` chain's rule that looks the packet up in this set.
    pub(crate) fn rule(self) -> String {
        let family = self.family();
        let mut key = String::new();
        if self.sourced() {
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
    /// same interval set ("File exists"), which would fail the whole table. Elements of one
    /// set share the verdict, so where two overlap the packet gets that verdict either way:
    /// exact duplicates are merged, and an element is clipped to the part of its port range
    /// that the elements kept before it do not cover for its destination (nothing, for a
    /// plain rule inside a wider one). The union of what the set matches is unchanged.
    ///
    /// In the user and global sets an overlap means a stored row the API's overlap check
    /// would have refused, and is warned about. In the group sets it is ordinary: a member
    /// of two groups whose rules overlap.
    pub(crate) fn of(egress: &Egress) -> Self {
        let mut sets: [Vec<Element>; SET_COUNT] = Default::default();
        for rule in &egress.rules {
            add_rule(&mut sets, rule);
        }
        for (index, elements) in sets.iter_mut().enumerate() {
            elements.sort_unstable();
            elements.dedup();
            let clipped = without_overlaps(elements);
            if SetId(index).kind() == Kind::Group {
                continue;
            }
            for element in clipped {
                tracing::warn!(set = SetId(index).name(), element = %element,
                    "an egress rule overlaps another of the same scope and action: its overlapping part is merged");
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
    let (kind, sources) = match &rule.scope {
        Scope::Everyone => (Kind::Global, None),
        Scope::Sources(sources) => (Kind::User, Some(sources)),
        Scope::Group(sources) => (Kind::Group, Some(sources)),
    };
    let set = &mut sets[SetId::of(v6, kind, rule.ports.is_some(), rule.verdict).0];
    let element = |source| Element { source, protocol, destination, first, last };
    match sources {
        None => set.push(element(None)),
        Some(sources) => {
            set.extend(sources.iter().filter(|source| source.is_ipv6() == v6).map(|source| element(Some(*source))));
        }
    }
}

/// Clips each of sorted, duplicate-free `elements` to the part of its port range that no
/// element kept before it covers for its destination, and returns the elements that lost
/// anything (as they were). One pass over the sort order: within a source and protocol,
/// destinations come by network address with wider networks first, so the networks that
/// could contain the current one are exactly a stack of its ancestors (networks nest or are
/// disjoint); each holds the port ranges kept for it, sorted and disjoint, searched by
/// bisection. O(n log n) for n elements without overlaps (the stack is at most 129 deep).
fn without_overlaps(elements: &mut Vec<Element>) -> Vec<Element> {
    let mut clipped = Vec::new();
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
        let pieces = uncovered(&stack, element.first, element.last);
        if pieces.as_slice() != [(element.first, element.last)] {
            clipped.push(element.clone());
        }
        if pieces.is_empty() {
            continue;
        }
        if stack.last().is_none_or(|(network, _)| *network != element.destination) {
            stack.push((element.destination, Vec::new()));
        }
        let Some((_, ranges)) = stack.last_mut() else { continue };
        for &(first, last) in &pieces {
            let at = ranges.partition_point(|(start, _)| *start < first);
            ranges.insert(at, (first, last));
            kept.push(Element { first, last, ..element.clone() });
        }
    }
    *elements = kept;
    clipped
}

/// The parts of `first..=last` that no range kept on `stack` covers, in order.
fn uncovered(stack: &[(IpNet, Vec<(u16, u16)>)], first: u16, last: u16) -> Vec<(u16, u16)> {
    let mut covering: Vec<(u16, u16)> = Vec::new();
    for (_, ranges) in stack {
        // Ranges are sorted and disjoint: those ending before `first` come first.
        let from = ranges.partition_point(|(_, end)| *end < first);
        covering.extend(ranges[from..].iter().take_while(|(start, _)| *start <= last));
    }
    covering.sort_unstable();
    let mut pieces = Vec::new();
    let mut next = u32::from(first);
    for (start, end) in covering {
        if u32::from(start) > next {
            pieces.push((next as u16, start - 1));
        }
        next = next.max(u32::from(end) + 1);
    }
    if next <= u32::from(last) {
        pieces.push((next as u16, last));
    }
    pieces
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
            names[..12],
            [
                "user_ip_port_accept",
                "user_ip_port_drop",
                "user_ip_accept",
                "user_ip_drop",
                "group_ip_port_accept",
                "group_ip_port_drop",
                "group_ip_accept",
                "group_ip_drop",
                "ip_port_accept",
                "ip_port_drop",
                "ip_accept",
                "ip_drop"
            ]
        );
        assert_eq!(names[12], "user_ip6_port_accept");
        assert_eq!(names[23], "ip6_drop");
        assert_eq!(SetId(13).key_type(), "ipv6_addr . ipv6_addr . inet_proto . inet_service");
        assert_eq!(SetId(10).key_type(), "ipv4_addr");
        assert_eq!(SetId(6).key_type(), "ipv4_addr . ipv4_addr");
        assert_eq!(SetId(1).rule(), "ip saddr . ip daddr . meta l4proto . th dport @user_ip_port_drop drop");
        assert_eq!(SetId(5).rule(), "ip saddr . ip daddr . meta l4proto . th dport @group_ip_port_drop drop");
        assert_eq!(SetId(22).rule(), "ip6 daddr @ip6_accept accept");
        for (v6, kind, ports, verdict) in
            [(true, Kind::Group, false, Verdict::Drop), (false, Kind::Global, true, Verdict::Accept)]
        {
            let set = SetId::of(v6, kind, ports, verdict);
            assert_eq!(
                (set.v6(), set.kind(), set.ports(), set.verdict()),
                (v6, kind, ports, if verdict == Verdict::Drop { "drop" } else { "accept" })
            );
        }
    }

    #[test]
    fn members_of_two_groups_get_the_union_of_overlapping_group_rules() {
        let staff = Scope::Group(vec!["10.3.2.2".parse().unwrap(), "10.3.2.3".parse().unwrap()]);
        let ops = Scope::Group(vec!["10.3.2.3".parse().unwrap()]);
        let got = elements(vec![
            rule(staff.clone(), "192.0.2.0/24", Verdict::Accept, Some((Protocol::Tcp, 20, 30))),
            rule(ops.clone(), "192.0.2.7/32", Verdict::Accept, Some((Protocol::Tcp, 25, 40))),
            rule(ops.clone(), "192.0.2.0/24", Verdict::Accept, Some((Protocol::Tcp, 1, 10))),
            rule(staff, "10.0.0.0/8", Verdict::Drop, None),
            rule(ops, "10.1.0.0/16", Verdict::Drop, None),
        ]);
        assert_eq!(
            got,
            [
                (
                    "group_ip_port_accept".to_owned(),
                    vec![
                        "10.3.2.2 . 192.0.2.0/24 . tcp . 20-30".to_owned(),
                        "10.3.2.3 . 192.0.2.0/24 . tcp . 1-10".to_owned(),
                        "10.3.2.3 . 192.0.2.0/24 . tcp . 20-30".to_owned(),
                        // 25-40 less what the wider network holds: nothing of ops' rule is lost.
                        "10.3.2.3 . 192.0.2.7 . tcp . 31-40".to_owned(),
                    ]
                ),
                (
                    "group_ip_drop".to_owned(),
                    vec!["10.3.2.2 . 10.0.0.0/8".to_owned(), "10.3.2.3 . 10.0.0.0/8".to_owned()]
                ),
            ]
        );
    }

    #[test]
    fn a_range_is_clipped_around_every_range_it_overlaps() {
        let everyone =
            |first, last| rule(Scope::Everyone, "192.0.2.0/24", Verdict::Drop, Some((Protocol::Udp, first, last)));
        let got = elements(vec![
            everyone(10, 20),
            everyone(30, 40),
            rule(Scope::Everyone, "192.0.2.9/32", Verdict::Drop, Some((Protocol::Udp, 1, 65535))),
        ]);
        assert_eq!(
            got,
            [(
                "ip_port_drop".to_owned(),
                [
                    "192.0.2.0/24 . udp . 10-20",
                    "192.0.2.0/24 . udp . 30-40",
                    "192.0.2.9 . udp . 1-9",
                    "192.0.2.9 . udp . 21-29",
                    "192.0.2.9 . udp . 41-65535"
                ]
                .map(str::to_owned)
                .to_vec()
            )]
        );
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
    fn duplicates_merge_and_overlaps_in_one_set_are_clipped() {
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
