//! SQL text shared by both backends. Placeholders are `$n` (the SQLite backend binds them
//! by number as `?n`).
//!
//! Column lists come from the row declarations of [`crate::rows`] through [`sql!`]
//! ([`text`]); statements that differ (row locks) live in each backend's module and are
//! built the same way.

pub(crate) mod audit;
pub(crate) mod gateways;
pub(crate) mod groups;
pub(crate) mod links;
pub(crate) mod scim;
pub(crate) mod stats;
pub(crate) mod text;
pub(crate) mod totp;
pub(crate) mod webhooks;

use ferrozone_domain::store::{DeviceQuery, Presence};

use crate::rows::{
    ActivePeerRow, DeviceRow, OidcConnectionRow, RuleMembershipRow, RuleRow, RuleSourceRow, SessionRow, SignInFlowRow,
    TokenRow, UserRow,
};
pub(crate) use text::sql;

pub(crate) const PING: &str = "SELECT 1";

pub(crate) const SETTING: &str = "SELECT value FROM settings WHERE key = $1";
pub(crate) const INIT_SETTING: &str = "INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING";
pub(crate) const PUT_SETTING: &str =
    "INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value";

pub(crate) const LIST_USERS: &str = sql![(select UserRow), " ORDER BY inserted_at, id"];
pub(crate) const USER_BY_ID: &str = sql![(select UserRow), " WHERE id = $1"];
pub(crate) const USER_BY_EMAIL: &str = sql![(select UserRow), " WHERE email_key = $1"];
pub(crate) const COUNT_ADMINS: &str = "SELECT COUNT(*) FROM users WHERE role = 'admin'";
/// Admin ids in id order: the order in which every transaction locks them.
pub(crate) const ADMIN_IDS: &str = "SELECT id FROM users WHERE role = 'admin' ORDER BY id";
pub(crate) const INSERT_USER: &str = sql![(insert UserRow)];
pub(crate) const UPDATE_USER: &str = sql![(update UserRow)];
pub(crate) const DELETE_USER: &str = "DELETE FROM users WHERE id = $1";

pub(crate) const INSERT_TOKEN: &str = sql![(insert TokenRow)];
pub(crate) const TOKEN_WITH_USER: &str = sql![
    "SELECT ",
    (aliased TokenRow),
    ", ",
    (aliased UserRow),
    " FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE t.token_hash = $1"
];
/// [`TOKEN_WITH_USER`] by the token's id.
pub(crate) const TOKEN_WITH_USER_BY_ID: &str = sql![
    "SELECT ",
    (aliased TokenRow),
    ", ",
    (aliased UserRow),
    " FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE t.id = $1"
];
/// [`TOKEN_WITH_USER`] with the device `$2` left-joined. One statement is one snapshot: the
/// token and the device are read as of the same moment.
pub(crate) const TOKEN_AND_DEVICE: &str = sql![
    "SELECT ",
    (aliased TokenRow),
    ", ",
    (aliased UserRow),
    ", ",
    (aliased DeviceRow),
    " FROM api_tokens t JOIN users u ON u.id = t.user_id LEFT JOIN devices d ON d.id = $2",
    (join DeviceRow),
    " WHERE t.token_hash = $1"
];
pub(crate) const LIST_TOKENS: &str = sql![(select TokenRow), " WHERE user_id = $1 ORDER BY inserted_at, id"];
/// At most once a minute (the domain's `TOUCH_INTERVAL_SECS`), whichever process asks.
pub(crate) const TOUCH_TOKEN: &str =
    "UPDATE api_tokens SET last_used_at = $2 WHERE id = $1 AND (last_used_at IS NULL OR last_used_at <= $2 - 60000000)";
