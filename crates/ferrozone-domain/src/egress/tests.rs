use super::*;

fn rule(destination: &str, action: RuleAction, user_id: Option<Uuid>, ports: Option<(PortType, &str)>) -> Rule {
    Rule {
        id: Uuid::now_v7(),
        user_id,
        group_id: None,
        destination: destination.to_owned(),
        action,
        ports: ports.map(|(port_type, range)| Ports { port_type, range: range.to_owned() }),
        inserted_at: Timestamp::from_micros(0),
        updated_at: Timestamp::from_micros(0),
    }
}

#[test]
fn destinations_parse_as_firezone_casts_them() {
    let net = parse_destination(" 1.1.1.1/24 ").unwrap();
    assert_eq!((net.addr.to_string(), net.prefix), ("1.1.1.1".to_owned(), 24), "host bits kept");
    assert_eq!(parse_destination("::1").unwrap().prefix, 128);
    for bad in ["256.0.0.1", "10.0 0.0/24", "10.0.0.0/33", "::/129", "10.0.0.0/x", ""] {
        assert_eq!(parse_destination(bad), None, "{bad:?}");
    }
}

#[test]
fn port_ranges_parse_with_firezones_messages() {
    assert_eq!(parse_port_range("80"), Ok((80, 80)));
    assert_eq!(parse_port_range("10-20"), Ok((10, 20)));
    assert_eq!(parse_port_range("10 - 20"), Ok((10, 20)));
    assert_eq!(parse_port_range("[10,20)"), Ok((10, 19)));
    assert_eq!(parse_port_range("-5"), Ok((5, 5)));
    assert_eq!(parse_port_range("80abc"), Ok((80, 80)));
    assert_eq!(parse_port_range("65535"), Ok((65535, 65535)));
    assert_eq!(parse_port_range("abc"), Err(BAD_FORMAT));
    assert_eq!(parse_port_range(""), Err(BAD_FORMAT));
    assert_eq!(parse_port_range("20-10"), Err(LOWER_ABOVE_UPPER));
    assert_eq!(parse_port_range("10-90000"), Err(OUT_OF_RANGE));
    assert_eq!(parse_port_range("0"), Err(OUT_OF_RANGE));
}

#[test]
fn rules_overlap_only_with_the_same_action_scope_and_ports() {
    let user = Some(Uuid::now_v7());
    let a = rule("10.0.0.0/8", RuleAction::Drop, None, None);
    assert!(a.overlaps(&rule("10.1.2.3", RuleAction::Drop, None, None)));
    assert!(a.overlaps(&rule("0.0.0.0/0", RuleAction::Drop, None, None)));
    assert!(!a.overlaps(&a.clone()), "a rule does not overlap itself");
    assert!(!a.overlaps(&rule("11.0.0.0/8", RuleAction::Drop, None, None)));
    assert!(!a.overlaps(&rule("10.0.0.0/8", RuleAction::Accept, None, None)), "other action");
    assert!(!a.overlaps(&rule("10.0.0.0/8", RuleAction::Drop, user, None)), "other scope");
    assert!(!a.overlaps(&rule("::/0", RuleAction::Drop, None, None)), "other family");
    let tcp = rule("10.0.0.0/8", RuleAction::Drop, None, Some((PortType::Tcp, "80-90")));
    assert!(!a.overlaps(&tcp), "with and without ports");
    assert!(tcp.overlaps(&rule("10.0.0.1", RuleAction::Drop, None, Some((PortType::Tcp, "90")))));
    assert!(!tcp.overlaps(&rule("10.0.0.1", RuleAction::Drop, None, Some((PortType::Tcp, "91-100")))));
    assert!(!tcp.overlaps(&rule("10.0.0.1", RuleAction::Drop, None, Some((PortType::Udp, "80")))));
}

#[test]
fn group_rules_overlap_only_with_the_same_groups() {
    let (staff, ops) = (Some(Uuid::now_v7()), Some(Uuid::now_v7()));
    let of = |group_id| Rule { group_id, ..rule("10.0.0.0/8", RuleAction::Drop, None, None) };
    let a = of(staff);
    assert!(a.overlaps(&of(staff)), "the same group");
    assert!(!a.overlaps(&of(ops)), "another group");
    assert!(!a.overlaps(&of(None)), "a global rule");
    assert!(!a.overlaps(&rule("10.0.0.0/8", RuleAction::Drop, staff, None)), "a user whose id is the group's");
    assert_eq!(a.scope(), RuleScope::Group(staff.unwrap()));
}
