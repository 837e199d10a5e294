//! Checking a PATCH of the configuration: Firezone's keys, types, ranges and messages, and
//! the guard against keys the environment fixes.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::{Fixed, KEYS};
use crate::validate::net::{allowed_ip, is_dns_server, is_endpoint};
use crate::validate::{CANT_BE_BLANK, DUPLICATES, IS_INVALID};
use crate::{DomainError, Errors};

/// The `(key, value)` pairs to store, in [`KEYS`] order. Keys outside [`KEYS`] are ignored
/// here (as Firezone's cast ignores them; the provider lists are checked apart); one bad or
/// fixed key makes the whole PATCH invalid.
pub fn check(sent: &Map<String, Value>, fixed: &Fixed) -> Result<Vec<(String, Value)>, DomainError> {
    let mut errors = Errors::new();
    let changes = collect(sent, fixed, &mut errors);
    errors.finish(changes)
}

/// [`check`], adding its problems to `errors`.
pub fn collect(sent: &Map<String, Value>, fixed: &Fixed, errors: &mut Errors) -> Vec<(String, Value)> {
    let mut changes = Vec::new();
    for key in KEYS {
        let Some(value) = sent.get(key) else { continue };
        if let Some(source) = fixed.source(key) {
            errors.add(key, format!("cannot be changed; it is overridden by {source}"));
            continue;
        }
        match check_value(key, value) {
            Ok(value) => changes.push((key.to_owned(), value)),
            Err(message) => errors.add(key, message),
        }
    }
    changes
}

/// The keys whose `null` means "leave this line out of client configurations".
const NULLABLE: [&str; 2] = ["default_client_persistent_keepalive", "default_client_mtu"];

/// The value to store for `key`, or the message.
fn check_value(key: &str, value: &Value) -> Result<Value, String> {
    if value.is_null() {
        return if NULLABLE.contains(&key) { Ok(Value::Null) } else { Err(CANT_BE_BLANK.to_owned()) };
    }
    match key {
        "default_client_persistent_keepalive" => integer(value, 0, 120),
        "default_client_mtu" => integer(value, 576, 1500),
        "vpn_session_duration" => integer(value, 0, 2_147_483_647),
        "default_client_endpoint" => endpoint(value),
        "require_totp" => match value.as_str() {
            Some(text @ ("off" | "admins" | "everyone")) => Ok(text.into()),
            _ => Err("must be one of: off, admins, everyone".to_owned()),
        },
        "default_client_dns" => list(value, |s| is_dns_server(s).then(|| s.to_ascii_lowercase())),
        "default_client_allowed_ips" => {
            list(value, |s| allowed_ip(s).map(|(ip, len)| format!("{ip}/{}", len.map_or(-1, i16::from))))
        }
        _ => value.as_bool().map(Value::Bool).ok_or_else(|| IS_INVALID.to_owned()),
    }
}

fn integer(value: &Value, min: i64, max: i64) -> Result<Value, String> {
    match value.as_i64() {
        None => Err(IS_INVALID.to_owned()),
        Some(n) if n < min => Err(format!("must be greater than or equal to {min}")),
        Some(n) if n > max => Err(format!("must be less than or equal to {max}")),
        Some(n) => Ok(n.into()),
    }
}

fn endpoint(value: &Value) -> Result<Value, String> {
    match value.as_str().map(str::trim) {
        None => Err(IS_INVALID.to_owned()),
        Some("") => Err(CANT_BE_BLANK.to_owned()),
        Some(s) if is_endpoint(s) => Ok(s.into()),
        Some(_) => Err(IS_INVALID.to_owned()),
    }
}

/// A list of strings; `canonical` gives the form that finds duplicates, `None` when invalid.
fn list(value: &Value, canonical: impl Fn(&str) -> Option<String>) -> Result<Value, String> {
    let items = value.as_array().ok_or_else(|| "must be an array".to_owned())?;
    let mut seen = HashSet::with_capacity(items.len());
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let text = item.as_str().map(str::trim).ok_or_else(|| IS_INVALID.to_owned())?;
        let key = canonical(text).ok_or_else(|| IS_INVALID.to_owned())?;
        if !seen.insert(key) {
            return Err(DUPLICATES.to_owned());
        }
        out.push(Value::from(text));
    }
    Ok(Value::Array(out))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn errors(sent: Value, fixed: &Fixed) -> Errors {
        match check(sent.as_object().unwrap(), fixed) {
            Err(DomainError::Invalid(errors)) => errors,
            other => panic!("expected errors, got {other:?}"),
        }
    }

    #[test]
    fn good_values_are_kept_and_unknown_keys_ignored() {
        let sent = json!({"default_client_mtu": 1400, "local_auth_enabled": false, "id": "x",
            "default_client_dns": [" 9.9.9.9 ", "dns.example"]});
        let changes = check(sent.as_object().unwrap(), &Fixed::default()).unwrap();
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
        let changes = check(sent.as_object().unwrap(), &Fixed::default()).unwrap();
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
}
