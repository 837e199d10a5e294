use std::net::{Ipv4Addr, Ipv6Addr};

use ferrozone_domain::egress::{Ports, RuleSource};
use ferrozone_domain::Timestamp;

use super::*;

fn wg() -> IfName {
    IfName::parse("wg0").unwrap()
}

fn rule(destination: &str, user_id: Option<Uuid>, action: RuleAction, ports: Option<(PortType, &str)>) -> Rule {
    let at = Timestamp::from_micros(1_700_000_000_000_000);
    Rule {
        id: Uuid::now_v7(),
        user_id,
        group_id: None,
        destination: destination.to_owned(),
        action,
        ports: ports.map(|(port_type, range)| Ports { port_type, range: range.to_owned() }),
        inserted_at: at,
        updated_at: at,
    }
}

fn source(user_id: Uuid, ipv4: Option<&str>, ipv6: Option<&str>) -> RuleSource {
    RuleSource {
        user_id,
        ipv4: ipv4.map(|a| a.parse::<Ipv4Addr>().unwrap()),
        ipv6: ipv6.map(|a| a.parse::<Ipv6Addr>().unwrap()),
    }
}

fn net(s: &str) -> IpNet {
    s.parse().unwrap()
}

#[test]
fn a_global_rule_applies_to_everyone_with_its_destination_as_sent() {
    let policy = EgressPolicy {
        rules: vec![rule("1.1.1.1/24", None, RuleAction::Drop, None)],
        sources: vec![],
        ..Default::default()
    };
    let (egress, _) = egress(&policy, wg());
    let expected =
        EgressRule { scope: Scope::Everyone, destination: net("1.1.1.1/24"), verdict: Verdict::Drop, ports: None };
    assert_eq!(egress, Egress { wireguard: wg(), rules: vec![expected], default: Verdict::Accept });
}

#[test]
fn a_user_rule_matches_the_addresses_of_that_users_active_devices() {
    let (alice, bob) = (Uuid::now_v7(), Uuid::now_v7());
    let policy = EgressPolicy {
        rules: vec![rule("10.0.0.1", Some(alice), RuleAction::Accept, None)],
        sources: vec![
            source(alice, Some("10.3.2.9"), Some("fd00::3:2:9")),
            source(bob, Some("10.3.2.5"), None),
            source(alice, Some("10.3.2.2"), None),
        ],
        ..Default::default()
    };
    let (egress, _) = egress(&EgressPolicy { default_action: RuleAction::Drop, ..policy }, wg());
    let sources = ["10.3.2.2", "10.3.2.9", "fd00::3:2:9"].map(|a| a.parse().unwrap()).to_vec();
    assert_eq!(egress.rules[0].scope, Scope::Sources(sources), "sorted, Bob's left out");
    assert_eq!((egress.rules[0].destination, egress.rules[0].verdict), (net("10.0.0.1/32"), Verdict::Accept));
    assert_eq!(egress.default, Verdict::Drop);
}

#[test]
fn a_user_without_active_devices_has_rules_that_match_nothing() {
    // A disabled user's devices are not in the policy's sources.
    let policy = EgressPolicy {
        rules: vec![rule("::/0", Some(Uuid::now_v7()), RuleAction::Drop, None)],
        sources: vec![],
        ..Default::default()
    };
    let (egress, _) = egress(&policy, wg());
    assert_eq!(egress.rules[0].scope, Scope::Sources(vec![]));
    assert_eq!(egress.rules[0].destination, net("::/0"));
}

#[test]
fn port_ranges_become_inclusive_port_matches() {
    let cases = [
        (PortType::Tcp, "80-443", Protocol::Tcp, 80, 443),
        (PortType::Udp, "53", Protocol::Udp, 53, 53),
        (PortType::Tcp, "10 - 20", Protocol::Tcp, 10, 20),
        (PortType::Udp, "[100,200)", Protocol::Udp, 100, 199),
        (PortType::Tcp, "(1,65535]", Protocol::Tcp, 2, 65535),
    ];
    for (port_type, range, protocol, first, last) in cases {
        let policy = EgressPolicy {
            rules: vec![rule("10.0.0.0/8", None, RuleAction::Drop, Some((port_type, range)))],
            sources: vec![],
            ..Default::default()
        };
        let (egress, _) = egress(&policy, wg());
        assert_eq!(egress.rules[0].ports, Some(PortMatch { protocol, first, last }), "{range}");
    }
}

