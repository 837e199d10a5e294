//! What the egress rules do with one packet: the access checker's answer, in the order the
//! gateway's `egress` chain looks the rules up (docs/design/egress-rules.md, "Check access").

use std::net::IpAddr;

use uuid::Uuid;

use super::{parse_destination, parse_port_range, PortType, Rule, RuleAction, RuleScope};

/// The transport of a packet, as far as the rules can tell: port rules match TCP and UDP
/// only; anything else (ICMP among them) meets the rules without ports alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Tcp(u16),
    Udp(u16),
    /// Any protocol without ports.
    Other,
}

impl Transport {
    fn port(self, port_type: PortType) -> Option<u16> {
        match (self, port_type) {
            (Transport::Tcp(port), PortType::Tcp) | (Transport::Udp(port), PortType::Udp) => Some(port),
            _ => None,
        }
    }
}

/// A packet leaving the tunnel: whose device sent it (`None`: a source no user rule
/// names), the groups its owner is a member of, where it goes and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'g> {
    pub user_id: Option<Uuid>,
    pub groups: &'g [Uuid],
    pub destination: IpAddr,
    pub transport: Transport,
}

/// What happens to a packet, and what decided it: a rule, or the default action when no
/// rule matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision<'a> {
    pub action: RuleAction,
    pub rule: Option<&'a Rule>,
}

/// The steps of the lookup, first to last, inside one scope: rules with ports before
/// rules without, and within each, accept before drop.
const STEPS: [(bool, RuleAction); 4] =
    [(true, RuleAction::Accept), (true, RuleAction::Drop), (false, RuleAction::Accept), (false, RuleAction::Drop)];

/// The decision for `packet` under `rules`: the packet's user's rules first, then the rules
/// of the groups the user is a member of (all of them as one scope), then the global ones,
/// each scope in [`STEPS`]; the first step with a matching rule decides, and within a step
/// the rule with the smallest id is named (rules of one step that match one packet give the
/// same answer). A rule whose text does not parse matches nothing, as the gateway leaves it
/// out. The gateway's `egress` chain looks its sets up in the same order
/// (docs/design/groups.md, "Group rules").
pub fn decide<'a>(rules: &'a [Rule], packet: &Packet<'_>, default: RuleAction) -> Decision<'a> {
    for rank in 0..3 {
        for (with_ports, action) in STEPS {
            let decider = rules
                .iter()
                .filter(|rule| {
                    rule.scope().rank() == rank
                        && applies(rule, packet.user_id, packet.groups)
                        && rule.action == action
                        && rule.ports.is_some() == with_ports
                        && matches(rule, packet)
                })
                .min_by_key(|rule| rule.id);
            if let Some(rule) = decider {
                return Decision { action, rule: Some(rule) };
            }
        }
    }
    Decision { action: default, rule: None }
}

/// Whether `rule` decides traffic of `user`, a member of `groups`.
fn applies(rule: &Rule, user: Option<Uuid>, groups: &[Uuid]) -> bool {
    match rule.scope() {
        RuleScope::User(id) => user == Some(id),
        RuleScope::Group(id) => groups.contains(&id),
        RuleScope::Everyone => true,
    }
}

/// Where `rule` is tried inside its scope: 0 (with ports, accept) to 3 (without, drop).
pub fn lookup_step(rule: &Rule) -> usize {
    let step =
        |(with_ports, action): &(bool, RuleAction)| rule.ports.is_some() == *with_ports && rule.action == *action;
    STEPS.iter().position(step).unwrap_or(STEPS.len())
}

/// The rules that apply to `user`'s traffic (a member of `groups`) in the order [`decide`]
/// tries them: the user's own, then its groups', then the global ones; inside each scope by
/// step, then by id.
pub fn applying_to<'a>(rules: &'a [Rule], user: Uuid, groups: &[Uuid]) -> Vec<&'a Rule> {
    let mut applying: Vec<&Rule> = rules.iter().filter(|rule| applies(rule, Some(user), groups)).collect();
    applying.sort_by_key(|rule| (rule.scope().rank(), lookup_step(rule), rule.id));
    applying
}

