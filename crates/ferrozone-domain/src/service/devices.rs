//! Devices: list, show, create, update, delete (docs/api.md section 5).

use uuid::Uuid;
use zeroize::Zeroizing;

use super::device_rights as rights;
use super::{Domain, Principal};
use crate::client_config::{self, ConfigKeys, PRIVATE_KEY_PLACEHOLDER};
use crate::crypto::PrivateKey;
use crate::error::{DomainError, Result};
use crate::input::{DeviceChanges, NewDevice};
use crate::model::Device;
use crate::names;
use crate::store::{DeviceBatches, DeviceQuery};
use crate::time::Timestamp;
use crate::validate::device as rules;
use crate::validate::TAKEN;

/// A new device, with the private key the server generated for it, if it did.
#[derive(Debug)]
pub struct CreatedDevice {
    pub device: Device,
    /// Shown once in the create response; never stored or logged.
    pub private_key: Option<PrivateKey>,
}

/// How often a generated name is drawn again when it clashes with one the owner has.
const NAME_ATTEMPTS: usize = 8;

impl Domain {
    /// Admins see every device (optionally one user's); others see only their own.
    pub async fn list_devices(&self, actor: &Principal, query: DeviceQuery) -> Result<Vec<Device>> {
        match visible(actor, query) {
            Some(query) => self.store().list_devices(&query).await,
            None => Ok(Vec::new()),
        }
    }

    /// [`Self::list_devices`], streamed from the store in batches.
    pub async fn stream_devices(&self, actor: &Principal, query: DeviceQuery) -> Result<DeviceBatches> {
        match visible(actor, query) {
            Some(query) => self.store().stream_devices(&query).await,
            // The sender is dropped at once: a stream that ends empty.
            None => Ok(tokio::sync::mpsc::channel(1).1),
        }
    }

    /// How many devices `actor`'s own user has, of the limit, and whether it may add one
    /// (for a page offering to: creating checks again). Counted in the store.
    pub async fn device_allowance(&self, actor: &Principal) -> Result<rights::Allowance> {
        let user_id = actor.user_id.ok_or(DomainError::Forbidden)?;
        // A user deleted meanwhile has no devices.
        let used = self.store().user_device_count(user_id).await?.unwrap_or(0);
        Ok(rights::Allowance::of(actor, &self.current_values(), used, self.settings().max_devices_per_user))
    }

    /// Another user's device is "not found" for a non-admin.
    pub async fn get_device(&self, actor: &Principal, id: Uuid) -> Result<Device> {
        visible_device(actor, self.store().device_by_id(id).await?)
    }

