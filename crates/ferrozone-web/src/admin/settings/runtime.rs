//! The runtime configuration on the Settings page as a form: every key of
//! `/v0/configuration` a field, a key the environment fixes shown read-only with what fixes
//! it. Saving is the use case of `PATCH /v0/configuration` with the keys whose value the
//! form changed (so an untouched key keeps following its default), audited as any change
//! of the configuration; the domain's messages stand at their fields.

use ferrozone_domain::configuration::{RequireTotp, Values};
use ferrozone_domain::egress::RuleAction;
use ferrozone_domain::input::{ConfigurationChanges, Patch};
use ferrozone_domain::{Errors, Settings};
use serde_json::Value;

use crate::checked_form::Fields;

/// How a key is edited.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Switch,
    /// A whole number; blank is `null` where `nullable`.
    Number {
        nullable: bool,
    },
    Text,
    /// Values separated by commas.
    List,
    /// One of (value, label).
    Choice(&'static [(&'static str, &'static str)]),
}

/// Firezone's choices for how long a VPN session lasts (seconds), with their names.
const SESSION_LENGTHS: &[(&str, &str)] = &[
    ("0", "Never expires"),
    ("3600", "Every hour"),
    ("86400", "Every day"),
    ("604800", "Every week"),
    ("2592000", "Every 30 days"),
    ("7776000", "Every 90 days"),
    ("2147483647", "Once (never asked again)"),
];
const REQUIRE_TOTP: &[(&str, &str)] =
    &[("off", "Nobody"), ("admins", "Administrators"), ("everyone", "Everyone signing in with a password")];
const DEFAULT_ACTIONS: &[(&str, &str)] = &[("accept", "Accept"), ("drop", "Drop")];

/// Each key with its label, hint and kind, in the order of `configuration::KEYS`.
const FIELDS: [(&str, &str, &str, Kind); 12] = [
    (
        "local_auth_enabled",
        "Sign-in with email and password",
        "Off: only identity providers sign people in.",
        Kind::Switch,
    ),
    ("allow_unprivileged_device_management", "Users may add and delete their devices", "", Kind::Switch),
    ("allow_unprivileged_device_configuration", "Users may change their devices' tunnel settings", "", Kind::Switch),
    ("disable_vpn_on_oidc_error", "Disable the VPN when the identity provider refuses a refresh", "", Kind::Switch),
    (
        "vpn_session_duration",
        "VPN session length",
        "How often users must sign in again to stay on the VPN.",
        Kind::Choice(SESSION_LENGTHS),
    ),
    (
        "default_client_persistent_keepalive",
        "Default persistent keepalive (seconds)",
        "0 to 120; blank for no keepalive line.",
        Kind::Number { nullable: true },
    ),
    ("default_client_mtu", "Default MTU", "576 to 1500; blank for no MTU line.", Kind::Number { nullable: true }),
    (
        "default_client_endpoint",
        "Default endpoint",
        "Where devices reach this server: a host or address, with an optional :port.",
        Kind::Text,
    ),
    ("default_client_dns", "Default DNS servers", "Addresses or names, separated by commas.", Kind::List),
    (
        "default_client_allowed_ips",
        "Default allowed IPs",
        "Addresses or networks routed through the tunnel, separated by commas.",
        Kind::List,
    ),
    (
        "require_totp",
        "Two-factor sign-in required of",
        "Applies to sign-in with a password.",
        Kind::Choice(REQUIRE_TOTP),
    ),
    ("egress_default_action", "Tunnel traffic no egress rule matches", "", Kind::Choice(DEFAULT_ACTIONS)),
];

/// One key as the form shows it.
pub(super) struct Field {
    pub key: &'static str,
    pub label: &'static str,
    pub hint: &'static str,
    pub kind: Kind,
    /// The value as text (a switch: `true` or `false`; a list: comma-separated).
    pub value: String,
    /// The variable or flag that fixes the key, if one does.
    pub fixed_by: Option<String>,
    pub error: String,
}

impl Field {
    pub fn checked(&self) -> bool {
        self.value == "true"
    }

    /// The choices of a choice, with the current value among them even when it is none of
    /// the named ones (a session length set through the API).
    pub fn choices(&self) -> Vec<(String, String)> {
        let Kind::Choice(choices) = self.kind else { return Vec::new() };
        let mut all: Vec<(String, String)> = choices.iter().map(|(v, l)| ((*v).to_owned(), (*l).to_owned())).collect();
        if !choices.iter().any(|(v, _)| *v == self.value) {
            all.push((self.value.clone(), format!("{} seconds", self.value)));
        }
        all
    }

    pub fn is(&self, kind: &str) -> bool {
        matches!(
            (self.kind, kind),
            (Kind::Switch, "switch")
                | (Kind::Choice(_), "choice")
                | (Kind::Number { .. }, "number")
                | (Kind::Text | Kind::List, "text")
        )
    }
}

