//! Checking a change of the configuration: Firezone's keys, types, ranges and messages, and
//! the guard against keys the environment fixes.

use std::collections::HashSet;

use serde_json::Value;

use super::Fixed;
use crate::input::{ConfigurationChanges, Patch, WrongTypes};
use crate::validate::net::{allowed_ip, is_dns_server, is_endpoint};
use crate::validate::{CANT_BE_BLANK, DUPLICATES, IS_INVALID};
use crate::{DomainError, Errors};

/// The `(key, value)` pairs to store, in [`super::KEYS`] order (the provider lists are
/// checked apart); one bad or fixed key makes the whole change invalid.
pub fn check(changes: &ConfigurationChanges, fixed: &Fixed) -> Result<Vec<(String, Value)>, DomainError> {
    let mut errors = Errors::new();
    let changes = collect(changes, fixed, &mut errors);
    errors.finish(changes)
}

/// [`check`], adding its problems to `errors`.
pub fn collect(c: &ConfigurationChanges, fixed: &Fixed, errors: &mut Errors) -> Vec<(String, Value)> {
    let mut keys = Keys { fixed, wrong_types: &c.wrong_types, errors, changes: Vec::new() };
    keys.check("local_auth_enabled", &c.local_auth_enabled, REQUIRED, switch);
    keys.check("allow_unprivileged_device_management", &c.allow_unprivileged_device_management, REQUIRED, switch);
    keys.check("allow_unprivileged_device_configuration", &c.allow_unprivileged_device_configuration, REQUIRED, switch);
    keys.check("disable_vpn_on_oidc_error", &c.disable_vpn_on_oidc_error, REQUIRED, switch);
    keys.check("vpn_session_duration", &c.vpn_session_duration, REQUIRED, |n| integer(*n, 0, 2_147_483_647));
    keys.check("default_client_persistent_keepalive", &c.default_client_persistent_keepalive, NULLABLE, |n| {
        integer(*n, 0, 120)
    });
    keys.check("default_client_mtu", &c.default_client_mtu, NULLABLE, |n| integer(*n, 576, 1500));
    keys.check("default_client_endpoint", &c.default_client_endpoint, REQUIRED, |s| endpoint(s));
    keys.check("default_client_dns", &c.default_client_dns, LIST, |items| {
        list(items, |s| is_dns_server(s).then(|| s.to_ascii_lowercase()))
    });
    keys.check("default_client_allowed_ips", &c.default_client_allowed_ips, LIST, |items| {
        list(items, |s| allowed_ip(s).map(|(ip, len)| format!("{ip}/{}", len.map_or(-1, i16::from))))
    });
    keys.check("require_totp", &c.require_totp, CHOICE, |choice| Ok(choice.name().into()));
    keys.check("egress_default_action", &c.egress_default_action, ACTION, |action| Ok(action.as_str().into()));
    keys.changes
}

/// How a key takes `null` and a value of a JSON type it cannot have.
struct Rule {
    /// `null` is stored (it means "leave this line out of client configurations").
    nullable: bool,
    /// The message for a value of a wrong type.
    wrong_type: &'static str,
}

/// A switch, a number or a text.
const REQUIRED: Rule = Rule { nullable: false, wrong_type: IS_INVALID };
const NULLABLE: Rule = Rule { nullable: true, wrong_type: IS_INVALID };
const LIST: Rule = Rule { nullable: false, wrong_type: "must be an array" };
const CHOICE: Rule = Rule { nullable: false, wrong_type: "must be one of: off, admins, everyone" };
const ACTION: Rule = Rule { nullable: false, wrong_type: "must be one of: accept, drop" };

/// The checks of one change, in key order.
struct Keys<'a> {
    fixed: &'a Fixed,
    wrong_types: &'a WrongTypes,
    errors: &'a mut Errors,
    changes: Vec<(String, Value)>,
}

