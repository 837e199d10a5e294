//! What [`Store::import`](ferrozone_domain::Store::import) writes, decided the same way on
//! both backends: each backend looks up which of the batch's keys its database already
//! holds ([`Taken`]), [`plan`] picks the rows to write and the ones to report, and the
//! backend writes them in large statements, all in one transaction.
//!
//! The rules (docs/design/import.md, "Importing from Firezone"): nothing is overwritten; a
//! user whose id or email is taken is skipped with everything that belongs to it; a device
//! whose id, public key or an address is taken is skipped; a token without an expiry date
//! is skipped (Firezone accepted no such token); a rule overlapping a stored one of the same
//! action and scope is skipped; the server key is kept when the database has devices.
//! Collisions *inside* the batch are not skipped: they fail the import, which then writes
//! nothing.

use std::collections::{HashMap, HashSet};

use ferrozone_domain::egress::Rule;
use ferrozone_domain::import::{ImportBatch, ImportMode, ImportOutcome, ImportedToken, ImportedTotp, Skipped};
use ferrozone_domain::model::{email_key, Device, OidcConnection, User};
use ferrozone_domain::service::SERVER_KEY_SETTING;
use ferrozone_domain::DomainError;
use uuid::Uuid;

use crate::columns::{columns, Columns};
use crate::rows::{TokenRow, IMPORTED_TOKEN};

/// The name an imported token is listed under.
pub(crate) const IMPORTED_TOKEN_NAME: &str = "Imported from Firezone";

/// Rows per multi-row `INSERT`: within PostgreSQL's 65,535 parameters for every row type.
pub(crate) const CHUNK: usize = 1000;

/// A unique column an imported row may collide with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Unique {
    UserId,
    Email,
    DeviceId,
    PublicKey,
    Ipv4,
    Ipv6,
    TokenId,
    RuleId,
}

impl Unique {
    pub(crate) const ALL: [Unique; 8] = [
        Unique::UserId,
        Unique::Email,
        Unique::DeviceId,
        Unique::PublicKey,
        Unique::Ipv4,
        Unique::Ipv6,
        Unique::TokenId,
        Unique::RuleId,
    ];

    /// The table and column the key lives in.
    pub(crate) fn column(self) -> (&'static str, &'static str) {
        match self {
            Unique::UserId => ("users", "id"),
            Unique::Email => ("users", "email_key"),
            Unique::DeviceId => ("devices", "id"),
            Unique::PublicKey => ("devices", "public_key"),
            Unique::Ipv4 => ("devices", "ipv4"),
            Unique::Ipv6 => ("devices", "ipv6"),
            Unique::TokenId => ("api_tokens", "id"),
            Unique::RuleId => ("rules", "id"),
        }
    }

    /// Whether the column holds UUIDs (the keys are then their hyphenated text).
    pub(crate) fn is_id(self) -> bool {
        matches!(self, Unique::UserId | Unique::DeviceId | Unique::TokenId | Unique::RuleId)
    }

    /// The batch's values of this key, as text, each once.
    pub(crate) fn wanted(self, batch: &ImportBatch) -> Vec<String> {
        let values: Vec<String> = match self {
            Unique::UserId => batch.users.iter().map(|u| u.id.to_string()).collect(),
            Unique::Email => batch.users.iter().map(|u| email_key(&u.email)).collect(),
            Unique::DeviceId => batch.devices.iter().map(|d| d.id.to_string()).collect(),
            Unique::PublicKey => batch.devices.iter().map(|d| d.public_key.clone()).collect(),
            Unique::Ipv4 => batch.devices.iter().filter_map(|d| d.ipv4.map(|a| a.to_string())).collect(),
            Unique::Ipv6 => batch.devices.iter().filter_map(|d| d.ipv6.map(|a| a.to_string())).collect(),
            Unique::TokenId => batch.tokens.iter().map(|t| t.id.to_string()).collect(),
            Unique::RuleId => batch.rules.iter().map(|r| r.id.to_string()).collect(),
        };
        let mut seen = HashSet::with_capacity(values.len());
        values.into_iter().filter(|v| seen.insert(v.clone())).collect()
    }
}

