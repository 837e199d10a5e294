//! The multi-statement use cases, written once against [`crate::tx::WriteTx`]. The `*_in`
//! functions are the transaction bodies (SQLite's writer runs them inside its batch); the
//! others begin a transaction, run the body (a bounded number of attempts) and commit it.

mod assign;
pub(crate) mod devices;
pub(crate) mod users;

pub(crate) use devices::{insert_device, update_device};
pub(crate) use users::{delete_user, update_user};
