//! What a person adding a device needs besides [`Domain::create_device`] itself: whether
//! they may add one at all (to say why not before they fill in a form), and the new
//! device's configuration file, shown once, with the private key when the server made it.

use uuid::Uuid;
use zeroize::Zeroizing;

use super::device_rights as rights;
use super::devices::CreatedDevice;
use super::{Domain, Principal};
use crate::client_config::{self, ConfigKeys, PRIVATE_KEY_PLACEHOLDER};
use crate::error::{DomainError, Result};
use crate::model::User;
use crate::rules::LIMIT_REACHED;

impl Domain {
    /// The user `owner` for whom `actor` may add a device now, or why not: another user's
    /// id is 403 for a non-admin and an unknown one 404; the configuration's device
    /// switches and the device limit are `Disallowed`, with the reason to show. The
    /// create itself checks all this again: this only answers early.
    pub async fn may_add_device_for(&self, actor: &Principal, owner: Uuid) -> Result<User> {
        if !actor.is_admin() && actor.user_id != Some(owner) {
            return Err(DomainError::Forbidden);
        }
        let user = self.store().user_by_id(owner).await?.ok_or(DomainError::NotFound)?;
        rights::may_manage(actor, &self.current_values())?;
        // A user deleted between the two reads has no devices to count: the create says so.
        let count = self.store().user_device_count(owner).await?.unwrap_or(0);
        if count >= u64::from(self.settings().max_devices_per_user) {
            return Err(DomainError::Disallowed(LIMIT_REACHED));
        }
        Ok(user)
    }

    /// The wg-quick configuration of a device just created: with the private key when the
    /// server generated it, else with [`PRIVATE_KEY_PLACEHOLDER`] for the client's own key.
    /// Like the key itself, it is shown once and never logged.
    pub fn first_config(&self, created: &CreatedDevice) -> Result<Zeroizing<String>> {
        let device = &created.device;
        let preshared_key = Zeroizing::new(self.reveal(&device.preshared_key)?);
        let private_key = created.private_key.as_ref().map_or(PRIVATE_KEY_PLACEHOLDER, |k| k.expose());
        let keys =
            ConfigKeys { private_key, preshared_key: &preshared_key, server_public_key: self.server_public_key() };
        Ok(Zeroizing::new(client_config::render(device, &device.effective(&self.client_defaults()), &keys)?))
    }
}
