use std::net::Ipv4Addr;

use ferrozone_domain::egress::RuleAction;
use ferrozone_domain::gateway::state::{DesiredState, EgressState, InterfaceState, SecretKey, StatePeer};
use uuid::Uuid;

use super::*;

fn peer(n: u8) -> StatePeer {
    StatePeer {
        public_key: format!("{n:02}"),
        preshared_key: SecretKey(format!("psk{n}")),
        ipv4: Some(Ipv4Addr::new(10, 3, 2, n)),
        ipv6: None,
        user_id: Uuid::from_u128(1),
        session_expires_at_us: None,
        groups: vec![],
    }
}

fn held(peers: Vec<StatePeer>) -> Held {
    let state = DesiredState {
        interface: InterfaceState { private_key: SecretKey("k".into()), addresses: vec![] },
        peers,
        egress: EgressState { default_action: RuleAction::Accept, rules: vec![] },
    }
    .canonical();
    Held { version: state.version(), state }
}

#[test]
fn changes_from_the_held_version_are_applied_and_checked() {
    let (old, new) = (held(vec![peer(1), peer(2)]), held(vec![peer(2), peer(3)]));
    let changes = new.state.changes_from(&old.state);
    let answer = Answer::Changes { version: new.version.clone(), from: old.version.clone(), changes: changes.clone() };
    let Step::Take(next) = assemble(&old, answer) else { panic!("a new state") };
    assert_eq!((next.version.as_str(), &next.state), (new.version.as_str(), &new.state));

    let elsewhere = Answer::Changes { version: new.version.clone(), from: "other".into(), changes: changes.clone() };
    assert!(matches!(assemble(&old, elsewhere), Step::AskForSnapshot), "changes from another version");
    let wrong = Answer::Changes { version: "not-it".into(), from: old.version.clone(), changes };
    assert!(matches!(assemble(&old, wrong), Step::AskForSnapshot), "changes that do not give the version");
}

#[test]
fn a_snapshot_replaces_and_unchanged_keeps() {
    let (old, new) = (held(vec![peer(1)]), held(vec![peer(4)]));
    let snapshot = Answer::Snapshot { version: new.version.clone(), state: new.state.clone() };
    let Step::Take(next) = assemble(&old, snapshot) else { panic!("a new state") };
    assert_eq!(next.state, new.state);
    let same = Answer::Unchanged { version: old.version.clone() };
    assert!(matches!(assemble(&old, same), Step::Keep));
    let other = Answer::Unchanged { version: "other".into() };
    assert!(matches!(assemble(&old, other), Step::AskForSnapshot), "unchanged at another version");
}
