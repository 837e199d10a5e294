//! The five tunnel settings a device may override: `allowed_ips`, `dns`, `endpoint`,
//! `mtu` and `persistent_keepalive`, each with its `use_default_*` switch.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::super::input::{boolean, field, is_present, Field};
use super::super::net::{allowed_ip, is_dns_server, is_endpoint};
use super::super::{CANT_BE_BLANK, DUPLICATES, IS_INVALID, MUST_NOT_BE_PRESENT};
use crate::error::Errors;
use crate::model::{CustomConfig, UseDefaults};

/// Merges the request over `base` (the stored device, or the defaults on create).
/// A setting whose `use_default_*` ends up true has its custom value cleared.
pub fn validate(
    attrs: &Map<String, Value>,
    base_use: UseDefaults,
    base: &CustomConfig,
    errors: &mut Errors,
) -> (UseDefaults, CustomConfig) {
    let use_default = UseDefaults {
        allowed_ips: switch(attrs, "allowed_ips", base_use.allowed_ips, errors),
        dns: switch(attrs, "dns", base_use.dns, errors),
        endpoint: switch(attrs, "endpoint", base_use.endpoint, errors),
        mtu: switch(attrs, "mtu", base_use.mtu, errors),
        persistent_keepalive: switch(attrs, "persistent_keepalive", base_use.persistent_keepalive, errors),
    };
    let custom = CustomConfig {
        allowed_ips: list(attrs, "allowed_ips", &base.allowed_ips, use_default.allowed_ips, errors, |s| {
            allowed_ip(s).map(|(ip, len)| format!("{ip}/{}", len.map_or(-1, i16::from)))
        }),
        dns: list(attrs, "dns", &base.dns, use_default.dns, errors, |s| {
            is_dns_server(s).then(|| s.to_ascii_lowercase())
        }),
        endpoint: endpoint(attrs, base.endpoint.as_deref(), use_default.endpoint, errors),
        mtu: integer(attrs, "mtu", base.mtu, use_default.mtu, (576, 1500), errors),
        persistent_keepalive: integer(
            attrs,
            "persistent_keepalive",
            base.persistent_keepalive,
            use_default.persistent_keepalive,
            (0, 120),
            errors,
        ),
    };
    (use_default, custom)
}

fn switch(attrs: &Map<String, Value>, setting: &str, base: bool, errors: &mut Errors) -> bool {
    boolean(attrs, &format!("use_default_{setting}"), errors).unwrap_or(base)
}

fn forbid_when_default(attrs: &Map<String, Value>, key: &str, use_default: bool, errors: &mut Errors) {
    if use_default && is_present(attrs, key) {
        errors.add(key, MUST_NOT_BE_PRESENT);
    }
}

/// A list of strings; `canonical` gives the form used to find duplicates, or `None`
/// for an invalid entry.
fn list(
    attrs: &Map<String, Value>,
    key: &str,
    base: &[String],
    use_default: bool,
    errors: &mut Errors,
    canonical: impl Fn(&str) -> Option<String>,
) -> Vec<String> {
    forbid_when_default(attrs, key, use_default, errors);
    let items = match field(attrs, key) {
        Field::Absent => base.to_vec(),
        Field::Null => Vec::new(),
        Field::Value(Value::Array(items)) => {
            let mut out = Vec::with_capacity(items.len());
            let mut seen = HashSet::with_capacity(items.len());
            for item in items {
                let text = item.as_str().map(str::trim).unwrap_or_default();
                match canonical(text).map(|c| seen.insert(c)) {
                    Some(true) => out.push(text.to_owned()),
                    Some(false) => errors.add(key, DUPLICATES),
                    None => errors.add(key, IS_INVALID),
                }
            }
            out
        }
        Field::Value(_) => {
            errors.add(key, IS_INVALID);
            Vec::new()
        }
    };
    if use_default {
        Vec::new()
    } else {
        items
    }
}

fn endpoint(attrs: &Map<String, Value>, base: Option<&str>, use_default: bool, errors: &mut Errors) -> Option<String> {
    forbid_when_default(attrs, "endpoint", use_default, errors);
    let value = match field(attrs, "endpoint") {
        Field::Absent => base.map(str::to_owned),
        Field::Null => None,
        Field::Value(Value::String(s)) if s.trim().is_empty() => None,
        Field::Value(Value::String(s)) if is_endpoint(s.trim()) => Some(s.trim().to_owned()),
        Field::Value(_) => {
            errors.add("endpoint", IS_INVALID);
            return None;
        }
    };
    if use_default {
        return None;
    }
    if value.is_none() {
        errors.add("endpoint", CANT_BE_BLANK);
    }
    value
}

fn integer(
    attrs: &Map<String, Value>,
    key: &str,
    base: Option<i32>,
    use_default: bool,
    (min, max): (i64, i64),
    errors: &mut Errors,
) -> Option<i32> {
    forbid_when_default(attrs, key, use_default, errors);
    let value = match field(attrs, key) {
        Field::Absent => base,
        Field::Null => None,
        Field::Value(v) => match v.as_i64() {
            Some(n) if n < min => {
                errors.add(key, format!("must be greater than or equal to {min}"));
                None
            }
            Some(n) if n > max => {
                errors.add(key, format!("must be less than or equal to {max}"));
                None
            }
            Some(n) => i32::try_from(n).ok(),
            None => {
                errors.add(key, IS_INVALID);
                None
            }
        },
    };
    if use_default {
        None
    } else {
        value
    }
}