/// Whether `rule`'s destination holds the packet's, and its ports (if any) its port.
fn matches(rule: &Rule, packet: &Packet<'_>) -> bool {
    let Some(network) = parse_destination(&rule.destination) else { return false };
    let width = if packet.destination.is_ipv4() { 32 } else { 128 };
    let host = super::Network { addr: packet.destination, prefix: width };
    if !network.overlaps(&host) {
        return false;
    }
    match &rule.ports {
        None => true,
        Some(ports) => match (packet.transport.port(ports.port_type), parse_port_range(&ports.range)) {
            (Some(port), Ok((first, last))) => (first..=last).contains(&port),
            _ => false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::egress::Ports;
    use crate::Timestamp;

    fn rule(
        n: u128,
        user_id: Option<Uuid>,
        destination: &str,
        action: RuleAction,
        ports: Option<(PortType, &str)>,
    ) -> Rule {
        let at = Timestamp::from_micros(0);
        Rule {
            id: Uuid::from_u128(n),
            user_id,
            group_id: None,
            destination: destination.to_owned(),
            action,
            ports: ports.map(|(port_type, range)| Ports { port_type, range: range.to_owned() }),
            inserted_at: at,
            updated_at: at,
        }
    }

    fn packet(user_id: Option<Uuid>, destination: &str, transport: Transport) -> Packet<'static> {
        Packet { user_id, groups: &[], destination: destination.parse().unwrap(), transport }
    }

    /// The id of the deciding rule (0 for the default action) and the action.
    fn decided(rules: &[Rule], packet: &Packet<'_>, default: RuleAction) -> (u128, RuleAction) {
        let decision = decide(rules, packet, default);
        (decision.rule.map_or(0, |rule| rule.id.as_u128()), decision.action)
    }

    use PortType::{Tcp, Udp};
    use RuleAction::{Accept, Drop};

    #[test]
    fn firezones_precedence_user_before_global_ports_before_plain_accept_before_drop() {
        let alice = Some(Uuid::from_u128(0xa));
        let rules = [
            rule(1, None, "0.0.0.0/0", Drop, None),
            rule(2, None, "10.0.0.0/8", Accept, None),
            rule(3, None, "10.1.0.0/16", Drop, Some((Tcp, "22"))),
            rule(4, None, "10.1.2.0/24", Accept, Some((Tcp, "20-30"))),
            rule(5, alice, "10.1.0.0/16", Drop, None),
            rule(6, alice, "10.1.9.9", Accept, Some((Udp, "53"))),
        ];
        let cases = [
            (packet(None, "192.0.2.1", Transport::Tcp(443)), (1, Drop), "global drop-all"),
            (packet(None, "10.9.9.9", Transport::Other), (2, Accept), "plain accept beats plain drop"),
            (packet(None, "10.1.9.9", Transport::Tcp(22)), (3, Drop), "a port rule beats plain ones"),
            (packet(None, "10.1.2.3", Transport::Tcp(22)), (4, Accept), "port accept beats port drop"),
            (packet(None, "10.1.2.3", Transport::Udp(22)), (2, Accept), "ports match their protocol only"),
            (packet(alice, "10.1.2.3", Transport::Tcp(22)), (5, Drop), "the user's rules come first"),
            (packet(alice, "10.1.9.9", Transport::Udp(53)), (6, Accept), "the user's port accept"),
            (packet(alice, "10.1.9.9", Transport::Tcp(53)), (5, Drop), "not its protocol"),
            (packet(alice, "10.2.0.1", Transport::Other), (2, Accept), "no user rule: the global ones"),
            (packet(alice, "2001:db8::1", Transport::Other), (0, Drop), "no rule of the family: the default"),
        ];
        for (packet, expected, why) in cases {
            assert_eq!(decided(&rules, &packet, Drop), expected, "{why}");
        }
    }

    #[test]
    fn ranges_families_and_unparsable_rules() {
        let rules = [
            rule(1, None, "2001:db8::/32", Drop, Some((Udp, "[1000,2000)"))),
            rule(2, None, "not an address", Accept, None),
            rule(3, None, "192.0.2.7/24", Drop, None),
        ];
        let at = |destination, transport| decided(&rules, &packet(None, destination, transport), Accept);
        assert_eq!(at("2001:db8:1::5", Transport::Udp(1999)), (1, Drop));
        assert_eq!(at("2001:db8:1::5", Transport::Udp(2000)), (0, Accept), "the bracket's open end");
        assert_eq!(at("192.0.2.200", Transport::Other), (3, Drop), "host bits of the rule are ignored");
        assert_eq!(at("198.51.100.1", Transport::Other), (0, Accept), "a rule that does not parse matches nothing");
    }

    #[test]
    fn the_rules_applying_to_a_user_come_in_lookup_order() {
        let (alice, bob) = (Some(Uuid::from_u128(0xa)), Some(Uuid::from_u128(0xb)));
        let rules = [
            rule(1, None, "10.0.0.0/8", Drop, None),
            rule(2, alice, "10.1.0.0/16", Drop, None),
            rule(3, bob, "10.2.0.0/16", Accept, None),
            rule(4, None, "10.3.0.0/16", Accept, Some((Udp, "53"))),
            rule(5, alice, "10.4.0.0/16", Accept, None),
            rule(6, alice, "10.5.0.0/16", Drop, Some((Tcp, "22"))),
        ];
        let order: Vec<u128> = applying_to(&rules, alice.unwrap(), &[]).iter().map(|r| r.id.as_u128()).collect();
        assert_eq!(order, [6, 5, 2, 4, 1], "the user's port drop, accept, drop; then the global port accept, drop");
        assert_eq!(rules.iter().map(lookup_step).collect::<Vec<_>>(), [3, 3, 2, 0, 2, 1]);
    }

    /// A rule of group `g`.
    fn group_rule(n: u128, g: u128, destination: &str, action: RuleAction, ports: Option<(PortType, &str)>) -> Rule {
        Rule { group_id: Some(Uuid::from_u128(g)), ..rule(n, None, destination, action, ports) }
    }

    #[test]
    fn group_rules_come_after_the_users_and_before_the_global_ones() {
        let alice_id = Uuid::from_u128(0xa);
        let alice = Some(alice_id);
        let (staff, ops) = (Uuid::from_u128(0x5), Uuid::from_u128(0x6));
        let rules = [
            rule(1, None, "10.0.0.0/8", Drop, None),
            group_rule(2, 0x5, "10.1.0.0/16", Accept, None),
            group_rule(3, 0x6, "10.1.2.0/24", Drop, None),
            rule(4, alice, "10.1.2.3", Accept, None),
            group_rule(5, 0x6, "10.1.0.0/16", Drop, Some((Tcp, "22"))),
            group_rule(6, 0x5, "10.9.0.0/16", Accept, Some((Tcp, "1-1024"))),
        ];
        let member = |groups: &'static [Uuid], destination, transport| Packet {
            user_id: alice,
            groups,
            destination: destination_of(destination),
            transport,
        };
        let both: &'static [Uuid] = Box::leak(Box::new([staff, ops]));
        let only_staff: &'static [Uuid] = Box::leak(Box::new([staff]));
        let cases = [
            (member(both, "10.1.2.3", Transport::Other), (4, Accept), "the user's rule before any group's"),
            (member(both, "10.1.2.4", Transport::Other), (2, Accept), "one scope for all groups: accept before drop"),
            (member(both, "10.1.2.4", Transport::Tcp(22)), (5, Drop), "a group's port rule before plain ones"),
            (member(only_staff, "10.1.2.4", Transport::Tcp(22)), (2, Accept), "not a member of ops"),
            (member(&[], "10.1.2.4", Transport::Other), (1, Drop), "no group: the global rule"),
            (member(both, "10.9.1.1", Transport::Tcp(443)), (6, Accept), "before the global drop"),
            (member(both, "10.9.1.1", Transport::Tcp(8080)), (1, Drop), "outside the ports: global"),
        ];
        for (packet, expected, why) in cases {
            assert_eq!(decided(&rules, &packet, Accept), expected, "{why}");
        }
        let order: Vec<u128> = applying_to(&rules, alice_id, both).iter().map(|r| r.id.as_u128()).collect();
        assert_eq!(order, [4, 6, 5, 2, 3, 1], "user; groups' port accept, port drop, accept, drop; global");
        let order: Vec<u128> = applying_to(&rules, alice_id, &[]).iter().map(|r| r.id.as_u128()).collect();
        assert_eq!(order, [4, 1], "a group's rules apply to its members only");
    }

    fn destination_of(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn the_smallest_id_names_a_step_of_several_matches() {
        let rules = [rule(9, None, "10.0.0.0/8", Drop, None), rule(4, None, "10.1.0.0/16", Drop, None)];
        assert_eq!(decided(&rules, &packet(None, "10.1.1.1", Transport::Other), Accept), (4, Drop));
    }
}
