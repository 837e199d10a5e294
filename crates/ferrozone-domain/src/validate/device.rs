//! Device attributes (docs/api.md section 5).
//!
//! Validation is pure: [`check_create`] and [`check_update`] use no keys, so a rejected
//! request costs no key generation or sealing. [`complete`] and [`complete_update`] do
//! that work for a request that passed.

mod config;
#[cfg(test)]
mod tests;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use uuid::Uuid;

use super::input::Check;
use super::{at_most, CANT_BE_BLANK, IS_INVALID};
use crate::crypto::{generate_keypair, generate_psk, is_valid_key, Cipher, PrivateKey};
use crate::error::DomainError;
use crate::input::{DeviceChanges, NewDevice};
use crate::ipam::Pool;
use crate::model::{AddressRequest, CustomConfig, Device, DeviceInsert, DeviceUpdate, UseDefaults};
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
    pub device: DeviceInsert,
    /// The private key of a key pair generated because the request had no public key:
    /// shown to the client once, never stored.
    pub private_key: Option<PrivateKey>,
}

/// A create request that passed validation, before its keys are settled: `None` for what
/// the server generates.
#[derive(Debug)]
pub struct CheckedDevice {
    user_id: Uuid,
    name: Option<String>,
    description: Option<String>,
    public_key: Option<String>,
    preshared_key: Option<String>,
    ipv4: AddressRequest<Ipv4Addr>,
    ipv6: AddressRequest<Ipv6Addr>,
    use_default: UseDefaults,
    custom: CustomConfig,
}

impl CheckedDevice {
    pub fn owner(&self) -> Uuid {
        self.user_id
    }

    /// The tunnel settings as they would be stored: trimmed, and without the values of
    /// settings that follow the default.
    pub fn tunnel(&self) -> (UseDefaults, CustomConfig) {
        (self.use_default, self.custom.clone())
    }

    /// Whether the request configures the device: gives an address, or turns off a
    /// `use_default_*` (only then is a tunnel setting of its own kept).
    pub fn is_configured(&self) -> bool {
        matches!(self.ipv4, AddressRequest::Given(_))
            || matches!(self.ipv6, AddressRequest::Given(_))
            || self.use_default != UseDefaults::default()
            || self.custom != CustomConfig::default()
    }
}

/// Validates a create request. The owner is `user_id`, or `default_owner` when that is
/// omitted; with neither, `user_id` is blank. Whether the caller may create a device for
/// that owner is the caller's check. `server_key` is the server's WireGuard public key,
/// which no device may have.
pub fn check_create(
    input: &NewDevice,
    settings: &Settings,
    server_key: &str,
    default_owner: Option<Uuid>,
) -> Result<CheckedDevice, DomainError> {
    let mut c = Check::new(&input.wrong_types);
    let user_id = match (requested_user_id(&mut c, input.user_id.as_deref()), default_owner) {
        (Some(id), _) | (None, Some(id)) => id,
        (None, None) => {
            if !c.has("user_id") {
                c.add("user_id", CANT_BE_BLANK);
            }
            Uuid::nil()
        }
    };
    let name = c.trimmed("name", input.name.as_deref()).flatten().map(str::to_owned);
    check_length(&mut c, "name", name.as_deref(), NAME_MAX);
    let description = description(&mut c, input.description.as_deref()).flatten();
    let public_key = key(&mut c, "public_key", input.public_key.as_deref(), Some(server_key));
    let preshared_key = key(&mut c, "preshared_key", input.preshared_key.as_deref(), None);
    let (use_default, custom) =
        config::validate(&mut c, &input.tunnel, UseDefaults::default(), &CustomConfig::default());
    let ipv4 = new_address::<Ipv4Addr>(&mut c, "ipv4", input.ipv4.as_deref(), settings.pools.v4.as_ref());
    let ipv6 = new_address::<Ipv6Addr>(&mut c, "ipv6", input.ipv6.as_deref(), settings.pools.v6.as_ref());
    c.finish(())?;
    Ok(CheckedDevice {
        user_id,
        name,
        description,
        public_key: public_key.flatten(),
        preshared_key: preshared_key.flatten(),
        ipv4: ipv4.unwrap_or(AddressRequest::None),
        ipv6: ipv6.unwrap_or(AddressRequest::None),
        use_default,
        custom,
    })
}

