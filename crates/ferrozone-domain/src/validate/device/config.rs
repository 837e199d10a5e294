//! The five tunnel settings a device may override: `allowed_ips`, `dns`, `endpoint`,
//! `mtu` and `persistent_keepalive`, each with its `use_default_*` switch.

use std::collections::HashSet;

use super::super::input::Check;
use super::super::net::{allowed_ip, is_dns_server, is_endpoint};
use super::super::{CANT_BE_BLANK, DUPLICATES, IS_INVALID, MUST_NOT_BE_PRESENT};
use crate::input::{Patch, TunnelSettings};
use crate::model::{CustomConfig, UseDefaults};

/// Merges the request over `base` (the stored device, or the defaults on create).
/// A setting whose `use_default_*` ends up true has its custom value cleared.
pub fn validate(
    c: &mut Check<'_>,
    sent: &TunnelSettings,
    base_use: UseDefaults,
    base: &CustomConfig,
) -> (UseDefaults, CustomConfig) {
    let use_default = UseDefaults {
        allowed_ips: switch(c, "use_default_allowed_ips", sent.use_default_allowed_ips, base_use.allowed_ips),
        dns: switch(c, "use_default_dns", sent.use_default_dns, base_use.dns),
        endpoint: switch(c, "use_default_endpoint", sent.use_default_endpoint, base_use.endpoint),
        mtu: switch(c, "use_default_mtu", sent.use_default_mtu, base_use.mtu),
        persistent_keepalive: switch(
            c,
            "use_default_persistent_keepalive",
            sent.use_default_persistent_keepalive,
            base_use.persistent_keepalive,
        ),
    };
    let custom = CustomConfig {
        allowed_ips: list(c, "allowed_ips", &sent.allowed_ips, &base.allowed_ips, use_default.allowed_ips, |s| {
            allowed_ip(s).map(|(ip, len)| format!("{ip}/{}", len.map_or(-1, i16::from)))
        }),
        dns: list(c, "dns", &sent.dns, &base.dns, use_default.dns, |s| {
            is_dns_server(s).then(|| s.to_ascii_lowercase())
        }),
        endpoint: endpoint(c, &sent.endpoint, base.endpoint.as_deref(), use_default.endpoint),
        mtu: integer(c, "mtu", &sent.mtu, base.mtu, use_default.mtu, (576, 1500)),
        persistent_keepalive: integer(
            c,
            "persistent_keepalive",
            &sent.persistent_keepalive,
            base.persistent_keepalive,
            use_default.persistent_keepalive,
            (0, 120),
        ),
    };
    (use_default, custom)
}

fn switch(c: &mut Check<'_>, attribute: &str, sent: Option<bool>, base: bool) -> bool {
    c.flag(attribute, sent).unwrap_or(base)
}

/// `present`: whether the request had a value that counts as present (anything but
/// absent, `null`, a blank string and an empty list).
fn forbid_when_default(c: &mut Check<'_>, attribute: &str, present: bool, use_default: bool) {
    if use_default && (present || c.wrong_type_present(attribute)) {
        c.add(attribute, MUST_NOT_BE_PRESENT);
    }
}

/// A list of strings; `canonical` gives the form used to find duplicates, or `None`
/// for an invalid entry.
fn list(
    c: &mut Check<'_>,
    attribute: &str,
    sent: &Patch<Vec<String>>,
    base: &[String],
    use_default: bool,
    canonical: impl Fn(&str) -> Option<String>,
) -> Vec<String> {
    forbid_when_default(c, attribute, sent.value().is_some_and(|items| !items.is_empty()), use_default);
    let items = match sent {
        _ if c.wrong_type(attribute) => Vec::new(),
        Patch::Absent => base.to_vec(),
        Patch::Null => Vec::new(),
        Patch::Value(items) => {
            let mut out = Vec::with_capacity(items.len());
            let mut seen = HashSet::with_capacity(items.len());
            for item in items {
                let text = item.trim();
                match canonical(text).map(|canonical| seen.insert(canonical)) {
                    Some(true) => out.push(text.to_owned()),
                    Some(false) => c.add(attribute, DUPLICATES),
                    None => c.add(attribute, IS_INVALID),
                }
            }
            out
        }
    };
    if use_default {
        Vec::new()
    } else {
        items
    }
}

fn endpoint(c: &mut Check<'_>, sent: &Patch<String>, base: Option<&str>, use_default: bool) -> Option<String> {
    forbid_when_default(c, "endpoint", sent.value().is_some_and(|s| !s.trim().is_empty()), use_default);
    let value = match sent {
        _ if c.wrong_type("endpoint") => return None,
        Patch::Absent => base.map(str::to_owned),
        Patch::Null => None,
        Patch::Value(s) if s.trim().is_empty() => None,
        Patch::Value(s) if is_endpoint(s.trim()) => Some(s.trim().to_owned()),
        Patch::Value(_) => {
            c.add("endpoint", IS_INVALID);
            return None;
        }
    };
    if use_default {
        return None;
    }
    if value.is_none() {
        c.add("endpoint", CANT_BE_BLANK);
    }
    value
}

fn integer(
    c: &mut Check<'_>,
    attribute: &str,
    sent: &Patch<i64>,
    base: Option<i32>,
    use_default: bool,
    (min, max): (i64, i64),
) -> Option<i32> {
    forbid_when_default(c, attribute, sent.value().is_some(), use_default);
    let value = match *sent {
        _ if c.wrong_type(attribute) => None,
        Patch::Absent => base,
        Patch::Null => None,
        Patch::Value(n) if n < min => {
            c.add(attribute, format!("must be greater than or equal to {min}"));
            None
        }
        Patch::Value(n) if n > max => {
            c.add(attribute, format!("must be less than or equal to {max}"));
            None
        }
        Patch::Value(n) => i32::try_from(n).ok(),
    };
    if use_default {
        None
    } else {
        value
    }
}
