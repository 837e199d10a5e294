//! The configuration's checks as a client meets them: JSON read by this parser, then checked
//! by the domain ([`patch::check`], [`provider_lists::check`]).

use std::collections::BTreeSet;

use ferrozone_domain::configuration::provider_lists::{self, ProviderLists, OIDC_KEY, SAML_KEY};
use ferrozone_domain::configuration::{patch, Fixed};
use ferrozone_domain::input::Patch;
use ferrozone_domain::{DomainError, Errors};
use serde_json::{json, Value};

use super::*;

fn parse(sent: Value) -> ConfigurationChanges {
    ConfigurationChanges::parse(sent.as_object().unwrap().clone())
}

fn check(sent: Value, fixed: &Fixed) -> Result<Vec<(String, Value)>, DomainError> {
    patch::check(&parse(sent), fixed)
}

fn errors(sent: Value, fixed: &Fixed) -> Errors {
    match check(sent, fixed) {
        Err(DomainError::Invalid(errors)) => errors,
        other => panic!("expected errors, got {other:?}"),
    }
}

#[test]
fn the_schema_shows_every_key_the_parser_reads() {
    let attrs = serde_json::to_value(crate::wire::Envelope::<ConfigurationChanges>::attrs()).unwrap();
    let properties = attrs["properties"].as_object().unwrap();
    let keys = ferrozone_domain::configuration::KEYS.iter().copied().chain([OIDC_KEY, SAML_KEY]);
    assert_eq!(properties.keys().map(String::as_str).collect::<BTreeSet<_>>(), keys.collect());
    assert_eq!(properties.len(), 14);
    assert_eq!(properties["default_client_mtu"]["minimum"], 576);
    assert_eq!(properties["default_client_mtu"]["maximum"], 1500);
}

#[test]
fn every_key_is_read_with_its_type() {
    let c = parse(json!({"local_auth_enabled": false, "vpn_session_duration": 60, "default_client_mtu": null,
        "default_client_endpoint": "vpn:51820", "default_client_dns": ["1.1.1.1"], "require_totp": "everyone",
        "openid_connect_providers": [{"id": "a"}], "saml_identity_providers": []}));
    assert_eq!((c.local_auth_enabled, c.vpn_session_duration), (Patch::Value(false), Patch::Value(60)));
    assert_eq!((c.default_client_mtu, c.default_client_persistent_keepalive), (Patch::Null, Patch::Absent));
    assert_eq!(c.default_client_endpoint, Patch::Value("vpn:51820".to_owned()));
    assert_eq!(c.default_client_dns, Patch::Value(vec!["1.1.1.1".to_owned()]));
    assert_eq!(c.require_totp, Patch::Value(ferrozone_domain::configuration::RequireTotp::Everyone));
    assert_eq!(c.openid_connect_providers, Patch::Value(vec![json!({"id": "a"})]));
    assert_eq!(c.saml_identity_providers, Patch::Value(vec![]));
    assert!(c.wrong_types.is_empty());
    let c = parse(json!({"require_totp": "Admins", "saml_identity_providers": {}, "local_auth_enabled": null}));
    assert!(c.wrong_types.has("require_totp") && c.wrong_types.has("saml_identity_providers"));
    assert_eq!(c.local_auth_enabled, Patch::Null, "null is blank, not a wrong type");
}

// The domain's checks of a PATCH, from JSON.

#[test]
fn good_values_are_kept_and_unknown_keys_ignored() {
    let sent = json!({"default_client_mtu": 1400, "local_auth_enabled": false, "id": "x",
        "default_client_dns": [" 9.9.9.9 ", "dns.example"]});
    let changes = check(sent, &Fixed::default()).unwrap();
    assert_eq!(
        changes,
        [
            ("local_auth_enabled".to_owned(), json!(false)),
            ("default_client_mtu".to_owned(), json!(1400)),
            ("default_client_dns".to_owned(), json!(["9.9.9.9", "dns.example"])),
        ]
    );
}

#[test]
fn null_clears_the_nullable_scalars_and_is_blank_elsewhere() {
    let sent = json!({"default_client_mtu": null, "default_client_persistent_keepalive": null});
    let changes = check(sent, &Fixed::default()).unwrap();
    assert_eq!(
        changes,
        [
            ("default_client_persistent_keepalive".to_owned(), Value::Null),
            ("default_client_mtu".to_owned(), Value::Null),
        ]
    );
    let e = errors(
        json!({"default_client_endpoint": null, "default_client_dns": null, "local_auth_enabled": null}),
        &Fixed::default(),
    );
    for key in ["default_client_endpoint", "default_client_dns", "local_auth_enabled"] {
        assert_eq!(e.get(key).unwrap(), ["can't be blank"], "{key}");
    }
}