/// The device to insert: the name, the preshared key and (without a public key) the key
/// pair generated, the preshared key sealed.
pub fn complete(checked: CheckedDevice, cipher: &Cipher) -> DeviceCreate {
    let preshared_key = match checked.preshared_key {
        Some(psk) => cipher.seal(psk.as_bytes()),
        None => cipher.seal(generate_psk().as_bytes()),
    };
    // No public key: the server generates the pair and hands the private key out once.
    let (public_key, private_key) = match checked.public_key {
        Some(given) => (given, None),
        None => {
            let pair = generate_keypair();
            (pair.public_key, Some(PrivateKey::new(pair.private_key)))
        }
    };
    DeviceCreate {
        name_given: checked.name.is_some(),
        private_key,
        device: DeviceInsert {
            id: Uuid::now_v7(),
            user_id: checked.user_id,
            name: checked.name.unwrap_or_else(crate::names::generate),
            description: checked.description,
            public_key,
            preshared_key,
            ipv4: checked.ipv4,
            ipv6: checked.ipv6,
            use_default: checked.use_default,
            custom: checked.custom,
            now: Timestamp::now(),
        },
    }
}

/// An update that passed validation, with the preshared key it sets still in plain text.
#[derive(Debug)]
pub struct CheckedUpdate {
    update: DeviceUpdate,
    preshared_key: Option<String>,
}

/// Validates an update of `stored`, giving the complete new state of the device.
/// `server_key` is the server's WireGuard public key, which no device may be given.
pub fn check_update(
    input: &DeviceChanges,
    stored: &Device,
    settings: &Settings,
    server_key: &str,
) -> Result<CheckedUpdate, DomainError> {
    let mut c = Check::new(&input.wrong_types);
    let same_owner = match input.user_id.as_deref() {
        None => !c.is_wrong_type("user_id"),
        Some(id) => Uuid::parse_str(id.trim()).ok() == Some(stored.user_id),
    };
    if !same_owner {
        c.add("user_id", "cannot be changed");
    }
    let name = match c.sent("name", &input.name) {
        false => Some(stored.name.clone()),
        true => match c.trimmed("name", input.name.value().map(String::as_str)) {
            Some(Some(name)) => Some(name.to_owned()),
            Some(None) => {
                c.add("name", CANT_BE_BLANK);
                None
            }
            None => None,
        },
    };
    check_length(&mut c, "name", name.as_deref(), NAME_MAX);
    let description = match c.sent("description", &input.description) {
        false => Some(stored.description.clone()),
        true => description(&mut c, input.description.value().map(String::as_str)),
    };
    let sent_public_key = c.sent("public_key", &input.public_key);
    let public_key = match key(&mut c, "public_key", input.public_key.value().map(String::as_str), Some(server_key)) {
        Some(Some(k)) => Some(k),
        Some(None) if !sent_public_key => Some(stored.public_key.clone()),
        Some(None) => {
            c.add("public_key", CANT_BE_BLANK);
            None
        }
        None => None,
    };
    let preshared_key = key(&mut c, "preshared_key", input.preshared_key.as_deref(), None).flatten();
    let (use_default, custom) = config::validate(&mut c, &input.tunnel, stored.use_default, &stored.custom);
    let ipv4 = changed_address(&mut c, "ipv4", input.ipv4.as_deref(), settings.pools.v4.as_ref(), stored.ipv4);
    let ipv6 = changed_address(&mut c, "ipv6", input.ipv6.as_deref(), settings.pools.v6.as_ref(), stored.ipv6);
    c.finish(())?;
    let update = DeviceUpdate {
        name: name.unwrap_or_default(),
        description: description.flatten(),
        public_key: public_key.unwrap_or_default(),
        preshared_key: None,
        ipv4,
        ipv6,
        use_default,
        custom,
    };
    Ok(CheckedUpdate { update, preshared_key })
}

