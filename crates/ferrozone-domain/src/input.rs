//! What the use cases that create and change users, devices, egress rules and the runtime
//! configuration take.
//!
//! Each attribute of a request is absent, `null` or a value. Where the contract tells absent
//! from `null` (docs/api.md sections 4 and 5: absent keeps the stored value, `null` clears
//! it or is blank) the attribute is a [`Patch`]; where it does not, an `Option`, `None` for
//! both. Text is as the client sent it: trimming, "blank is absent" and every other rule
//! are the validation's, so that every caller (the API, the command line, sign-in through
//! a provider) gets the same ones.
//!
//! A parser of a wire format can meet an attribute of a type it cannot have (a number for
//! a name, `null` for a switch, a role that is none). It leaves that attribute absent and
//! records it in [`WrongTypes`]; validation reports it (`is invalid`, or the attribute's
//! own message) where it checks that attribute, among its other errors.

use std::collections::BTreeMap;

use zeroize::Zeroizing;

use crate::configuration::RequireTotp;
use crate::model::Role;

/// One attribute of a partial change: absent (keep), `null`, or a value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Patch<T> {
    #[default]
    Absent,
    Null,
    Value(T),
}

impl<T> Patch<T> {
    pub fn is_absent(&self) -> bool {
        matches!(self, Patch::Absent)
    }

    /// The value, if one was sent.
    pub fn value(&self) -> Option<&T> {
        match self {
            Patch::Value(v) => Some(v),
            Patch::Absent | Patch::Null => None,
        }
    }

    /// The value, if one was sent: absent and `null` are alike.
    pub fn into_value(self) -> Option<T> {
        match self {
            Patch::Value(v) => Some(v),
            Patch::Absent | Patch::Null => None,
        }
    }
}

impl<T> From<Option<T>> for Patch<T> {
    /// `None` is `null`.
    fn from(value: Option<T>) -> Self {
        value.map_or(Patch::Null, Patch::Value)
    }
}

/// Attributes a request sent with a JSON type they cannot have, by name, each with whether
/// its value counts as present for the `must not be present` rule (anything but a blank
/// string and an empty list). Their fields in the input are absent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WrongTypes(BTreeMap<String, bool>);

impl WrongTypes {
    pub fn insert(&mut self, attribute: &str, present: bool) {
        self.0.insert(attribute.to_owned(), present);
    }

    pub fn has(&self, attribute: &str) -> bool {
        self.0.contains_key(attribute)
    }