    /// Creates a device. Without a public key in `input` the key pair is generated here,
    /// and its private key is in the result, the only place it ever appears. An
    /// unprivileged actor needs the configuration's device switches ([`rights`]).
    pub async fn create_device(&self, actor: &Principal, input: &NewDevice) -> Result<CreatedDevice> {
        let default_owner = if actor.is_admin() { None } else { Some(own_device_owner(actor, input)?) };
        let switches = self.current_values();
        rights::may_manage(actor, &switches)?;
        let checked = rules::check_create(input, self.settings(), self.server_public_key(), default_owner)?;
        if !actor.is_admin() && Some(checked.owner()) != actor.user_id {
            return Err(DomainError::Forbidden);
        }
        rights::may_configure_new(actor, &switches, &checked)?;
        let mut input = rules::complete(checked, self.cipher());
        let max = self.settings().max_devices_per_user;
        let mut attempt = 0;
        loop {
            match self.store().insert_device(&input.device, &self.settings().pools, max).await {
                Ok(device) => {
                    self.peers_changed();
                    let generated_key = input.private_key.is_some();
                    tracing::info!(device.id = %device.id, user.id = %device.user_id, generated_key, "device created");
                    return Ok(CreatedDevice { device, private_key: input.private_key });
                }
                Err(DomainError::Invalid(e)) if !input.name_given && only_name_taken(&e) && attempt < NAME_ATTEMPTS => {
                    attempt += 1;
                    input.device.name = if attempt < NAME_ATTEMPTS / 2 {
                        names::generate()
                    } else {
                        format!("{}-{:04x}", names::generate(), rand::random::<u16>())
                    };
                    input.device.now = Timestamp::now();
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The device's wg-quick configuration, with the same visibility as [`Self::get_device`].
    /// The private key is a placeholder: the server never has it.
    pub async fn device_config(&self, actor: &Principal, id: Uuid) -> Result<String> {
        let device = self.get_device(actor, id).await?;
        let preshared_key = Zeroizing::new(self.reveal(&device.preshared_key)?);
        let keys = ConfigKeys {
            private_key: PRIVATE_KEY_PLACEHOLDER,
            preshared_key: &preshared_key,
            server_public_key: self.server_public_key(),
        };
        client_config::render(&device, &device.effective(&self.client_defaults()), &keys)
    }

    pub async fn update_device(&self, actor: &Principal, id: Uuid, changes: &DeviceChanges) -> Result<Device> {
        let stored = self.get_device(actor, id).await?;
        let switches = self.current_values();
        rights::may_manage(actor, &switches)?;
        let checked = rules::check_update(changes, &stored, self.settings(), self.server_public_key())?;
        let update = rules::complete_update(checked, &stored, self.cipher());
        rights::may_configure(actor, &switches, &stored, &update)?;
        let device = self.store().update_device(id, &update, Timestamp::now()).await?;
        self.peers_changed();
        Ok(device)
    }

    /// Pauses (`paused`) or resumes a device: its owner or an admin, whatever the
    /// unprivileged switches say (docs/design/devices.md, "Paused devices"). The data
    /// plane hears of it at once, as of a delete.
    pub async fn set_device_paused(&self, actor: &Principal, id: Uuid, paused: bool) -> Result<Device> {
        self.get_device(actor, id).await?;
        let device =
            self.store().set_device_paused(id, paused, Timestamp::now()).await?.ok_or(DomainError::NotFound)?;
        self.peers_changed();
        tracing::info!(device.id = %id, paused, "device paused or resumed");
        Ok(device)
    }

    pub async fn delete_device(&self, actor: &Principal, id: Uuid) -> Result<()> {
        self.get_device(actor, id).await?;
        rights::may_manage(actor, &self.current_values())?;
        if self.store().delete_device(id).await? {
            self.peers_changed();
            tracing::info!(device.id = %id, "device deleted");
            Ok(())
        } else {
            Err(DomainError::NotFound)
        }
    }
}

/// The owner of a device an unprivileged `actor` creates: itself. Authorization comes before
/// validation, so a `user_id` that is present and not the actor's own id (another user's,
/// an unknown one, not an id at all) is 403 whatever else the request holds.
fn own_device_owner(actor: &Principal, input: &NewDevice) -> Result<Uuid> {
    let own = actor.user_id.ok_or(DomainError::Forbidden)?;
    if input.wrong_types.has("user_id") {
        return Err(DomainError::Forbidden);
    }
    match input.user_id.as_deref().map(str::trim) {
        None => Ok(own),
        Some(id) if id.is_empty() || Uuid::parse_str(id).ok() == Some(own) => Ok(own),
        Some(_) => Err(DomainError::Forbidden),
    }
}

fn only_name_taken(errors: &crate::error::Errors) -> bool {
    errors.len() == 1 && errors.get("name") == Some(&[TAKEN.to_owned()][..])
}

/// `query` narrowed to what `actor` may see; `None` when that is nothing.
fn visible(actor: &Principal, mut query: DeviceQuery) -> Option<DeviceQuery> {
    if !actor.is_admin() {
        match (query.user_id, actor.user_id) {
            (Some(asked), Some(own)) if asked != own => return None,
            (_, own) => query.user_id = own,
        }
    }
    Some(query)
}

/// `device` if `actor` may see it: admins see every device, others their own. Another
/// user's device is "not found", like a missing one.
pub(crate) fn visible_device(actor: &Principal, device: Option<Device>) -> Result<Device> {
    match device {
        Some(device) if actor.is_admin() || actor.user_id == Some(device.user_id) => Ok(device),
        _ => Err(DomainError::NotFound),
    }
}