impl Keys<'_> {
    /// Checks `key`, sent as `patch` (or with a wrong type), by `rule` and then by `value`,
    /// which gives what to store or the message.
    fn check<T>(&mut self, key: &str, patch: &Patch<T>, rule: Rule, value: impl FnOnce(&T) -> Result<Value, String>) {
        let wrong_type = self.wrong_types.has(key);
        if patch.is_absent() && !wrong_type {
            return;
        }
        if let Some(source) = self.fixed.source(key) {
            self.errors.add(key, format!("cannot be changed; it is overridden by {source}"));
            return;
        }
        let checked = match patch {
            _ if wrong_type => Err(rule.wrong_type.to_owned()),
            Patch::Value(sent) => value(sent),
            Patch::Null if rule.nullable => Ok(Value::Null),
            Patch::Null | Patch::Absent => Err(CANT_BE_BLANK.to_owned()),
        };
        match checked {
            Ok(value) => self.changes.push((key.to_owned(), value)),
            Err(message) => self.errors.add(key, message),
        }
    }
}

fn switch(on: &bool) -> Result<Value, String> {
    Ok(Value::Bool(*on))
}

fn integer(n: i64, min: i64, max: i64) -> Result<Value, String> {
    match n {
        n if n < min => Err(format!("must be greater than or equal to {min}")),
        n if n > max => Err(format!("must be less than or equal to {max}")),
        n => Ok(n.into()),
    }
}

fn endpoint(text: &str) -> Result<Value, String> {
    match text.trim() {
        "" => Err(CANT_BE_BLANK.to_owned()),
        s if is_endpoint(s) => Ok(s.into()),
        _ => Err(IS_INVALID.to_owned()),
    }
}

/// A list of strings, trimmed; `canonical` gives the form that finds duplicates, `None`
/// when invalid.
fn list(items: &[String], canonical: impl Fn(&str) -> Option<String>) -> Result<Value, String> {
    let mut seen = HashSet::with_capacity(items.len());
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let text = item.trim();
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

    use super::super::RequireTotp;
    use super::*;

    #[test]
    fn the_keys_are_checked_in_the_order_of_keys() {
        let changes = ConfigurationChanges {
            require_totp: Patch::Value(RequireTotp::Admins),
            default_client_mtu: Patch::Null,
            local_auth_enabled: Patch::Value(false),
            ..Default::default()
        };
        let stored = check(&changes, &Fixed::default()).unwrap();
        let keys: Vec<&str> = stored.iter().map(|(key, _)| key.as_str()).collect();
        assert_eq!(keys, ["local_auth_enabled", "default_client_mtu", "require_totp"]);
        assert_eq!(stored[2].1, json!("admins"));
        let order: Vec<&str> = super::super::KEYS.iter().copied().filter(|key| keys.contains(key)).collect();
        assert_eq!(keys, order);
    }

    #[test]
    fn every_key_is_checked() {
        let mut wrong_types = WrongTypes::default();
        for key in super::super::KEYS {
            wrong_types.insert(key, true);
        }
        let changes = ConfigurationChanges { wrong_types, ..Default::default() };
        let Err(DomainError::Invalid(errors)) = check(&changes, &Fixed::default()) else { panic!("expected errors") };
        let reported: Vec<&str> = errors.iter().map(|(key, _)| key).collect();
        let mut keys = super::super::KEYS.to_vec();
        keys.sort_unstable();
        assert_eq!(reported, keys);
    }

    #[test]
    fn a_wrong_type_of_a_fixed_key_is_reported_as_fixed() {
        let mut wrong_types = WrongTypes::default();
        wrong_types.insert("default_client_dns", true);
        let changes = ConfigurationChanges { wrong_types, ..Default::default() };
        let fixed = Fixed::new([("default_client_dns".to_owned(), "WIREGUARD_DNS".to_owned())]);
        let Err(DomainError::Invalid(errors)) = check(&changes, &fixed) else { panic!("expected errors") };
        assert_eq!(
            errors.get("default_client_dns").unwrap(),
            ["cannot be changed; it is overridden by WIREGUARD_DNS environment variable"]
        );
    }
}