    /// Whether `attribute` was sent with a wrong type and a value that counts as present.
    pub fn present(&self, attribute: &str) -> bool {
        self.0.get(attribute).copied().unwrap_or(false)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A user to create. `role` defaults to unprivileged; without `password` the user signs in
/// only through a provider.
#[derive(Debug, Default)]
pub struct NewUser {
    pub email: Option<String>,
    pub role: Option<Role>,
    /// `""` sets no password, like `None`.
    pub password: Option<Zeroizing<String>>,
    pub password_confirmation: Option<Zeroizing<String>>,
    pub wrong_types: WrongTypes,
}

/// A change to a user: absent attributes keep their stored value. Whether the user is
/// disabled is no attribute: [`crate::Domain::set_user_disabled`] changes it.
#[derive(Debug, Default)]
pub struct UserChanges {
    pub email: Patch<String>,
    pub role: Patch<Role>,
    /// `None` and `""` keep the password.
    pub password: Option<Zeroizing<String>>,
    pub password_confirmation: Option<Zeroizing<String>>,
    pub wrong_types: WrongTypes,
}

/// A change of the caller's own password (`POST /v0/me/password`, the account page), each
/// attribute as sent.
#[derive(Debug, Default)]
pub struct PasswordChange {
    pub current_password: Option<Zeroizing<String>>,
    pub password: Option<Zeroizing<String>>,
    pub password_confirmation: Option<Zeroizing<String>>,
    pub wrong_types: WrongTypes,
}

/// A device to create. Omitted, the owner is the caller (for an unprivileged one), the name,
/// the key pair and the preshared key are generated, and the addresses are assigned.
#[derive(Debug, Default)]
pub struct NewDevice {
    /// The owner's id, as sent.
    pub user_id: Option<String>,
    pub name: Option<String>,
    pub description: Option<String>,
    pub public_key: Option<String>,
    pub preshared_key: Option<String>,
    pub ipv4: Option<String>,
    pub ipv6: Option<String>,
    pub tunnel: TunnelSettings,
    pub wrong_types: WrongTypes,
}

/// A change to a device: absent attributes keep their stored value.
#[derive(Debug, Default)]
pub struct DeviceChanges {
    /// The owner cannot change: only the stored owner's id may be sent.
    pub user_id: Option<String>,
    pub name: Patch<String>,
    pub description: Patch<String>,
    pub public_key: Patch<String>,
    /// `None` (and blank) keeps the preshared key.
    pub preshared_key: Option<String>,
    /// `None` (and blank) keeps the address.
    pub ipv4: Option<String>,
    pub ipv6: Option<String>,
    pub tunnel: TunnelSettings,
    pub wrong_types: WrongTypes,
}

/// An egress rule to create, each attribute as sent. Omitted, `action` is `drop` and the
/// rule applies to every user.
#[derive(Debug, Default)]
pub struct NewRule {
    pub destination: Option<String>,
    pub action: Option<String>,
    pub port_type: Option<String>,
    pub port_range: Option<String>,
    /// The user's id, as sent.
    pub user_id: Option<String>,
    /// The group's id, as sent (Ferrozone's own).
    pub group_id: Option<String>,
    pub wrong_types: WrongTypes,
}

/// A personal API token to create (`POST /v0/tokens`), each attribute as sent.
#[derive(Debug, Default)]
pub struct NewToken {
    pub name: Option<String>,
    /// Lifetime in days; absent: the configured default.
    pub expires_in_days: Option<i64>,
    pub wrong_types: WrongTypes,
}

/// A change to an egress rule: absent attributes keep their stored value, `null` (and
/// `""`) clears them.
#[derive(Debug, Clone, Default)]
pub struct RuleChanges {
    pub destination: Patch<String>,
    pub action: Patch<String>,
    pub port_type: Patch<String>,
    pub port_range: Patch<String>,
    pub user_id: Patch<String>,
    pub group_id: Patch<String>,
    pub wrong_types: WrongTypes,
}

/// The tunnel settings a device may have of its own, each with its `use_default_*` switch.
/// Absent keeps the stored value (the default on create); `null` clears it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TunnelSettings {
    pub use_default_allowed_ips: Option<bool>,
    pub use_default_dns: Option<bool>,
    pub use_default_endpoint: Option<bool>,
    pub use_default_mtu: Option<bool>,
    pub use_default_persistent_keepalive: Option<bool>,
    pub allowed_ips: Patch<Vec<String>>,
    pub dns: Patch<Vec<String>>,
    pub endpoint: Patch<String>,
    pub mtu: Patch<i64>,
    pub persistent_keepalive: Patch<i64>,
}

/// A change to the runtime configuration (`PATCH /v0/configuration`): absent keys keep their
/// value, `null` clears the two nullable ones and is blank for the others.
#[derive(Debug, Clone, Default)]
pub struct ConfigurationChanges {
    pub local_auth_enabled: Patch<bool>,
    pub allow_unprivileged_device_management: Patch<bool>,
    pub allow_unprivileged_device_configuration: Patch<bool>,
    pub disable_vpn_on_oidc_error: Patch<bool>,
    pub vpn_session_duration: Patch<i64>,
    pub default_client_persistent_keepalive: Patch<i64>,
    pub default_client_mtu: Patch<i64>,
    pub default_client_endpoint: Patch<String>,
    pub default_client_dns: Patch<Vec<String>>,
    pub default_client_allowed_ips: Patch<Vec<String>>,
    pub require_totp: Patch<RequireTotp>,
    pub egress_default_action: Patch<crate::egress::RuleAction>,
    /// Each replaces its whole list; the providers are checked as at start-up.
    pub openid_connect_providers: Patch<Vec<serde_json::Value>>,
    pub saml_identity_providers: Patch<Vec<serde_json::Value>>,
    pub wrong_types: WrongTypes,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_tells_absent_from_null_and_both_from_a_value() {
        let (absent, null, value) = (Patch::<u8>::Absent, Patch::<u8>::Null, Patch::Value(7));
        assert!(absent.is_absent() && !null.is_absent() && !value.is_absent());
        assert_eq!((absent.value(), null.value(), value.value()), (None, None, Some(&7)));
        assert_eq!((null.into_value(), value.into_value()), (None, Some(7)));
        assert_eq!((Patch::from(None::<u8>), Patch::from(Some(7))), (Patch::Null, Patch::Value(7)));
        assert_eq!(Patch::<u8>::default(), Patch::Absent);
    }

    #[test]
    fn wrong_types_keep_whether_the_value_was_present() {
        let mut wrong = WrongTypes::default();
        assert!(wrong.is_empty());
        wrong.insert("mtu", true);
        wrong.insert("dns", false);
        assert!(wrong.has("mtu") && wrong.has("dns") && !wrong.has("name"));
        assert!(wrong.present("mtu") && !wrong.present("dns") && !wrong.present("name"));
    }
}