/// The keys as they are in effect.
pub(super) fn current(values: &Values, settings: &Settings) -> Vec<Field> {
    let json = serde_json::to_value(values).unwrap_or_default();
    FIELDS
        .iter()
        .map(|&(key, label, hint, kind)| Field {
            key,
            label,
            hint,
            kind,
            value: text(&json[key]),
            fixed_by: settings.fixed.variable(key).map(str::to_owned),
            error: String::new(),
        })
        .collect()
}

/// A JSON value as the form's text.
fn text(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(text).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

/// `fields` laid over `shown` (the keys in effect); returns the change of the keys whose
/// value differs and is not fixed, and the problems found before the domain is asked.
pub(super) fn changes(shown: &mut [Field], fields: &Fields) -> (ConfigurationChanges, Errors) {
    let mut changes = ConfigurationChanges::default();
    let mut errors = Errors::new();
    for field in shown.iter_mut().filter(|f| f.fixed_by.is_none()) {
        let sent = match field.kind {
            Kind::Switch => fields.contains_key(field.key).to_string(),
            _ => fields.get(field.key).map(|v| v.trim().to_owned()).unwrap_or_default(),
        };
        if sent == field.value {
            continue;
        }
        field.value = sent;
        if let Err(message) = set(&mut changes, field) {
            errors.add(field.key, message);
        }
    }
    (changes, errors)
}

/// Puts `field`'s value into `changes`.
fn set(c: &mut ConfigurationChanges, field: &Field) -> Result<(), &'static str> {
    let text = field.value.as_str();
    let switch = || Patch::Value(text == "true");
    let number = |nullable: bool| match text {
        "" if nullable => Ok(Patch::Null),
        _ => text.parse::<i64>().map(Patch::Value).map_err(|_| "must be a whole number"),
    };
    let list = || Patch::Value(crate::checked_form::items(text));
    match field.key {
        "local_auth_enabled" => c.local_auth_enabled = switch(),
        "allow_unprivileged_device_management" => c.allow_unprivileged_device_management = switch(),
        "allow_unprivileged_device_configuration" => c.allow_unprivileged_device_configuration = switch(),
        "disable_vpn_on_oidc_error" => c.disable_vpn_on_oidc_error = switch(),
        "vpn_session_duration" => c.vpn_session_duration = number(false)?,
        "default_client_persistent_keepalive" => c.default_client_persistent_keepalive = number(true)?,
        "default_client_mtu" => c.default_client_mtu = number(true)?,
        "default_client_endpoint" => c.default_client_endpoint = Patch::Value(text.to_owned()),
        "default_client_dns" => c.default_client_dns = list(),
        "default_client_allowed_ips" => c.default_client_allowed_ips = list(),
        "require_totp" => c.require_totp = choice(text, &RequireTotp::NAMES)?,
        _ => c.egress_default_action = choice(text, &RuleAction::NAMES)?,
    }
    Ok(())
}

fn choice<T: Copy>(text: &str, names: &[(&'static str, T)]) -> Result<Patch<T>, &'static str> {
    names
        .iter()
        .find(|(name, _)| *name == text)
        .map(|(_, value)| Patch::Value(*value))
        .ok_or("is not one of the choices")
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrozone_domain::configuration::KEYS;

    #[test]
    fn every_key_of_the_configuration_is_a_field() {
        let keys: Vec<&str> = FIELDS.iter().map(|(key, ..)| *key).collect();
        assert_eq!(keys, KEYS);
    }

    #[test]
    fn only_changed_keys_that_are_not_fixed_are_sent() {
        let mut settings = Settings::standard();
        settings.fixed = ferrozone_domain::configuration::Fixed::new([(
            "default_client_mtu".to_owned(),
            "WIREGUARD_MTU".to_owned(),
        )]);
        let mut shown = current(&settings.configuration, &settings);
        let form: Fields = [
            ("local_auth_enabled", "on"),
            ("allow_unprivileged_device_management", "on"),
            ("allow_unprivileged_device_configuration", "on"),
            ("disable_vpn_on_oidc_error", "on"),
            ("vpn_session_duration", "86400"),
            ("default_client_persistent_keepalive", ""),
            ("default_client_mtu", "1400"),
            ("default_client_endpoint", "localhost:51820"),
            ("default_client_dns", "1.1.1.1, 1.0.0.1"),
            ("default_client_allowed_ips", "0.0.0.0/0, ::/0"),
            ("require_totp", "off"),
            ("egress_default_action", "drop"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let (changes, errors) = changes(&mut shown, &form);
        assert!(errors.is_empty());
        assert_eq!(changes.vpn_session_duration, Patch::Value(86400));
        assert_eq!(changes.default_client_persistent_keepalive, Patch::Null, "blank: no line");
        assert_eq!(changes.egress_default_action, Patch::Value(RuleAction::Drop));
        assert!(changes.default_client_mtu.is_absent(), "a fixed key is never sent");
        assert!(
            changes.local_auth_enabled.is_absent() && changes.default_client_dns.is_absent(),
            "unchanged keys are not sent"
        );
    }
}
