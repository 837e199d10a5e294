use super::*;

fn peer(n: u8, user: u128, expires: Option<i64>) -> StatePeer {
    StatePeer {
        public_key: format!("{n:02}peer"),
        preshared_key: SecretKey(format!("psk{n}")),
        ipv4: Some(Ipv4Addr::new(10, 3, 2, n)),
        ipv6: None,
        user_id: Uuid::from_u128(user),
        session_expires_at_us: expires,
        groups: vec![],
    }
}

fn rule(n: u128, user: Option<u128>) -> StateRule {
    StateRule {
        id: Uuid::from_u128(n),
        user_id: user.map(Uuid::from_u128),
        group_id: None,
        destination: "192.0.2.0/24".into(),
        action: RuleAction::Drop,
        port_type: Some("tcp".into()),
        port_range: Some("80-443".into()),
    }
}

fn state(peers: Vec<StatePeer>, rules: Vec<StateRule>) -> DesiredState {
    DesiredState {
        interface: InterfaceState { private_key: SecretKey("key".into()), addresses: vec!["10.3.2.1/24".into()] },
        peers,
        egress: EgressState { default_action: RuleAction::Accept, rules },
    }
    .canonical()
}

#[test]
fn the_version_is_the_same_for_the_same_state_in_any_order() {
    let a = state(vec![peer(1, 1, None), peer(2, 1, None)], vec![rule(2, None), rule(1, Some(1))]);
    let b = state(vec![peer(2, 1, None), peer(1, 1, None)], vec![rule(1, Some(1)), rule(2, None)]);
    assert_eq!(a.version(), b.version());
    assert_eq!(a.version().len(), 32);
    let c = state(vec![peer(1, 1, Some(5)), peer(2, 1, None)], vec![rule(1, Some(1)), rule(2, None)]);
    assert_ne!(a.version(), c.version(), "an expiry is part of the state");
}

#[test]
fn changes_turn_the_old_state_into_the_new_one() {
    let old = state(vec![peer(1, 1, None), peer(2, 1, None), peer(3, 2, None)], vec![rule(1, None)]);
    let mut moved = peer(2, 1, None);
    moved.ipv4 = Some(Ipv4Addr::new(10, 3, 2, 99));
    let new = state(vec![peer(1, 1, None), moved.clone(), peer(4, 2, Some(7))], vec![]);
    let changes = new.changes_from(&old);
    assert_eq!(changes.upsert, vec![moved, peer(4, 2, Some(7))], "only new and changed peers");
    assert_eq!(changes.remove, vec!["03peer".to_owned()]);
    let rebuilt = old.apply(changes);
    assert_eq!(rebuilt, new);
    assert_eq!(rebuilt.version(), new.version());
}

#[test]
fn the_egress_policy_has_the_active_addresses_of_named_users_only() {
    let now = Timestamp::from_secs(1_000);
    let expired = peer(3, 1, Some(now.micros()));
    let s = state(
        vec![peer(1, 1, Some(now.plus_secs(1).micros())), peer(2, 2, None), expired],
        vec![rule(1, Some(1)), rule(2, None)],
    );
    let policy = s.egress_policy(now);
    assert_eq!(
        policy.sources,
        vec![RuleSource { user_id: Uuid::from_u128(1), ipv4: peer(1, 1, None).ipv4, ipv6: None }]
    );
    assert_eq!(policy.rules.len(), 2);
    let ports = policy.rules[0].ports.as_ref().unwrap();
    assert_eq!((ports.port_type, ports.range.as_str()), (PortType::Tcp, "80-443"));
    assert_eq!(s.next_expiry(now), Some(now.plus_secs(1)), "the session ending exactly now is past");
}

#[test]
fn keys_never_show_in_debug_output() {
    let s = state(vec![peer(1, 1, None)], vec![]);
    let debug = format!("{s:?}");
    assert!(!debug.contains("psk1") && !debug.contains("\"key\""), "{debug}");
}

#[test]
fn an_answer_is_tagged_by_its_kind() {
    let answer = Answer::Unchanged { version: "v".into() };
    assert_eq!(serde_json::to_value(&answer).unwrap(), serde_json::json!({"kind": "unchanged", "version": "v"}));
    let s = state(vec![peer(1, 1, None)], vec![]);
    let snapshot = Answer::Snapshot { version: s.version(), state: s.clone() };
    let back: Answer = serde_json::from_str(&serde_json::to_string(&snapshot).unwrap()).unwrap();
    assert_eq!(back, snapshot);
}

#[test]
fn a_state_without_groups_keeps_its_form_and_version() {
    let a = state(vec![peer(1, 1, None)], vec![rule(1, Some(1))]);
    let json = serde_json::to_string(&a).unwrap();
    assert!(!json.contains("groups") && !json.contains("group_id"), "{json}");
    let back: DesiredState = serde_json::from_str(&json).unwrap();
    assert_eq!(back.version(), a.version());
}

#[test]
fn group_rules_take_the_addresses_of_the_members_active_peers() {
    let group = Uuid::from_u128(0x90);
    let in_group = |mut peer: StatePeer| {
        peer.groups = vec![group];
        peer
    };
    let group_rule = StateRule { group_id: Some(group), ..rule(3, None) };
    let s = state(
        vec![in_group(peer(1, 1, None)), in_group(peer(2, 2, Some(10))), peer(3, 3, None)],
        vec![group_rule, rule(4, Some(3))],
    );
    let policy = s.egress_policy(Timestamp::from_micros(20));
    let mut sources: Vec<Uuid> = policy.sources.iter().map(|source| source.user_id).collect();
    sources.sort();
    assert_eq!(sources, [Uuid::from_u128(1), Uuid::from_u128(3)], "peer 2's session ended; 3 has a rule of its own");
    assert_eq!(policy.memberships, [Membership { group_id: group, user_id: Uuid::from_u128(1) }]);
    assert_eq!(policy.rules.iter().find(|r| r.id == Uuid::from_u128(3)).unwrap().group_id, Some(group));

    // A membership change is the member's peers alone.
    let mut left = s.clone();
    left.peers[0].groups.clear();
    let changes = left.changes_from(&s);
    assert_eq!(changes.upsert.iter().map(|p| p.public_key.as_str()).collect::<Vec<_>>(), ["01peer"]);
    assert_eq!(s.apply(changes).version(), left.version());
}