/// What the database holds that the batch could collide with.
#[derive(Debug, Default)]
pub(crate) struct Taken {
    pub has_users: bool,
    pub has_devices: bool,
    /// Per key, the batch's values found in the database.
    pub found: HashMap<Unique, HashSet<String>>,
    /// Every stored rule (the table is small), for the overlap check.
    pub rules: Vec<Rule>,
}

impl Taken {
    fn has(&self, key: Unique, value: &str) -> bool {
        self.found.get(&key).is_some_and(|values| values.contains(value))
    }
}

/// The rows to write, and the ones left out.
#[derive(Debug, Default)]
pub(crate) struct Plan<'b> {
    pub users: Vec<&'b User>,
    pub devices: Vec<&'b Device>,
    pub tokens: Vec<&'b ImportedToken>,
    pub rules: Vec<&'b Rule>,
    pub oidc_connections: Vec<&'b OidcConnection>,
    pub totp: Vec<&'b ImportedTotp>,
    pub settings: Vec<&'b (String, Vec<u8>)>,
    pub skipped: Vec<Skipped>,
}

impl Plan<'_> {
    /// The outcome once the plan is written.
    pub(crate) fn outcome(self) -> ImportOutcome {
        let count = |n: usize| n as u64;
        ImportOutcome {
            users: count(self.users.len()),
            devices: count(self.devices.len()),
            tokens: count(self.tokens.len()),
            rules: count(self.rules.len()),
            oidc_connections: count(self.oidc_connections.len()),
            totp: count(self.totp.len()),
            skipped: self.skipped,
        }
    }
}

/// The refusal of [`ImportMode::Fresh`] on a database that holds users or devices.
pub(crate) fn refuse_fresh(taken: &Taken, mode: ImportMode) -> Result<(), DomainError> {
    if mode == ImportMode::Fresh && (taken.has_users || taken.has_devices) {
        return Err(DomainError::invalid(
            "database",
            "already holds users or devices; import into an empty database, or merge",
        ));
    }
    Ok(())
}

/// Picks what to write of `batch`, given what the database holds.
pub(crate) fn plan<'b>(batch: &'b ImportBatch, taken: &Taken) -> Plan<'b> {
    let mut plan = Plan::default();
    let mut skipped = Vec::new();

    let mut written_users = HashSet::new();
    for user in &batch.users {
        if taken.has(Unique::UserId, &user.id.to_string()) {
            skipped.push(skip("user", user.email.clone(), "a user with this id exists".into()));
        } else if taken.has(Unique::Email, &email_key(&user.email)) {
            skipped.push(skip("user", user.email.clone(), "a user with this email exists".into()));
        } else {
            written_users.insert(user.id);
            plan.users.push(user);
        }
    }
    let owner_missing = |user_id: Uuid| (!written_users.contains(&user_id)).then(|| owner_reason(user_id));

    for device in &batch.devices {
        let taken_as = |key: Unique, value: Option<String>| value.filter(|v| taken.has(key, v)).map(|_| key);
        let collision = [
            taken_as(Unique::DeviceId, Some(device.id.to_string())),
            taken_as(Unique::PublicKey, Some(device.public_key.clone())),
            taken_as(Unique::Ipv4, device.ipv4.map(|a| a.to_string())),
            taken_as(Unique::Ipv6, device.ipv6.map(|a| a.to_string())),
        ]
        .into_iter()
        .flatten()
        .next();
        let reason = owner_missing(device.user_id).or_else(|| collision.map(device_collision));
        match reason {
            Some(reason) => skipped.push(skip("device", device.id.to_string(), reason)),
            None => plan.devices.push(device),
        }
    }

    for token in &batch.tokens {
        let reason = owner_missing(token.user_id)
            .or_else(|| taken.has(Unique::TokenId, &token.id.to_string()).then(|| "a token with this id exists".into()))
            .or_else(|| token.expires_at.is_none().then(|| "it has no expiry date, which Firezone refused".into()));
        match reason {
            Some(reason) => skipped.push(skip("token", token.id.to_string(), reason)),
            None => plan.tokens.push(token),
        }
    }

    for rule in &batch.rules {
        let reason = rule
            .user_id
            .and_then(owner_missing)
            .or_else(|| taken.has(Unique::RuleId, &rule.id.to_string()).then(|| "a rule with this id exists".into()))
            .or_else(|| {
                let other = taken.rules.iter().find(|other| rule.overlaps(other))?;
                Some(format!("it overlaps rule {} of the same action", other.id))
            });
        match reason {
            Some(reason) => skipped.push(skip("rule", rule.id.to_string(), reason)),
            None => plan.rules.push(rule),
        }
    }

    for connection in &batch.oidc_connections {
        match owner_missing(connection.user_id) {
            Some(reason) => {
                let id = format!("{}/{}", connection.user_id, connection.provider_id);
                skipped.push(skip("oidc_connection", id, reason));
            }
            None => plan.oidc_connections.push(connection),
        }
    }

    for totp in &batch.totp {
        match owner_missing(totp.user_id) {
            Some(reason) => skipped.push(skip("totp", totp.user_id.to_string(), reason)),
            None => plan.totp.push(totp),
        }
    }

    for entry in &batch.settings {
        if entry.0 == SERVER_KEY_SETTING && taken.has_devices {
            let reason = "the database has devices, whose clients use its server key";
            skipped.push(skip("setting", entry.0.clone(), reason.into()));
        } else {
            plan.settings.push(entry);
        }
    }
    plan.skipped = skipped;
    plan
}

