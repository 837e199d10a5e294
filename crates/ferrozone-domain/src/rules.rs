//! The business rules that must hold inside one write transaction: the device limit,
//! address assignment, the last-admin rule, a new password ending every session, and egress
//! rules that do not overlap.
//!
//! They are written once, against the write transaction as [`tx::WriteTx`] describes it;
//! `ferrozone-store` implements that trait for its SQLite and PostgreSQL transactions (with
//! its own SQL where the two differ) and calls these functions from its [`crate::Store`]
//! implementations. The `*_in` functions are the transaction bodies (SQLite's writer runs
//! them inside its batch); the others begin a transaction ([`tx::Begin`]), run the body (a
//! bounded number of attempts) and commit it.
//!
//! The messages and field names of the rules (and of the unique values a client can
//! collide with, which the store detects) are defined here; the store reports them as
//! they are.

mod assign;
pub mod devices;
pub mod egress;
pub mod scim;
pub mod tx;
pub mod users;

#[cfg(test)]
mod fake;

pub use devices::{insert_device, update_device};
pub use users::{delete_user, update_user};

use crate::DomainError;

/// `base`: the owner has as many devices as it may have.
pub const LIMIT_REACHED: &str = "Maximum device limit reached. Remove an existing device before creating a new one.";

/// `base`: the update or delete would leave no admin.
pub const LAST_ADMIN: &str = "cannot remove the last admin";

/// `user_id`: the owner of a device does not exist.
pub const DOES_NOT_EXIST: &str = "does not exist";

/// A unique value already used by another row.
pub use crate::validate::TAKEN;

/// `Invalid { user_id: does not exist }`: the owner is missing (also what a violated
/// foreign key means: every foreign key of the schema points at a user).
pub fn missing_owner() -> DomainError {
    DomainError::invalid("user_id", DOES_NOT_EXIST)
}

/// The unique values a client can collide with, each reported on one attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unique {
    /// A user's email, compared as [`crate::model::email_key`].
    Email,
    /// A device's public key.
    PublicKey,
    /// A device's name, among its owner's devices.
    DeviceName,
    /// A device's IPv4 address.
    Ipv4,
    /// A device's IPv6 address.
    Ipv6,
    /// A gateway's name.
    GatewayName,
    /// A group's name, whatever its case.
    GroupName,
}

impl Unique {
    /// The attribute the error is reported on.
    pub const fn field(self) -> &'static str {
        match self {
            Unique::Email => "email",
            Unique::PublicKey => "public_key",
            Unique::DeviceName => "name",
            Unique::Ipv4 => "ipv4",
            Unique::Ipv6 => "ipv6",
            Unique::GatewayName | Unique::GroupName => "name",
        }
    }

    /// `Invalid { <field>: has already been taken }`.
    pub fn taken(self) -> DomainError {
        DomainError::invalid(self.field(), TAKEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taken_values_are_reported_on_their_attribute() {
        let DomainError::Invalid(errors) = Unique::DeviceName.taken() else { panic!("not Invalid") };
        assert_eq!(errors.get("name"), Some(&[TAKEN.to_owned()][..]));
        let DomainError::Invalid(errors) = missing_owner() else { panic!("not Invalid") };
        assert_eq!(errors.get("user_id"), Some(&["does not exist".to_owned()][..]));
    }
}
