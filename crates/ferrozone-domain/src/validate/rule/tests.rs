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
        group_id: None,
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

#[test]
fn a_rule_is_a_users_or_a_groups_never_both() {
    let (user, group) = (Uuid::now_v7().to_string(), Uuid::now_v7().to_string());
    let checked = check_create(&NewRule { group_id: Some(group.clone()), ..new("10.0.0.0/8") }).unwrap();
    assert_eq!((checked.user_id, checked.group_id.map(|g| g.to_string())), (None, Some(group.clone())));
    let both = NewRule { user_id: Some(user.clone()), group_id: Some(group.clone()), ..new("10.0.0.0/8") };
    assert_eq!(errors(check_create(&both)).get("group_id").unwrap(), [WITH_USER_ID]);
    let e = errors(check_create(&NewRule { group_id: Some("staff".into()), ..new("10.0.0.0/8") }));
    assert_eq!(e.get("group_id").unwrap(), ["is invalid"]);

    // An update naming a user for a group's rule must clear the group in the same request.
    let stored = checked.clone().into_rule(Uuid::now_v7(), Timestamp::now(), Timestamp::now());
    let to_user = RuleChanges { user_id: Patch::Value(user.clone()), ..RuleChanges::default() };
    assert_eq!(errors(check_update(&stored, &to_user)).get("group_id").unwrap(), [WITH_USER_ID]);
    let moved = RuleChanges { user_id: Patch::Value(user.clone()), group_id: Patch::Null, ..RuleChanges::default() };
    let moved = check_update(&stored, &moved).unwrap();
    assert_eq!((moved.user_id.map(|u| u.to_string()), moved.group_id), (Some(user), None));
}
