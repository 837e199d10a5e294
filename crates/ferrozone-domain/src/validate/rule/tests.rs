use super::*;
use crate::Timestamp;

fn errors(result: Result<CheckedRule>) -> Errors {
    match result {
        Err(DomainError::Invalid(errors)) => errors,
        other => panic!("not Invalid: {other:?}"),
    }
}

fn new(destination: &str) -> NewRule {
    NewRule { destination: Some(destination.to_owned()), ..NewRule::default() }
}

#[test]
fn a_create_defaults_to_drop_for_everyone_and_keeps_the_text() {
    let input = NewRule { port_type: Some("tcp".into()), port_range: Some("80 - 90".into()), ..new("1.1.1.1/24") };
    let checked = check_create(&input).unwrap();
    assert_eq!((checked.action, checked.user_id, checked.destination.as_str()), (RuleAction::Drop, None, "1.1.1.1/24"));
    assert_eq!(checked.ports, Some(Ports { port_type: PortType::Tcp, range: "80 - 90".into() }));
}

#[test]
fn firezones_messages_are_given_per_attribute() {
    let e = errors(check_create(&NewRule { action: Some("invalid".into()), ..NewRule::default() }));
    assert_eq!(
        (e.get("action").unwrap(), e.get("destination").unwrap()),
        (&["is invalid".to_owned()][..], &["can't be blank".to_owned()][..])
    );
    let e = errors(check_create(&new("256.0.0.1")));
    assert_eq!(e.get("destination").unwrap(), ["is invalid"]);
    let e = errors(check_create(&NewRule { port_type: Some("tcp".into()), ..new("1.1.1.1") }));
    assert_eq!(e.get("port_range").unwrap(), ["can't be blank"]);
    let e = errors(check_create(&NewRule { port_range: Some("80".into()), ..new("1.1.1.1") }));
    assert_eq!(e.get("port_type").unwrap(), ["can't be blank"]);
    let e = errors(check_create(&NewRule {
        port_type: Some("icmp".into()),
        port_range: Some("90-80".into()),
        ..new("1.1.1.1")
    }));
    assert_eq!(
        (e.get("port_type").unwrap(), e.get("port_range").unwrap()),
        (&["is invalid".to_owned()][..], &[crate::egress::LOWER_ABOVE_UPPER.to_owned()][..])
    );
    let e = errors(check_create(&NewRule { user_id: Some("x".into()), ..new("1.1.1.1") }));
    assert_eq!(e.get("user_id").unwrap(), ["is invalid"]);
    let e = errors(check_create(&NewRule { destination: Some(String::new()), ..NewRule::default() }));
    assert_eq!(e.get("destination").unwrap(), ["can't be blank"], "\"\" counts as null");
}

#[test]
fn an_update_casts_onto_the_stored_rule() {
    let at = Timestamp::from_micros(0);
    let user = Uuid::now_v7();
    let ports = Some(Ports { port_type: PortType::Udp, range: "53".into() });
    let rule = Rule {
        id: Uuid::now_v7(),
        user_id: Some(user),
        destination: "10.0.0.0/8".into(),
        action: RuleAction::Accept,
        ports,
        inserted_at: at,
        updated_at: at,
    };
    let kept = check_update(&rule, &RuleChanges::default()).unwrap();
    assert_eq!((kept.user_id, kept.action, kept.ports.clone()), (Some(user), RuleAction::Accept, rule.ports.clone()));
    let changes = RuleChanges {
        user_id: Patch::Null,
        port_type: Patch::Null,
        port_range: Patch::Value(String::new()),
        ..RuleChanges::default()
    };
    let cleared = check_update(&rule, &changes).unwrap();
    assert_eq!((cleared.user_id, cleared.ports), (None, None));
    let e = errors(check_update(&rule, &RuleChanges { action: Patch::Null, ..RuleChanges::default() }));
    assert_eq!(e.get("action").unwrap(), ["can't be blank"]);
}
