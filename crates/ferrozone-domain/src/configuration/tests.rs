use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::{Fixed, Values};
use crate::Settings;

fn base() -> Values {
    Settings::standard().configuration
}

#[test]
fn stored_values_replace_the_base_unless_the_environment_fixes_them() {
    let stored: BTreeMap<String, Value> =
        [("default_client_mtu".to_owned(), json!(1400)), ("local_auth_enabled".to_owned(), json!(false))].into();
    let fixed = Fixed::new([("default_client_mtu".to_owned(), "WIREGUARD_MTU".to_owned())]);
    let values = Values::effective(&base(), &stored, &fixed);
    assert_eq!(values.default_client_mtu, Some(1280));
    assert!(!values.local_auth_enabled);
}

#[test]
fn a_stored_null_clears_a_nullable_default_and_is_ignored_elsewhere() {
    let stored: BTreeMap<String, Value> = [
        ("default_client_mtu".to_owned(), Value::Null),
        ("default_client_persistent_keepalive".to_owned(), Value::Null),
        ("default_client_endpoint".to_owned(), Value::Null),
        ("local_auth_enabled".to_owned(), Value::Null),
    ]
    .into();
    let values = Values::effective(&base(), &stored, &Fixed::default());
    assert_eq!((values.default_client_mtu, values.default_client_persistent_keepalive), (None, None));
    assert_eq!(values.default_client_endpoint, base().default_client_endpoint);
    assert_eq!(values.local_auth_enabled, base().local_auth_enabled);
}

#[test]
fn unreadable_or_unknown_stored_values_are_ignored() {
    let stored: BTreeMap<String, Value> =
        [("default_client_mtu".to_owned(), json!("big")), ("logo".to_owned(), json!({}))].into();
    assert_eq!(Values::effective(&base(), &stored, &Fixed::default()), base());
}