/// The update to store, with the new preshared key sealed. Sealing is randomised, so the
/// stored key sent again is passed on as "keep" (`None`).
pub fn complete_update(checked: CheckedUpdate, stored: &Device, cipher: &Cipher) -> DeviceUpdate {
    let CheckedUpdate { mut update, preshared_key } = checked;
    if let Some(psk) = preshared_key {
        if cipher.open_str(&stored.preshared_key).ok().as_ref() != Some(&psk) {
            update.preshared_key = Some(cipher.seal(psk.as_bytes()));
        }
    }
    update
}

/// `user_id` on create: `None` when absent or blank.
fn requested_user_id(c: &mut Check<'_>, value: Option<&str>) -> Option<Uuid> {
    let id = c.trimmed("user_id", value).flatten()?;
    let parsed = Uuid::parse_str(id).ok();
    if parsed.is_none() {
        c.add("user_id", crate::rules::DOES_NOT_EXIST);
    }
    parsed
}

/// `description`: `Some(None)` when null or blank, `None` when invalid.
fn description(c: &mut Check<'_>, value: Option<&str>) -> Option<Option<String>> {
    let text = c.trimmed("description", value)?;
    check_length(c, "description", text, DESCRIPTION_MAX);
    Some(text.map(str::to_owned))
}

/// A WireGuard key attribute: `Some(None)` when absent, null or blank; `None` when invalid
/// or equal to `server_key`.
fn key(c: &mut Check<'_>, name: &str, value: Option<&str>, server_key: Option<&str>) -> Option<Option<String>> {
    let text = c.trimmed(name, value)?;
    match text {
        Some(k) if !is_valid_key(k) => {
            c.add(name, KEY_FORMAT);
            None
        }
        // Compared as text: a valid key has exactly one spelling (strict padded base64,
        // no stray trailing bits), the one the server's key is written in.
        Some(k) if Some(k) == server_key => {
            c.add(name, IS_SERVER_KEY);
            None
        }
        other => Some(other.map(str::to_owned)),
    }
}

fn check_length(c: &mut Check<'_>, name: &str, text: Option<&str>, max: usize) {
    if text.is_some_and(|t| t.chars().count() > max) {
        c.add(name, at_most(max));
    }
}

/// An address attribute on create: assigned when absent, null or blank.
fn new_address<A>(c: &mut Check<'_>, name: &str, value: Option<&str>, pool: Option<&Pool>) -> Option<AddressRequest<A>>
where
    A: FromStr + Into<IpAddr> + Copy,
{
    let text = c.trimmed(name, value)?;
    match (text, pool) {
        (None, None) => Some(AddressRequest::None),
        (None, Some(_)) => Some(AddressRequest::Assign),
        (Some(text), pool) => address_in_pool(c, text, name, pool).map(AddressRequest::Given),
    }
}

/// An address attribute on update: absent, null or blank keeps the stored address.
fn changed_address<A>(
    c: &mut Check<'_>,
    name: &str,
    value: Option<&str>,
    pool: Option<&Pool>,
    stored: Option<A>,
) -> Option<A>
where
    A: FromStr + Into<IpAddr> + Copy + PartialEq,
{
    match c.trimmed(name, value).flatten() {
        None => stored,
        Some(text) => match text.parse::<A>() {
            Ok(addr) if Some(addr) == stored => stored,
            _ => address_in_pool(c, text, name, pool),
        },
    }
}

fn address_in_pool<A>(c: &mut Check<'_>, text: &str, name: &str, pool: Option<&Pool>) -> Option<A>
where
    A: FromStr + Into<IpAddr> + Copy,
{
    let (Ok(addr), Some(pool)) = (text.parse::<A>(), pool) else {
        c.add(name, IS_INVALID);
        return None;
    };
    let ip: IpAddr = addr.into();
    if !pool.contains(ip) {
        c.add(name, pool.outside_message());
        None
    } else if pool.is_reserved(ip) {
        c.add(name, IS_RESERVED);
        None
    } else {
        Some(addr)
    }
}