/// Every user's tokens with their owner after the position `($1, $2)`, at most `$3`: a
/// page of the admin console's token list (index `api_tokens_inserted_at_id`).
pub(crate) const LIST_ALL_TOKENS: &str = sql![
    "SELECT ",
    (aliased TokenRow),
    ", ",
    (aliased UserRow),
    " FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE (t.inserted_at, t.id) > ($1, $2) \
     ORDER BY t.inserted_at, t.id LIMIT $3"
];
/// Returns what the audit event of the delete names: the owner and the name.
pub(crate) const DELETE_TOKEN: &str = "DELETE FROM api_tokens WHERE id = $1 RETURNING user_id, name";

/// Signing in is not an edit: `updated_at` stays.
pub(crate) const RECORD_SIGN_IN: &str =
    "UPDATE users SET last_signed_in_at = $2, last_signed_in_method = $3 WHERE id = $1";

pub(crate) const INSERT_SESSION: &str = sql![(insert SessionRow)];
pub(crate) const SESSION_WITH_USER: &str = sql![
    "SELECT ",
    (aliased SessionRow),
    ", ",
    (aliased UserRow),
    " FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.secret_hash = $1"
];
/// Returns the session's user, whom the audit event names.
pub(crate) const DELETE_SESSION: &str = "DELETE FROM sessions WHERE id = $1 RETURNING user_id";
pub(crate) const DELETE_USER_SESSIONS: &str = "DELETE FROM sessions WHERE user_id = $1";
pub(crate) const DELETE_OTHER_USER_SESSIONS: &str = "DELETE FROM sessions WHERE user_id = $1 AND id <> $2";
pub(crate) const DELETE_EXPIRED_SESSIONS: &str = "DELETE FROM sessions WHERE expires_at <= $1";

pub(crate) const UPSERT_OIDC_CONNECTION: &str = sql![
    (insert OidcConnectionRow),
    " ON CONFLICT (user_id, provider_id) DO UPDATE SET ",
    (excluded OidcConnectionRow)
];
/// Whether the user has a connection to the provider (an upsert that creates one is an event).
pub(crate) const OIDC_CONNECTION_EXISTS: &str =
    "SELECT 1 FROM oidc_connections WHERE user_id = $1 AND provider_id = $2";
pub(crate) const LIST_OIDC_CONNECTIONS: &str = sql![(select OidcConnectionRow)];
/// A compare-and-set on `refreshed_at`: of processes claiming the same connection, one wins.
pub(crate) const CLAIM_OIDC_CONNECTION: &str = "UPDATE oidc_connections SET refreshed_at = $4 \
     WHERE user_id = $1 AND provider_id = $2 AND refreshed_at = $3";
/// Only while the connection is still the one claimed at `$5` (a sign-in may have replaced it).
pub(crate) const ROTATE_OIDC_REFRESH_TOKEN: &str = "UPDATE oidc_connections SET refresh_token = $3, \
     updated_at = $4 WHERE user_id = $1 AND provider_id = $2 AND refreshed_at = $5";
/// Only while the connection is still the one claimed at `$3` (a sign-in may have replaced it).
pub(crate) const DELETE_OIDC_CONNECTION: &str =
    "DELETE FROM oidc_connections WHERE user_id = $1 AND provider_id = $2 AND refreshed_at = $3";
pub(crate) const INSERT_SIGN_IN_FLOW: &str = sql![(insert SignInFlowRow)];
pub(crate) const DELETE_EXPIRED_SIGN_IN_FLOWS: &str = "DELETE FROM sign_in_flows WHERE expires_at <= $1";
/// Deletes the flow and returns it: a `state` works once, even with two processes racing.
pub(crate) const TAKE_SIGN_IN_FLOW: &str =
    sql!["DELETE FROM sign_in_flows WHERE state_hash = $1 RETURNING ", (columns SignInFlowRow)];

