//! Device attributes (docs/api.md section 5).

mod config;
#[cfg(test)]
mod tests;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use serde_json::{Map, Value};
use uuid::Uuid;

use super::input::{field, trimmed, Field};
use super::{at_most, CANT_BE_BLANK, IS_INVALID};
use crate::crypto::{generate_keypair, generate_psk, is_valid_key, Cipher, PrivateKey};
use crate::error::{DomainError, Errors};
use crate::ipam::Pool;
use crate::model::{AddressRequest, CustomConfig, Device, DeviceUpdate, NewDevice, UseDefaults};
use crate::settings::Settings;
use crate::time::Timestamp;

pub const KEY_FORMAT: &str = "must be a base64-encoded 32-byte key";
pub const IS_RESERVED: &str = "is reserved";
/// A device whose public key is the server's would be a peer of the server itself.
pub const IS_SERVER_KEY: &str = "is the server's own public key";
const NAME_MAX: usize = 255;
const DESCRIPTION_MAX: usize = 2048;

/// A validated create request. `device.name` is a generated one when `name_given` is false.
#[derive(Debug)]
pub struct DeviceCreate {
    pub name_given: bool,
    pub device: NewDevice,
    /// The private key of a key pair generated because the request had no public key:
    /// shown to the client once, never stored.
    pub private_key: Option<PrivateKey>,
}

/// Validates a create request. The owner is `user_id`, or `default_owner` when that is
/// omitted; with neither, `user_id` is blank. Whether the caller may create a device for
/// that owner is the caller's check. `server_key` is the server's WireGuard public key,
/// which no device may have.
pub fn create(
    attrs: &Map<String, Value>,
    settings: &Settings,
    cipher: &Cipher,
    server_key: &str,
    default_owner: Option<Uuid>,
) -> Result<DeviceCreate, DomainError> {
    let mut errors = Errors::new();
    let user_id = match (requested_user_id(attrs, &mut errors), default_owner) {
        (Some(id), _) | (None, Some(id)) => id,
        (None, None) => {
            if !errors.has("user_id") {
                errors.add("user_id", CANT_BE_BLANK);
            }
            Uuid::nil()
        }
    };
    let name = trimmed(attrs, "name", &mut errors).flatten().map(str::to_owned);
    check_length(&mut errors, "name", name.as_deref(), NAME_MAX);
    let description = description(attrs, &mut errors).flatten();
    let public_key = key(attrs, "public_key", Some(server_key), &mut errors);
    let preshared_key = key(attrs, "preshared_key", None, &mut errors);
    let (use_default, custom) = config::validate(attrs, UseDefaults::default(), &CustomConfig::default(), &mut errors);
    let ipv4 = new_address::<Ipv4Addr>(attrs, "ipv4", settings.pools.v4.as_ref(), &mut errors);
    let ipv6 = new_address::<Ipv6Addr>(attrs, "ipv6", settings.pools.v6.as_ref(), &mut errors);

    let name_given = name.is_some();
    let psk = match preshared_key.flatten() {
        Some(psk) => cipher.seal(psk.as_bytes()),
        None => cipher.seal(generate_psk().as_bytes()),
    };
    errors.finish(())?;
    // No public key: the server generates the pair and hands the private key out once.
    let (public_key, private_key) = match public_key.flatten() {
        Some(given) => (given, None),
        None => {
            let pair = generate_keypair();
            (pair.public_key, Some(PrivateKey::new(pair.private_key)))
        }
    };
    Ok(DeviceCreate {
        name_given,
        private_key,
        device: NewDevice {
            id: Uuid::now_v7(),
            user_id,
            name: name.unwrap_or_else(crate::names::generate),
            description,
            public_key,
            preshared_key: psk,
            ipv4: ipv4.unwrap_or(AddressRequest::None),
            ipv6: ipv6.unwrap_or(AddressRequest::None),
            use_default,
            custom,
            now: Timestamp::now(),
        },
    })
}