#[test]
fn firezone_messages() {
    let e = errors(
        json!({"default_client_mtu": 575, "default_client_persistent_keepalive": 121,
            "local_auth_enabled": "yes", "default_client_dns": "1.1.1.1",
            "default_client_allowed_ips": ["10.0.0.0/8", "10.0.0.0/8"],
            "default_client_endpoint": "a b", "vpn_session_duration": null}),
        &Fixed::default(),
    );
    assert_eq!(e.get("default_client_mtu").unwrap(), ["must be greater than or equal to 576"]);
    assert_eq!(e.get("default_client_persistent_keepalive").unwrap(), ["must be less than or equal to 120"]);
    assert_eq!(e.get("local_auth_enabled").unwrap(), ["is invalid"]);
    assert_eq!(e.get("default_client_dns").unwrap(), ["must be an array"]);
    assert_eq!(e.get("default_client_allowed_ips").unwrap(), ["should not contain duplicates"]);
    assert_eq!(e.get("default_client_endpoint").unwrap(), ["is invalid"]);
    assert_eq!(e.get("vpn_session_duration").unwrap(), ["can't be blank"]);
}

#[test]
fn wrong_types_have_the_messages_of_each_kind_of_key() {
    let e = errors(
        json!({"default_client_mtu": "1400", "vpn_session_duration": 1.5, "default_client_endpoint": 5,
            "default_client_dns": ["1.1.1.1", 5], "require_totp": "sometimes", "local_auth_enabled": 1}),
        &Fixed::default(),
    );
    for key in ["default_client_mtu", "vpn_session_duration", "default_client_endpoint", "local_auth_enabled"] {
        assert_eq!(e.get(key).unwrap(), ["is invalid"], "{key}");
    }
    assert_eq!(e.get("default_client_dns").unwrap(), ["is invalid"], "an entry that is no string");
    assert_eq!(e.get("require_totp").unwrap(), ["must be one of: off, admins, everyone"]);
    assert_eq!(
        errors(json!({"default_client_endpoint": "  "}), &Fixed::default()).get("default_client_endpoint").unwrap(),
        ["can't be blank"]
    );
}

#[test]
fn a_key_the_environment_sets_cannot_be_changed() {
    let fixed = Fixed::new([("default_client_mtu".to_owned(), "WIREGUARD_MTU".to_owned())]);
    let e = errors(json!({"default_client_mtu": 1280, "local_auth_enabled": true}), &fixed);
    assert_eq!(
        e.get("default_client_mtu").unwrap(),
        ["cannot be changed; it is overridden by WIREGUARD_MTU environment variable"]
    );
    assert_eq!(e.len(), 1);
}

#[test]
fn a_key_a_flag_sets_names_the_flag() {
    let fixed = Fixed::new([("default_client_mtu".to_owned(), "WIREGUARD_MTU".to_owned())])
        .with_flags([("default_client_mtu".to_owned(), "--default-client-mtu".to_owned())]);
    let e = errors(json!({"default_client_mtu": 1280}), &fixed);
    assert_eq!(
        e.get("default_client_mtu").unwrap(),
        ["cannot be changed; it is overridden by the --default-client-mtu command-line flag"]
    );
}

// The provider lists, from JSON.

fn oidc(id: &str) -> Value {
    json!({"id": id, "client_id": "c", "client_secret": "s", "auto_create_users": false,
        "discovery_document_uri": "https://idp.example/.well-known/openid-configuration"})
}

fn run(sent: Value, current: &ProviderLists, fixed: &Fixed) -> (Option<ProviderLists>, Errors) {
    let mut errors = Errors::new();
    let out = provider_lists::check(&parse(sent), current, fixed, &mut errors);
    (out.map(|(lists, _, _)| lists), errors)
}

#[test]
fn a_list_replaces_the_whole_list_and_the_other_stays() {
    let current = ProviderLists { oidc: vec![oidc("a")], saml: vec![] };
    let (lists, errors) = run(json!({OIDC_KEY: [oidc("b")]}), &current, &Fixed::default());
    assert!(errors.is_empty());
    assert_eq!(lists.unwrap().oidc, [oidc("b")]);
    assert_eq!(run(json!({"other": 1}), &current, &Fixed::default()).0, None);
}

#[test]
fn the_start_up_parser_s_messages_under_the_key() {
    let mut bad = oidc("a");
    bad["scope"] = json!("email");
    let (_, errors) = run(json!({OIDC_KEY: [bad]}), &ProviderLists::default(), &Fixed::default());
    assert_eq!(errors.get(OIDC_KEY).unwrap(), ["provider `a`: `scope` must include `openid`"]);
    let (_, errors) = run(json!({SAML_KEY: {}}), &ProviderLists::default(), &Fixed::default());
    assert_eq!(errors.get(SAML_KEY).unwrap(), ["must be an array"]);
    let (_, errors) = run(json!({SAML_KEY: null}), &ProviderLists::default(), &Fixed::default());
    assert_eq!(errors.get(SAML_KEY).unwrap(), ["must be an array"]);
}

#[test]
fn the_environment_fixes_a_list() {
    let fixed = Fixed::new([(OIDC_KEY.to_owned(), "OPENID_CONNECT_PROVIDERS".to_owned())]);
    let (_, errors) = run(json!({OIDC_KEY: []}), &ProviderLists::default(), &fixed);
    assert_eq!(
        errors.get(OIDC_KEY).unwrap(),
        ["cannot be changed; it is overridden by OPENID_CONNECT_PROVIDERS environment variable"]
    );
}