/// The active devices, the peers the data plane puts on the interface: those not paused, of
/// users who are not disabled and whose VPN session has not expired, `$1` being the cutoff of
/// [`ferrozone_domain::vpn_session::VpnSession::cutoff`] (microseconds; NULL when sessions
/// never expire). A user who never signed in stays active.
pub(crate) const ACTIVE_PEERS: &str = sql![
    "SELECT ",
    (aliased ActivePeerRow),
    " FROM devices d JOIN users u ON u.id = d.user_id WHERE u.disabled_at IS NULL AND d.paused_at IS NULL \
     AND ($1 IS NULL OR u.last_signed_in_at IS NULL OR u.last_signed_in_at > $1)"
];

/// `SELECT <device columns> FROM devices d LEFT JOIN device_stats s …`: the start of every
/// device read. Its conditions name columns that only one of the two tables has.
pub(crate) const SELECT_DEVICES: &str = sql![(select DeviceRow)];
pub(crate) const DEVICE_BY_ID: &str = sql![(select DeviceRow), " WHERE id = $1"];
/// The owner's device count, kept by the `devices_count*` triggers.
pub(crate) const COUNT_USER_DEVICES: &str = "SELECT device_count FROM users WHERE id = $1";
pub(crate) const INSERT_DEVICE: &str = sql![(insert DeviceRow)];
pub(crate) const UPDATE_DEVICE: &str = sql![(update DeviceRow)];
/// Returns the device as it was, for the audit event.
pub(crate) const DELETE_DEVICE: &str = sql!["DELETE FROM devices WHERE id = $1 RETURNING ", (columns DeviceRow)];

pub(crate) const LIST_RULES: &str = sql![(select RuleRow)];
/// The rules of one action (`$1`) and scope: a user's (`$2`), a group's (`$3`), or, both
/// NULL, the global ones.
pub(crate) const SCOPED_RULES: &str = sql![
    (select RuleRow),
    " WHERE action = $1 AND (user_id = $2 OR (user_id IS NULL AND $2 IS NULL)) \
     AND (group_id = $3 OR (group_id IS NULL AND $3 IS NULL))"
];
pub(crate) const RULE_BY_ID: &str = sql![(select RuleRow), " WHERE id = $1"];
pub(crate) const INSERT_RULE: &str = sql![(insert RuleRow)];
pub(crate) const UPDATE_RULE: &str = sql![(update RuleRow)];
/// Returns the rule as it was, for the audit event.
pub(crate) const DELETE_RULE: &str = sql!["DELETE FROM rules WHERE id = $1 RETURNING ", (columns RuleRow)];
/// The addresses of the active devices (as [`ACTIVE_PEERS`], `$1` the same cutoff) of every
/// user a rule names or who is a member of a group a rule names:
/// with [`LIST_RULES`] and [`RULE_MEMBERSHIPS`], in one read transaction, what the data
/// plane enforces.
pub(crate) const RULE_SOURCES: &str = sql![
    "SELECT ",
    (aliased RuleSourceRow),
    " FROM devices d JOIN users u ON u.id = d.user_id WHERE u.disabled_at IS NULL AND d.paused_at IS NULL \
     AND ($1 IS NULL OR u.last_signed_in_at IS NULL OR u.last_signed_in_at > $1) \
     AND (d.user_id IN (SELECT user_id FROM rules WHERE user_id IS NOT NULL) \
     OR d.user_id IN (SELECT m.user_id FROM group_members m JOIN rules r ON r.group_id = m.group_id))"
];
/// The `user_id` and `group_id` of [`SCOPED_RULES`] for `scope`.
pub(crate) fn scope_ids(scope: ferrozone_domain::egress::RuleScope) -> (Option<uuid::Uuid>, Option<uuid::Uuid>) {
    use ferrozone_domain::egress::RuleScope;
    match scope {
        RuleScope::User(id) => (Some(id), None),
        RuleScope::Group(id) => (None, Some(id)),
        RuleScope::Everyone => (None, None),
    }
}

/// The memberships of the groups that rules name.
pub(crate) const RULE_MEMBERSHIPS: &str = sql![
    "SELECT ",
    (aliased RuleMembershipRow),
    " FROM group_members m WHERE m.group_id IN (SELECT group_id FROM rules WHERE group_id IS NOT NULL)"
];