/// Validates an update of `stored`, returning the complete new state of the device.
/// `server_key` is the server's WireGuard public key, which no device may be given.
pub fn update(
    attrs: &Map<String, Value>,
    stored: &Device,
    settings: &Settings,
    cipher: &Cipher,
    server_key: &str,
) -> Result<DeviceUpdate, DomainError> {
    let mut errors = Errors::new();
    match field(attrs, "user_id") {
        Field::Absent | Field::Null => {}
        Field::Value(Value::String(s)) if Uuid::parse_str(s.trim()).ok() == Some(stored.user_id) => {}
        Field::Value(_) => errors.add("user_id", "cannot be changed"),
    }
    let name = match field(attrs, "name") {
        Field::Absent => Some(stored.name.clone()),
        _ => match trimmed(attrs, "name", &mut errors) {
            Some(Some(name)) => Some(name.to_owned()),
            Some(None) => {
                errors.add("name", CANT_BE_BLANK);
                None
            }
            None => None,
        },
    };
    check_length(&mut errors, "name", name.as_deref(), NAME_MAX);
    let description = match field(attrs, "description") {
        Field::Absent => Some(stored.description.clone()),
        _ => description(attrs, &mut errors),
    };
    let public_key = match key(attrs, "public_key", Some(server_key), &mut errors) {
        Some(Some(k)) => Some(k),
        Some(None) if matches!(field(attrs, "public_key"), Field::Absent) => Some(stored.public_key.clone()),
        Some(None) => {
            errors.add("public_key", CANT_BE_BLANK);
            None
        }
        None => None,
    };
    // Sealing is randomised, so an unchanged key is passed on as "keep" (`None`).
    let stored_psk = cipher.open_str(&stored.preshared_key).ok();
    let preshared_key = key(attrs, "preshared_key", None, &mut errors)
        .flatten()
        .filter(|k| Some(k) != stored_psk.as_ref())
        .map(|k| cipher.seal(k.as_bytes()));
    let (use_default, custom) = config::validate(attrs, stored.use_default, &stored.custom, &mut errors);
    let ipv4 = changed_address(attrs, "ipv4", settings.pools.v4.as_ref(), stored.ipv4, &mut errors);
    let ipv6 = changed_address(attrs, "ipv6", settings.pools.v6.as_ref(), stored.ipv6, &mut errors);
    errors.finish(())?;
    Ok(DeviceUpdate {
        name: name.unwrap_or_default(),
        description: description.flatten(),
        public_key: public_key.unwrap_or_default(),
        preshared_key,
        ipv4,
        ipv6,
        use_default,
        custom,
    })
}

/// `user_id` on create: `None` when absent or blank.
fn requested_user_id(attrs: &Map<String, Value>, errors: &mut Errors) -> Option<Uuid> {
    let id = trimmed(attrs, "user_id", errors).flatten()?;
    let parsed = Uuid::parse_str(id).ok();
    if parsed.is_none() {
        errors.add("user_id", "does not exist");
    }
    parsed
}

/// `description`: `Some(None)` when null or blank, `None` when invalid.
fn description(attrs: &Map<String, Value>, errors: &mut Errors) -> Option<Option<String>> {
    let text = trimmed(attrs, "description", errors)?;
    check_length(errors, "description", text, DESCRIPTION_MAX);
    Some(text.map(str::to_owned))
}

/// A WireGuard key attribute: `Some(None)` when absent, null or blank; `None` when invalid
/// or equal to `server_key`.
fn key(
    attrs: &Map<String, Value>,
    name: &str,
    server_key: Option<&str>,
    errors: &mut Errors,
) -> Option<Option<String>> {
    let text = trimmed(attrs, name, errors)?;
    match text {
        Some(k) if !is_valid_key(k) => {
            errors.add(name, KEY_FORMAT);
            None
        }
        // Compared as text: a valid key has exactly one spelling (strict padded base64,
        // no stray trailing bits), the one the server's key is written in.
        Some(k) if Some(k) == server_key => {
            errors.add(name, IS_SERVER_KEY);
            None
        }
        other => Some(other.map(str::to_owned)),
    }
}

fn check_length(errors: &mut Errors, name: &str, text: Option<&str>, max: usize) {
    if text.is_some_and(|t| t.chars().count() > max) {
        errors.add(name, at_most(max));
    }
}

/// An address attribute on create: assigned when absent, null or blank.
fn new_address<A>(
    attrs: &Map<String, Value>,
    name: &str,
    pool: Option<&Pool>,
    errors: &mut Errors,
) -> Option<AddressRequest<A>>
where
    A: FromStr + Into<IpAddr> + Copy,
{
    let text = trimmed(attrs, name, errors)?;
    match (text, pool) {
        (None, None) => Some(AddressRequest::None),
        (None, Some(_)) => Some(AddressRequest::Assign),
        (Some(text), pool) => address_in_pool(text, name, pool, errors).map(AddressRequest::Given),
    }
}

/// An address attribute on update: absent, null or blank keeps the stored address.
fn changed_address<A>(
    attrs: &Map<String, Value>,
    name: &str,
    pool: Option<&Pool>,
    stored: Option<A>,
    errors: &mut Errors,
) -> Option<A>
where
    A: FromStr + Into<IpAddr> + Copy + PartialEq,
{
    match trimmed(attrs, name, errors).flatten() {
        None => stored,
        Some(text) => match text.parse::<A>() {
            Ok(addr) if Some(addr) == stored => stored,
            _ => address_in_pool(text, name, pool, errors),
        },
    }
}

fn address_in_pool<A>(text: &str, name: &str, pool: Option<&Pool>, errors: &mut Errors) -> Option<A>
where
    A: FromStr + Into<IpAddr> + Copy,
{
    let (Ok(addr), Some(pool)) = (text.parse::<A>(), pool) else {
        errors.add(name, IS_INVALID);
        return None;
    };
    let ip: IpAddr = addr.into();
    if !pool.contains(ip) {
        errors.add(name, pool.outside_message());
        None
    } else if pool.is_reserved(ip) {
        errors.add(name, IS_RESERVED);
        None
    } else {
        Some(addr)
    }
}
