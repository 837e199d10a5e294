//! The audit entries of each kind of write, shared by both backends so that they record the
//! same fields: a creation lists the fields it set, an update the fields that differ
//! (before and after), a deletion the fields the record had. Secrets (a password hash, a
//! preshared key, a provider list with its client secrets) are only named
//! ([`Change::secret`]); a token's hash never appears at all.

use serde_json::{json, Value};

use uuid::Uuid;

use super::{Actor, ActorKind, Change, Entry, Subject};
use crate::configuration::provider_lists::{OIDC_KEY, SAML_KEY};
use crate::configuration::ROW_PREFIX;
use crate::egress::Rule;
use crate::import::ImportOutcome;
use crate::model::{ApiToken, Device, User};
use crate::store::Belongings;

/// A record's fields that may be shown, by name.
type Fields = Vec<(&'static str, Value)>;

/// The fields set (not null) of a new record.
fn created(fields: Fields) -> Vec<Change> {
    fields
        .into_iter()
        .filter(|(_, value)| !value.is_null())
        .map(|(name, value)| Change::value(name, None, Some(value)))
        .collect()
}

/// The fields whose value differs.
fn updated(before: Fields, after: Fields) -> Vec<Change> {
    before
        .into_iter()
        .zip(after)
        .filter(|((_, old), (_, new))| old != new)
        .map(|((name, old), (_, new))| Change::value(name, Some(old), Some(new)))
        .collect()
}

/// The fields a deleted record had (not null).
fn deleted(fields: Fields) -> Vec<Change> {
    fields
        .into_iter()
        .filter(|(_, value)| !value.is_null())
        .map(|(name, value)| Change::value(name, Some(value), None))
        .collect()
}

/// `Some(entry)` unless it changes nothing: an update that changes nothing is no event.
fn unless_empty(entry: Entry) -> Option<Entry> {
    (!entry.changes.is_empty()).then_some(entry)
}

fn user_fields(user: &User) -> Fields {
    vec![
        ("email", json!(user.email)),
        ("role", json!(user.role.as_str())),
        ("disabled_at", json!(user.disabled_at)),
        ("disabled_by", json!(user.disabled_by.as_ref().map(|by| by.as_str()))),
        ("disabled_by_provider", json!(user.disabled_by.as_ref().and_then(|by| by.provider_id()))),
    ]
}

fn user_subject(user: &User) -> Subject {
    Subject::new("user", user.id)
}

/// `user.created`: its email and role; a password only named.
pub fn user_created(user: &User) -> Entry {
    let mut changes = created(user_fields(user));
    if user.password_hash.is_some() {
        changes.push(Change::secret("password"));
    }
    Entry::new("user.created", user_subject(user), changes)
}

/// `user.updated`: each changed field; a new password only named. `None` when nothing
/// changed.
pub fn user_updated(before: &User, after: &User) -> Option<Entry> {
    let mut changes = updated(user_fields(before), user_fields(after));
    if before.password_hash != after.password_hash {
        changes.push(Change::secret("password"));
    }
    unless_empty(Entry::new("user.updated", user_subject(after), changes))
}

/// `user.deleted`: what the user was, and how much went with it.
pub fn user_deleted(user: &User, belongings: &Belongings) -> Entry {
    let mut changes = deleted(user_fields(user));
    for (name, count) in [
        ("devices", belongings.devices),
        ("tokens", belongings.tokens),
        ("rules", belongings.rules),
        ("sessions", belongings.sessions),
    ] {
        changes.push(Change::value(name, Some(json!(count)), None));
    }
    Entry::new("user.deleted", user_subject(user), changes)
}

fn device_fields(device: &Device) -> Fields {
    let (defaults, custom) = (&device.use_default, &device.custom);
    vec![
        ("user_id", json!(device.user_id)),
        ("name", json!(device.name)),
        ("description", json!(device.description)),
        ("public_key", json!(device.public_key)),
        ("ipv4", json!(device.ipv4)),
        ("ipv6", json!(device.ipv6)),
        ("use_default_allowed_ips", json!(defaults.allowed_ips)),
        ("use_default_dns", json!(defaults.dns)),
        ("use_default_endpoint", json!(defaults.endpoint)),
        ("use_default_mtu", json!(defaults.mtu)),
        ("use_default_persistent_keepalive", json!(defaults.persistent_keepalive)),
        ("allowed_ips", json!(custom.allowed_ips)),
        ("dns", json!(custom.dns)),
        ("endpoint", json!(custom.endpoint)),
        ("mtu", json!(custom.mtu)),
        ("persistent_keepalive", json!(custom.persistent_keepalive)),
    ]
}

fn device_subject(device: &Device) -> Subject {
    Subject::new("device", device.id)
}

/// `device.created`: its fields; the preshared key only named.
pub fn device_created(device: &Device) -> Entry {
    let mut changes = created(device_fields(device));
    if !device.preshared_key.0.is_empty() {
        changes.push(Change::secret("preshared_key"));
    }
    Entry::new("device.created", device_subject(device), changes)
}

/// `device.updated`: each changed field; a new preshared key only named. `None` when
/// nothing changed.
pub fn device_updated(before: &Device, after: &Device) -> Option<Entry> {
    let mut changes = updated(device_fields(before), device_fields(after));
    if before.preshared_key != after.preshared_key {
        changes.push(Change::secret("preshared_key"));
    }
    unless_empty(Entry::new("device.updated", device_subject(after), changes))
}

/// `device.paused` or `device.resumed`: `paused_at` before and after.
pub fn device_paused(before: &Device, after: &Device) -> Entry {
    let action = if after.paused_at.is_some() { "device.paused" } else { "device.resumed" };
    let at = |device: &Device| vec![("paused_at", json!(device.paused_at))];
    Entry::new(action, device_subject(after), updated(at(before), at(after)))
}

/// `device.deleted`: the fields it had.
pub fn device_deleted(device: &Device) -> Entry {
    Entry::new("device.deleted", device_subject(device), deleted(device_fields(device)))
}

fn rule_fields(rule: &Rule) -> Fields {
    vec![
        ("user_id", json!(rule.user_id)),
        ("destination", json!(rule.destination)),
        ("action", json!(rule.action.as_str())),
        ("port_type", json!(rule.ports.as_ref().map(|ports| ports.port_type.as_str()))),
        ("port_range", json!(rule.ports.as_ref().map(|ports| &ports.range))),
    ]
}

/// `rule.created`: its fields.
pub fn rule_created(rule: &Rule) -> Entry {
    Entry::new("rule.created", Subject::new("rule", rule.id), created(rule_fields(rule)))
}

/// `rule.updated`: each changed field; `None` when nothing changed.
pub fn rule_updated(before: &Rule, after: &Rule) -> Option<Entry> {
    unless_empty(Entry::new(
        "rule.updated",
        Subject::new("rule", after.id),
        updated(rule_fields(before), rule_fields(after)),
    ))
}

/// `rule.deleted`: the fields it had.
pub fn rule_deleted(rule: &Rule) -> Entry {
    Entry::new("rule.deleted", Subject::new("rule", rule.id), deleted(rule_fields(rule)))
}

/// `token.created`: its name, owner and expiry; never its hash.
pub fn token_created(token: &ApiToken) -> Entry {
    let fields =
        vec![("user_id", json!(token.user_id)), ("name", json!(token.name)), ("expires_at", json!(token.expires_at))];
    Entry::new("token.created", Subject::new("token", token.id), created(fields))
}

/// `configuration.updated`: each stored configuration key (`configuration.<key>` rows)
/// whose value changed, from `(key, stored before, stored after)`. A provider list (it
/// holds client secrets) or a value that is not JSON is only named. `None` when nothing
/// changed.
pub fn configuration_updated<'a>(
    rows: impl IntoIterator<Item = (&'a str, Option<&'a [u8]>, &'a [u8])>,
) -> Option<Entry> {
    let changes = rows
        .into_iter()
        .filter(|(_, before, after)| *before != Some(*after))
        .filter_map(|(row, before, after)| Some((row.strip_prefix(ROW_PREFIX)?, before, after)))
        .map(|(key, before, after)| {
            let shown = |bytes: &[u8]| serde_json::from_slice::<Value>(bytes).ok();
            match (key == OIDC_KEY || key == SAML_KEY, before.map(shown), shown(after)) {
                (false, None, Some(after)) => Change::value(key, None, Some(after)),
                (false, Some(Some(before)), Some(after)) => Change::value(key, Some(before), Some(after)),
                _ => Change::secret(key),
            }
        })
        .collect();
    unless_empty(Entry::new("configuration.updated", Subject { kind: "configuration".into(), id: None }, changes))
}

/// `token.deleted`: whose it was and its name.
pub fn token_deleted(id: Uuid, user_id: Uuid, name: &str) -> Entry {
    let fields = vec![("user_id", json!(user_id)), ("name", json!(name))];
    Entry::new("token.deleted", Subject::new("token", id), deleted(fields))
}

/// `user.signed_in`: a session began, by `method` (`password` or a provider's id).
pub fn signed_in(user_id: Uuid, session_id: Uuid, method: &str) -> Entry {
    let changes = created(vec![("method", json!(method)), ("session_id", json!(session_id))]);
    Entry::new("user.signed_in", Subject::new("user", user_id), changes)
}

/// A session deleted by `actor`: `user.signed_out` when the session ended itself (or
/// nobody known ended it), `session.revoked` when someone else did.
pub fn session_ended(actor: &Actor, session_id: Uuid, user_id: Uuid) -> Entry {
    let itself = actor.kind == ActorKind::Anonymous
        || (actor.kind == ActorKind::Session && actor.id.as_deref() == Some(session_id.to_string().as_str()));
    if itself {
        let changes = deleted(vec![("session_id", json!(session_id))]);
        Entry::new("user.signed_out", Subject::new("user", user_id), changes)
    } else {
        Entry::new("session.revoked", Subject::new("session", session_id), deleted(vec![("user_id", json!(user_id))]))
    }
}

/// `user.sessions_revoked`: every session of the user ended at once (signing out
/// everywhere), with how many there were.
pub fn sessions_revoked(user_id: Uuid, sessions: u64) -> Entry {
    Entry::new(
        "user.sessions_revoked",
        Subject::new("user", user_id),
        vec![Change::value("sessions", Some(json!(sessions)), None)],
    )
}

/// `import.completed`: how many records of each kind an import wrote, and skipped.
pub fn import_completed(outcome: &ImportOutcome) -> Entry {
    let counts = [
        ("users", outcome.users),
        ("devices", outcome.devices),
        ("tokens", outcome.tokens),
        ("rules", outcome.rules),
        ("oidc_connections", outcome.oidc_connections),
        ("totp", outcome.totp),
        ("skipped", outcome.skipped.len() as u64),
    ];
    let changes = counts.into_iter().map(|(name, n)| Change::value(name, None, Some(json!(n)))).collect();
    Entry::new("import.completed", Subject { kind: "import".into(), id: None }, changes)
}

/// A change of the user's authenticator (`totp.started`, `totp.confirmed`, `totp.deleted`,
/// `totp.recovery_codes_replaced`, `totp.recovery_code_used`); with the number of new
/// recovery codes where some were made. Neither the secret nor a code is ever kept.
pub fn totp(user_id: Uuid, action: &'static str, recovery_codes: Option<usize>) -> Entry {
    let changes = recovery_codes.map(|n| Change::value("recovery_codes", None, Some(json!(n)))).into_iter().collect();
    Entry::new(action, Subject::new("user", user_id), changes)
}

/// `oidc_connection.created`: the user's first sign-in through the provider; the refresh
/// token is only named.
pub fn oidc_connection_created(user_id: Uuid, provider_id: &str) -> Entry {
    let changes = vec![Change::value("provider_id", None, Some(json!(provider_id))), Change::secret("refresh_token")];
    Entry::new("oidc_connection.created", Subject::new("user", user_id), changes)
}

/// `oidc_connection.deleted`: the provider refused the refresh token, which is dropped.
pub fn oidc_connection_deleted(user_id: Uuid, provider_id: &str) -> Entry {
    let changes = vec![Change::value("provider_id", Some(json!(provider_id)), None), Change::secret("refresh_token")];
    Entry::new("oidc_connection.deleted", Subject::new("user", user_id), changes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Role;
    use crate::time::Timestamp;

    fn user() -> User {
        User::new("a@example.com".into(), Role::Unprivileged, Some("$argon2id$hash".into()), Timestamp::from_micros(1))
    }

    #[test]
    fn a_password_is_named_never_shown() {
        let created = user_created(&user());
        assert_eq!(created.changes.last(), Some(&Change::secret("password")));
        let text = serde_json::to_string(&created.changes).unwrap();
        assert!(!text.contains("argon2"), "{text}");
        let mut renamed = user();
        renamed.email = "b@example.com".into();
        let entry = user_updated(&user(), &renamed).unwrap();
        assert_eq!(entry.changes, [Change::value("email", Some(json!("a@example.com")), Some(json!("b@example.com")))]);
        assert_eq!(user_updated(&user(), &user()), None, "nothing changed: no event");
    }

    #[test]
    fn configuration_shows_values_but_names_provider_lists() {
        let rows = [
            ("configuration.default_client_mtu", Some(&b"1280"[..]), &b"1420"[..]),
            ("configuration.local_auth_enabled", Some(&b"true"[..]), &b"true"[..]),
            ("configuration.openid_connect_providers", None, &b"\x01sealed"[..]),
            ("configuration_meta.updated_at", None, &b"5"[..]),
        ];
        let entry = configuration_updated(rows).unwrap();
        assert_eq!(
            entry.changes,
            [
                Change::value("default_client_mtu", Some(json!(1280)), Some(json!(1420))),
                Change::secret("openid_connect_providers"),
            ]
        );
    }
}