pub(crate) const ENSURE_POOL: &str =
    "INSERT INTO ip_pools (network, next_offset) VALUES ($1, $2) ON CONFLICT (network) DO NOTHING";
/// Moves a pool's cursor one step unless it reached `$2`; returns the offset it was at.
pub(crate) const CLAIM_OFFSET: &str = "UPDATE ip_pools SET next_offset = next_offset + 1 \
     WHERE network = $1 AND next_offset < $2 RETURNING next_offset - 1";
/// Takes the first released address of a family out of the list.
pub(crate) const POP_RELEASED: &str = "DELETE FROM ip_released WHERE family = $1 AND address = \
     (SELECT address FROM ip_released WHERE family = $1 ORDER BY address LIMIT 1) RETURNING address";
pub(crate) const UNRELEASE: &str = "DELETE FROM ip_released WHERE family = $1 AND address = $2";
pub(crate) const IPV4_IN_USE: &str = "SELECT 1 FROM devices WHERE ipv4 = $1";
pub(crate) const IPV6_IN_USE: &str = "SELECT 1 FROM devices WHERE ipv6 = $1";
pub(crate) const USED_IPV4: &str = "SELECT ipv4 FROM devices WHERE ipv4 IS NOT NULL";
pub(crate) const USED_IPV6: &str = "SELECT ipv6 FROM devices WHERE ipv6 IS NOT NULL";

/// The user list statement for `query` (see [`list_users_page`]'s parameters).
pub(crate) mod users_page {
    use ferrozone_domain::store::UserQuery;

    use super::{sql, SessionRow, UserRow};

    /// A user's live sessions, newest first (`$1` the user, `$2` now).
    pub(crate) const USER_SESSIONS: &str =
        sql![(select SessionRow), " WHERE user_id = $1 AND expires_at > $2 ORDER BY inserted_at DESC, id DESC"];

    /// What goes with user `$1`: each count reads one index (`device_count` is kept on the row).
    pub(crate) const BELONGINGS: &str = "SELECT device_count, \
         (SELECT COUNT(*) FROM api_tokens WHERE user_id = $1) AS tokens, \
         (SELECT COUNT(*) FROM rules WHERE user_id = $1) AS rules, \
         (SELECT COUNT(*) FROM sessions WHERE user_id = $1) AS sessions \
         FROM users WHERE id = $1";

    const SELECT: &str = sql![(select UserRow)];

    /// The users whose id is one of `count` parameters (`$1` … `$count`; at least one).
    pub(crate) fn users_by_ids(count: usize) -> String {
        let placeholders: Vec<String> = (1..=count).map(|n| format!("${n}")).collect();
        format!("{SELECT} WHERE id IN ({})", placeholders.join(", "))
    }

    /// Parameters, in order and only when present: the `LIKE` pattern of
    /// [`like_pattern`], the cursor's `inserted_at` and `id`; then always the limit.
    pub(crate) fn list(query: &UserQuery) -> String {
        let mut sql = SELECT.replacen(" FROM users", ", device_count FROM users", 1);
        let mut conditions = Vec::new();
        let mut n = 0;
        if query.email_contains.is_some() {
            n += 1;
            conditions.push(format!("email_key LIKE ${n} ESCAPE '\\'"));
        }
        if query.after.is_some() {
            conditions.push(format!("(inserted_at, id) > (${}, ${})", n + 1, n + 2));
            n += 2;
        }
        if !conditions.is_empty() {
            sql.push_str(" WHERE ");
            sql.push_str(&conditions.join(" AND "));
        }
        sql.push_str(&format!(" ORDER BY inserted_at, id LIMIT ${}", n + 1));
        sql
    }

    /// `%text%` with `LIKE`'s own characters escaped, so that they match themselves.
    pub(crate) fn like_pattern(text: &str) -> String {
        let mut pattern = String::with_capacity(text.len() + 2);
        pattern.push('%');
        for c in text.chars() {
            if matches!(c, '%' | '_' | '\\') {
                pattern.push('\\');
            }
            pattern.push(c);
        }
        pattern.push('%');
        pattern
    }
}

