//! What both backends' error mappings share (`postgres/errors.rs`, `sqlite/errors.rs`): the
//! unique constraints a client can violate, and the attribute each is reported on.

/// The domain's message of every uniqueness error, and the values it can be about.
pub(crate) use ferrozone_domain::rules::{Unique, TAKEN};

/// Unique constraints a client can violate: PostgreSQL constraint name, the columns SQLite
/// names in `UNIQUE constraint failed: …`, and the attribute the error is reported on.
const UNIQUE_FIELDS: &[(&str, &str, &str)] = &[
    ("users_email_key_unique", "users.email_key", Unique::Email.field()),
    ("devices_public_key_unique", "devices.public_key", Unique::PublicKey.field()),
    ("devices_user_id_name_unique", "devices.user_id, devices.name", Unique::DeviceName.field()),
    ("devices_ipv4_unique", "devices.ipv4", Unique::Ipv4.field()),
    ("devices_ipv6_unique", "devices.ipv6", Unique::Ipv6.field()),
    ("gateways_name_unique", "gateways.name", Unique::GatewayName.field()),
    ("groups_name_key_unique", "groups.name_key", Unique::GroupName.field()),
    ("scim_users_user_name_key_unique", "scim_users.user_name_key", "userName"),
];

/// The attribute of a unique violation PostgreSQL reports on `constraint`.
pub(crate) fn constraint_attribute(constraint: &str) -> Option<&'static str> {
    UNIQUE_FIELDS.iter().find(|(name, _, _)| *name == constraint).map(|(_, _, field)| *field)
}

/// The attribute of a unique violation SQLite reports on `columns` (`devices.ipv4`).
pub(crate) fn unique_attribute(columns: &str) -> Option<&'static str> {
    UNIQUE_FIELDS.iter().find(|(_, cols, _)| *cols == columns).map(|(_, _, field)| *field)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unique_field_is_a_client_attribute() {
        for (_, _, field) in UNIQUE_FIELDS {
            assert!(["email", "public_key", "name", "ipv4", "ipv6", "userName"].contains(field));
        }
    }
}
