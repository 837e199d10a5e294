//! What the configuration lets an unprivileged user do with its own devices
//! (`allow_unprivileged_device_management`, `allow_unprivileged_device_configuration`;
//! docs/design/configuration.md, "Configuration"). Admins may always do everything. The switches
//! are read per use ([`super::Domain::current_values`]).

use super::Principal;
use crate::configuration::Values;
use crate::error::{DomainError, Result};
use crate::model::{Device, DeviceUpdate};
use crate::validate::device::CheckedDevice;

/// Why an unprivileged user may not create, change or delete a device.
pub const MANAGEMENT_OFF: &str = "Unprivileged users may not create, change or delete devices on this server \
     (allow_unprivileged_device_management is off); ask an admin.";

/// Why an unprivileged user may not configure a device.
pub const CONFIGURATION_OFF: &str = "Unprivileged users may not configure devices on this server \
     (allow_unprivileged_device_configuration is off): leave out ipv4, ipv6, allowed_ips, dns, endpoint, mtu \
     and persistent_keepalive, and leave every use_default_* true, or ask an admin.";

/// Whether `actor` may write (create, change, delete) its devices.
pub fn may_manage(actor: &Principal, values: &Values) -> Result<()> {
    if actor.is_admin() || values.allow_unprivileged_device_management {
        Ok(())
    } else {
        Err(DomainError::Disallowed(MANAGEMENT_OFF))
    }
}

/// Why a user may not add a device: it has as many as the server allows
/// (`max_devices_per_user`).
pub const LIMIT_REACHED: &str = crate::rules::LIMIT_REACHED;

/// How many devices a user has of how many it may have, and whether it may add one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowance {
    pub used: u64,
    pub limit: u32,
    /// `Err` says why not, in words for the user: the configuration's switch or the limit.
    pub may_add: std::result::Result<(), &'static str>,
}

impl Allowance {
    /// What `actor`, owning `used` devices of `limit`, may do under `values`. Only a
    /// prediction for pages: creating a device checks both rules again, atomically.
    pub fn of(actor: &Principal, values: &Values, used: u64, limit: u32) -> Self {
        let may_add = match may_manage(actor, values) {
            Err(_) => Err(MANAGEMENT_OFF),
            Ok(()) if used >= u64::from(limit) => Err(LIMIT_REACHED),
            Ok(()) => Ok(()),
        };
        Self { used, limit, may_add }
    }
}

/// Whether `actor` may create `device` as validated: without the switch, only with the
/// defaults (assigned addresses, every `use_default_*` on).
pub fn may_configure_new(actor: &Principal, values: &Values, device: &CheckedDevice) -> Result<()> {
    configuring(actor, values, device.is_configured())
}

/// Whether `actor` may change the addresses and tunnel settings of its devices at all:
/// manage them, and configure them.
pub fn may_configure_devices(actor: &Principal, values: &Values) -> Result<()> {
    may_manage(actor, values)?;
    configuring(actor, values, true)
}

/// Whether `actor` may make `update` of `stored`: without the switch, only if it leaves the
/// addresses and the tunnel settings as they are.
pub fn may_configure(actor: &Principal, values: &Values, stored: &Device, update: &DeviceUpdate) -> Result<()> {
    let changes = update.ipv4 != stored.ipv4
        || update.ipv6 != stored.ipv6
        || update.use_default != stored.use_default
        || update.custom != stored.custom;
    configuring(actor, values, changes)
}

fn configuring(actor: &Principal, values: &Values, configures: bool) -> Result<()> {
    if configures && !actor.is_admin() && !values.allow_unprivileged_device_configuration {
        Err(DomainError::Disallowed(CONFIGURATION_OFF))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Role;
    use crate::settings::Settings;

    fn values(management: bool, configuration: bool) -> Values {
        Values {
            allow_unprivileged_device_management: management,
            allow_unprivileged_device_configuration: configuration,
            ..Settings::standard().configuration
        }
    }

    fn unprivileged() -> Principal {
        Principal { user_id: Some(uuid::Uuid::nil()), role: Role::Unprivileged, token_id: None }
    }

    #[test]
    fn management_off_stops_unprivileged_users_only() {
        assert!(may_manage(&unprivileged(), &values(true, false)).is_ok());
        assert!(matches!(
            may_manage(&unprivileged(), &values(false, true)),
            Err(DomainError::Disallowed(MANAGEMENT_OFF))
        ));
        assert!(may_manage(&Principal::operator(), &values(false, false)).is_ok());
    }

    #[test]
    fn an_allowance_names_the_switch_before_the_limit() {
        let on = values(true, true);
        assert_eq!(Allowance::of(&unprivileged(), &on, 9, 10).may_add, Ok(()));
        assert_eq!(Allowance::of(&unprivileged(), &on, 10, 10).may_add, Err(LIMIT_REACHED));
        assert_eq!(Allowance::of(&unprivileged(), &values(false, true), 10, 10).may_add, Err(MANAGEMENT_OFF));
        assert_eq!(Allowance::of(&Principal::operator(), &values(false, false), 3, 10).may_add, Ok(()));
        assert_eq!(Allowance::of(&Principal::operator(), &on, 10, 10).may_add, Err(LIMIT_REACHED));
    }

    #[test]
    fn configuration_off_stops_only_a_change() {
        let off = values(true, false);
        assert!(configuring(&unprivileged(), &off, false).is_ok());
        assert!(matches!(configuring(&unprivileged(), &off, true), Err(DomainError::Disallowed(CONFIGURATION_OFF))));
        assert!(configuring(&unprivileged(), &values(true, true), true).is_ok());
        assert!(configuring(&Principal::operator(), &off, true).is_ok());
    }
}