/// The device list statement for `query`. Parameters, in order and only when present:
/// `user_id`, the presence's cutoff, the cursor's `inserted_at` and `id`, the limit.
pub(crate) fn list_devices(query: &DeviceQuery) -> String {
    let mut sql = String::from(SELECT_DEVICES);
    let mut conditions = Vec::new();
    let mut n = 0;
    if query.user_id.is_some() {
        n += 1;
        conditions.push(format!("user_id = ${n}"));
    }
    match query.presence {
        Some(Presence::OnlineSince(_)) => {
            n += 1;
            conditions.push(format!("latest_handshake >= ${n}"));
        }
        Some(Presence::OfflineSince(_)) => {
            n += 1;
            conditions.push(format!("(latest_handshake IS NULL OR latest_handshake < ${n})"));
        }
        None => {}
    }
    if query.after.is_some() {
        conditions.push(format!("(inserted_at, id) > (${}, ${})", n + 1, n + 2));
        n += 2;
    }
    if !conditions.is_empty() {
        sql.push_str(" WHERE ");
        sql.push_str(&conditions.join(" AND "));
    }
    sql.push_str(" ORDER BY inserted_at, id");
    if query.limit.is_some() {
        sql.push_str(&format!(" LIMIT ${}", n + 1));
    }
    sql
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrozone_domain::Timestamp;
    use uuid::Uuid;

    #[test]
    fn list_statement_numbers_its_parameters() {
        let all = list_devices(&DeviceQuery::default());
        assert!(
            all.ends_with(
                "FROM devices d LEFT JOIN device_stats s ON s.public_key = d.public_key ORDER BY inserted_at, id"
            ),
            "{all}"
        );
        let q = DeviceQuery {
            user_id: Some(Uuid::nil()),
            after: Some((Timestamp::from_micros(1), Uuid::nil())),
            limit: Some(5),
            presence: None,
        };
        let sql = list_devices(&q);
        assert!(
            sql.ends_with("WHERE user_id = $1 AND (inserted_at, id) > ($2, $3) ORDER BY inserted_at, id LIMIT $4"),
            "{sql}"
        );
        let q = DeviceQuery { limit: Some(5), ..DeviceQuery::default() };
        assert!(list_devices(&q).ends_with("ORDER BY inserted_at, id LIMIT $1"));
        let q = DeviceQuery {
            user_id: Some(Uuid::nil()),
            presence: Some(Presence::OfflineSince(Timestamp::from_micros(1))),
            limit: Some(5),
            ..DeviceQuery::default()
        };
        let sql = list_devices(&q);
        assert!(
            sql.ends_with(
                "WHERE user_id = $1 AND (latest_handshake IS NULL OR latest_handshake < $2) \
                 ORDER BY inserted_at, id LIMIT $3"
            ),
            "{sql}"
        );
    }

    #[test]
    fn user_list_statement_numbers_its_parameters() {
        let q = ferrozone_domain::store::UserQuery {
            email_contains: Some("a".into()),
            after: Some((Timestamp::from_micros(1), Uuid::nil())),
            limit: 5,
        };
        let sql = users_page::list(&q);
        assert!(sql.contains(", device_count FROM users WHERE email_key LIKE $1 ESCAPE"), "{sql}");
        assert!(sql.ends_with("AND (inserted_at, id) > ($2, $3) ORDER BY inserted_at, id LIMIT $4"), "{sql}");
        let first = users_page::list(&ferrozone_domain::store::UserQuery { limit: 5, ..Default::default() });
        assert!(first.ends_with("FROM users ORDER BY inserted_at, id LIMIT $1"), "{first}");
        assert_eq!(users_page::like_pattern("a_b%c\\d"), "%a\\_b\\%c\\\\d%");
    }
}
