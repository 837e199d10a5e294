//! What the configuration lets an unprivileged user do with its own devices
//! (`allow_unprivileged_device_management`, `allow_unprivileged_device_configuration`;
//! docs/api.md section 8, "Configuration"). Admins may always do everything. The switches
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

/// Whether `actor` may create `device` as validated: without the switch, only with the
/// defaults (assigned addresses, every `use_default_*` on).
pub fn may_configure_new(actor: &Principal, values: &Values, device: &CheckedDevice) -> Result<()> {
    configuring(actor, values, device.is_configured())
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
    fn configuration_off_stops_only_a_change() {
        let off = values(true, false);
        assert!(configuring(&unprivileged(), &off, false).is_ok());
        assert!(matches!(configuring(&unprivileged(), &off, true), Err(DomainError::Disallowed(CONFIGURATION_OFF))));
        assert!(configuring(&unprivileged(), &values(true, true), true).is_ok());
        assert!(configuring(&Principal::operator(), &off, true).is_ok());
    }
}