fn skip(kind: &'static str, id: String, reason: String) -> Skipped {
    Skipped { kind, id, reason }
}

fn owner_reason(user_id: Uuid) -> String {
    format!("its user {user_id} is not imported")
}

fn device_collision(key: Unique) -> String {
    let what = match key {
        Unique::DeviceId => "id",
        Unique::PublicKey => "public key",
        Unique::Ipv4 => "IPv4 address",
        Unique::Ipv6 => "IPv6 address",
        _ => "key",
    };
    format!("a device with this {what} exists")
}

/// The `api_tokens` row of an imported token (which [`plan`] gave an expiry date).
pub(crate) fn token_row(token: &ImportedToken) -> TokenRow {
    TokenRow {
        id: token.id,
        user_id: token.user_id,
        name: IMPORTED_TOKEN_NAME.to_owned(),
        token_hash: None,
        inserted_at: token.inserted_at.micros(),
        expires_at: token.expires_at.map_or(i64::MAX, |at| at.micros()),
        last_used_at: None,
        origin: IMPORTED_TOKEN.to_owned(),
    }
}

columns! {
    /// A `user_totp` row as an import writes it: confirmed, without recovery codes.
    pub(crate) struct TotpRow in "user_totp" as "x" {
        user_id: Uuid [key],
        sealed_secret: Vec<u8>,
        confirmed_at: Option<i64>,
        last_step: Option<i64>,
        inserted_at: i64,
    }
}

impl From<&ImportedTotp> for TotpRow {
    fn from(totp: &ImportedTotp) -> Self {
        Self {
            user_id: totp.user_id,
            sealed_secret: totp.sealed_secret.0.clone(),
            confirmed_at: Some(totp.confirmed_at.micros()),
            last_step: totp.last_step,
            inserted_at: totp.confirmed_at.micros(),
        }
    }
}

/// `INSERT INTO <table> (<columns>) VALUES (…), (…)` for `rows` rows of `R`, with `$n`
/// placeholders numbered row after row.
pub(crate) fn insert_many<R: Columns>(rows: usize) -> String {
    let table = &R::TABLE;
    let width = table.own_count();
    let names: Vec<&str> = table.own_names().collect();
    let mut sql = format!("INSERT INTO {} ({}) VALUES ", table.name, names.join(", "));
    for row in 0..rows {
        if row > 0 {
            sql.push_str(", ");
        }
        sql.push('(');
        for column in 0..width {
            if column > 0 {
                sql.push_str(", ");
            }
            sql.push('$');
            sql.push_str(&(row * width + column + 1).to_string());
        }
        sql.push(')');
    }
    sql
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rows::UserRow;

    #[test]
    fn a_multi_row_insert_numbers_its_placeholders_row_after_row() {
        let sql = insert_many::<TotpRow>(2);
        assert_eq!(
            sql,
            "INSERT INTO user_totp (user_id, sealed_secret, confirmed_at, last_step, inserted_at) \
             VALUES ($1, $2, $3, $4, $5), ($6, $7, $8, $9, $10)"
        );
        assert!(UserRow::TABLE.names.len() * CHUNK < 65_535);
        assert!(crate::rows::DeviceRow::TABLE.names.len() * CHUNK < 65_535);
    }
}
