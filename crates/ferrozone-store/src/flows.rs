//! The multi-statement use cases, written once against [`crate::tx::WriteTx`]: each
//! function runs one transaction (or a bounded number of attempts) and commits it.

mod assign;
mod devices;
mod users;

pub(crate) use devices::{insert_device, update_device};
pub(crate) use users::{delete_user, update_user};