#[test]
fn a_stored_rule_that_does_not_parse_is_skipped_not_fatal() {
    let good = rule("192.0.2.0/24", None, RuleAction::Drop, None);
    let policy = EgressPolicy {
        rules: vec![
            rule("not an address", None, RuleAction::Drop, None),
            rule("10.0.0.0/33", None, RuleAction::Drop, None),
            rule("10.0.0.0/8", None, RuleAction::Drop, Some((PortType::Tcp, "443-80"))),
            good,
        ],
        sources: vec![],
        ..Default::default()
    };
    let (egress, _) = egress(&policy, wg());
    assert_eq!(egress.rules.len(), 1);
    assert_eq!(egress.rules[0].destination, net("192.0.2.0/24"));
}

#[test]
fn the_same_policy_in_another_order_gives_the_same_egress() {
    let alice = Uuid::now_v7();
    let rules: Vec<Rule> =
        (0..50).map(|i| rule(&format!("10.0.{i}.0/24"), Some(alice), RuleAction::Drop, None)).collect();
    let sources = vec![source(alice, Some("10.3.2.2"), None), source(alice, Some("10.3.2.3"), None)];
    let forward = EgressPolicy { rules: rules.clone(), sources: sources.clone(), ..Default::default() };
    let backward = EgressPolicy {
        rules: rules.into_iter().rev().collect(),
        sources: sources.into_iter().rev().collect(),
        ..Default::default()
    };
    assert_eq!(egress(&forward, wg()), egress(&backward, wg()));
}

/// The size the issue benchmarks: every rule kept, each user's rules with its sources.
#[test]
fn ten_thousand_rules_of_a_thousand_users_convert_whole() {
    let users: Vec<Uuid> = (0..1000).map(|_| Uuid::now_v7()).collect();
    let rules = (0..10_000u32)
        .map(|i| {
            rule(&format!("10.{}.{}.0/24", i / 256, i % 256), Some(users[(i % 1000) as usize]), RuleAction::Drop, None)
        })
        .collect();
    let sources = users
        .iter()
        .enumerate()
        .map(|(i, user)| source(*user, Some(&format!("100.64.{}.{}", i / 250, i % 250 + 1)), None))
        .collect();
    let started = std::time::Instant::now();
    let (egress, skipped) = egress(&EgressPolicy { rules, sources, ..Default::default() }, wg());
    assert!(skipped.is_empty());
    eprintln!("converted 10,000 rules of 1,000 users in {:?}", started.elapsed());
    assert_eq!(egress.rules.len(), 10_000);
    assert!(egress.rules.iter().all(|r| matches!(&r.scope, Scope::Sources(s) if s.len() == 1)));
}

#[test]
fn a_group_rule_matches_the_addresses_of_its_members_active_devices() {
    use ferrozone_domain::egress::Membership;
    let (alice, bob, carol, staff) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    let group_rule = Rule { group_id: Some(staff), ..rule("10.0.0.0/8", None, RuleAction::Accept, None) };
    let empty = Uuid::now_v7();
    let lonely = Rule { group_id: Some(empty), ..rule("10.9.0.0/16", None, RuleAction::Drop, None) };
    let policy = EgressPolicy {
        rules: vec![group_rule, lonely],
        sources: vec![
            source(alice, Some("10.3.2.9"), Some("fd00::3:2:9")),
            source(bob, Some("10.3.2.5"), None),
            source(carol, Some("10.3.2.7"), None),
            source(alice, Some("10.3.2.2"), None),
        ],
        memberships: vec![
            Membership { group_id: staff, user_id: alice },
            Membership { group_id: staff, user_id: bob },
            Membership { group_id: empty, user_id: Uuid::now_v7() },
        ],
        ..Default::default()
    };
    let (egress, skipped) = egress(&policy, wg());
    assert!(skipped.is_empty());
    let addresses = ["10.3.2.2", "10.3.2.5", "10.3.2.9", "fd00::3:2:9"].map(|a| a.parse().unwrap());
    assert_eq!(egress.rules[0].scope, Scope::Group(addresses.to_vec()), "alice's and bob's devices, not carol's");
    assert_eq!(egress.rules[1].scope, Scope::Group(vec![]), "a member with no active device matches nothing");
}
