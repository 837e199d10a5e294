//! SQL text shared by both backends. Placeholders are `$n` (the SQLite backend binds them
//! by number as `?n`).
//! Statements that differ (row locks) live in each backend's module and are built from the
//! `select_*!` macros here, so the column lists exist once.

use ferrozone_domain::store::DeviceQuery;

/// The user columns, as a literal for `concat!`.
macro_rules! user_columns {
    () => {
        "id, email, email_key, role, password_hash, disabled_at, last_signed_in_at, \
         last_signed_in_method, inserted_at, updated_at"
    };
}

/// `SELECT <user columns> FROM users`, as a literal for `concat!`.
macro_rules! select_users {
    () => {
        concat!("SELECT ", user_columns!(), " FROM users")
    };
}

/// `SELECT <device columns> FROM devices`, as a literal for `concat!`.
macro_rules! select_devices {
    () => {
        "SELECT id, user_id, name, description, public_key, preshared_key, ipv4, ipv6, \
         allowed_ips, dns, endpoint, mtu, persistent_keepalive, use_default_allowed_ips, \
         use_default_dns, use_default_endpoint, use_default_mtu, use_default_persistent_keepalive, \
         latest_handshake, remote_ip, rx_bytes, tx_bytes, inserted_at, updated_at FROM devices"
    };
}

pub(crate) use {select_devices, select_users, user_columns};

pub(crate) const PING: &str = "SELECT 1";

pub(crate) const SETTING: &str = "SELECT value FROM settings WHERE key = $1";
pub(crate) const INIT_SETTING: &str = "INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING";

pub(crate) const LIST_USERS: &str = concat!(select_users!(), " ORDER BY inserted_at, id");
pub(crate) const USER_BY_ID: &str = concat!(select_users!(), " WHERE id = $1");
pub(crate) const USER_BY_EMAIL: &str = concat!(select_users!(), " WHERE email_key = $1");
pub(crate) const COUNT_ADMINS: &str = "SELECT COUNT(*) FROM users WHERE role = 'admin'";
/// Admin ids in id order: the order in which every transaction locks them.
pub(crate) const ADMIN_IDS: &str = "SELECT id FROM users WHERE role = 'admin' ORDER BY id";
pub(crate) const INSERT_USER: &str = "INSERT INTO users (id, email, email_key, role, password_hash, \
     disabled_at, last_signed_in_at, last_signed_in_method, inserted_at, updated_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";
pub(crate) const UPDATE_USER: &str = "UPDATE users SET email = $2, email_key = $3, role = $4, \
     password_hash = $5, updated_at = $6, disabled_at = $7 WHERE id = $1";
pub(crate) const DELETE_USER: &str = "DELETE FROM users WHERE id = $1";

pub(crate) const INSERT_TOKEN: &str = "INSERT INTO api_tokens \
     (id, user_id, name, token_hash, inserted_at, expires_at, last_used_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7)";

/// The token's and its owner's 16 columns (of `t` and `u`), as a literal for `concat!`.
macro_rules! token_user_columns {
    () => {
        "t.id AS token_id, t.name AS token_name, \
         t.token_hash, t.inserted_at AS token_inserted_at, t.expires_at, t.last_used_at, \
         u.id, u.email, u.email_key, u.role, u.password_hash, u.disabled_at, u.last_signed_in_at, \
         u.last_signed_in_method, u.inserted_at, u.updated_at"
    };
}

pub(crate) const TOKEN_WITH_USER: &str = concat!(
    "SELECT ",
    token_user_columns!(),
    " FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE t.token_hash = $1"
);

/// The columns of [`TOKEN_AND_DEVICE`], as a literal for `concat!`: the token's and the
/// user's 16 as in [`TOKEN_WITH_USER`], then the device's (of `d`) under prefixed names, read
/// by position from [`TOKEN_AND_DEVICE_DEVICE_AT`].
macro_rules! token_and_device_columns {
    () => {
        concat!(
            "SELECT ",
            $crate::sql::token_user_columns!(),
            ", d.id AS d_id, d.user_id AS d_user_id, d.name AS d_name, d.description AS d_description, \
         d.public_key AS d_public_key, d.preshared_key AS d_preshared_key, d.ipv4 AS d_ipv4, \
         d.ipv6 AS d_ipv6, d.allowed_ips AS d_allowed_ips, d.dns AS d_dns, d.endpoint AS d_endpoint, \
         d.mtu AS d_mtu, d.persistent_keepalive AS d_persistent_keepalive, \
         d.use_default_allowed_ips AS d_uda, d.use_default_dns AS d_udd, d.use_default_endpoint AS d_ude, \
         d.use_default_mtu AS d_udm, d.use_default_persistent_keepalive AS d_udp, \
         d.latest_handshake AS d_latest_handshake, d.remote_ip AS d_remote_ip, d.rx_bytes AS d_rx_bytes, \
         d.tx_bytes AS d_tx_bytes, d.inserted_at AS d_inserted_at, d.updated_at AS d_updated_at"
        )
    };
}

pub(crate) use {token_and_device_columns, token_user_columns};

/// [`TOKEN_WITH_USER`] with the device `$2` left-joined. One statement is one snapshot: the
/// token and the device are read as of the same moment.
pub(crate) const TOKEN_AND_DEVICE: &str = concat!(
    token_and_device_columns!(),
    " FROM api_tokens t JOIN users u ON u.id = t.user_id LEFT JOIN devices d ON d.id = $2 \
     WHERE t.token_hash = $1"
);
pub(crate) const TOKEN_AND_DEVICE_DEVICE_AT: usize = 16;
pub(crate) const LIST_TOKENS: &str = "SELECT id, user_id, name, token_hash, inserted_at, expires_at, \
     last_used_at FROM api_tokens WHERE user_id = $1 ORDER BY inserted_at, id";
pub(crate) const TOUCH_TOKEN: &str = "UPDATE api_tokens SET last_used_at = $2 WHERE id = $1";
pub(crate) const DELETE_TOKEN: &str = "DELETE FROM api_tokens WHERE id = $1";

/// Signing in is not an edit: `updated_at` stays.
pub(crate) const RECORD_SIGN_IN: &str =
    "UPDATE users SET last_signed_in_at = $2, last_signed_in_method = $3 WHERE id = $1";

pub(crate) const INSERT_SESSION: &str = "INSERT INTO sessions \
     (id, user_id, secret_hash, inserted_at, expires_at) VALUES ($1, $2, $3, $4, $5)";
pub(crate) const SESSION_WITH_USER: &str = "SELECT s.id AS session_id, s.secret_hash, \
     s.inserted_at AS session_inserted_at, s.expires_at, \
     u.id, u.email, u.email_key, u.role, u.password_hash, u.disabled_at, u.last_signed_in_at, \
     u.last_signed_in_method, u.inserted_at, u.updated_at \
     FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.secret_hash = $1";
pub(crate) const DELETE_SESSION: &str = "DELETE FROM sessions WHERE id = $1";
pub(crate) const DELETE_USER_SESSIONS: &str = "DELETE FROM sessions WHERE user_id = $1";
pub(crate) const DELETE_EXPIRED_SESSIONS: &str = "DELETE FROM sessions WHERE expires_at <= $1";

pub(crate) const UPSERT_OIDC_CONNECTION: &str = "INSERT INTO oidc_connections \
     (user_id, provider_id, refresh_token, refreshed_at, inserted_at, updated_at) \
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (user_id, provider_id) DO UPDATE SET \
     refresh_token = excluded.refresh_token, refreshed_at = excluded.refreshed_at, \
     updated_at = excluded.updated_at";
pub(crate) const LIST_OIDC_CONNECTIONS: &str = "SELECT user_id, provider_id, refresh_token, refreshed_at, \
     inserted_at, updated_at FROM oidc_connections";
/// A compare-and-set on `refreshed_at`: of processes claiming the same connection, one wins.
pub(crate) const CLAIM_OIDC_CONNECTION: &str = "UPDATE oidc_connections SET refreshed_at = $4 \
     WHERE user_id = $1 AND provider_id = $2 AND refreshed_at = $3";
/// Only while the connection is still the one claimed at `$5` (a sign-in may have replaced it).
pub(crate) const ROTATE_OIDC_REFRESH_TOKEN: &str = "UPDATE oidc_connections SET refresh_token = $3, \
     updated_at = $4 WHERE user_id = $1 AND provider_id = $2 AND refreshed_at = $5";
/// Only while the connection is still the one claimed at `$3` (a sign-in may have replaced it).
pub(crate) const DELETE_OIDC_CONNECTION: &str =
    "DELETE FROM oidc_connections WHERE user_id = $1 AND provider_id = $2 AND refreshed_at = $3";
pub(crate) const INSERT_SIGN_IN_FLOW: &str = "INSERT INTO sign_in_flows \
     (state_hash, provider_id, sealed, return_to, expires_at) VALUES ($1, $2, $3, $4, $5)";
pub(crate) const DELETE_EXPIRED_SIGN_IN_FLOWS: &str = "DELETE FROM sign_in_flows WHERE expires_at <= $1";
/// Deletes the flow and returns it: a `state` works once, even with two processes racing.
pub(crate) const TAKE_SIGN_IN_FLOW: &str = "DELETE FROM sign_in_flows WHERE state_hash = $1 \
     RETURNING state_hash, provider_id, sealed, return_to, expires_at";

/// The peers the data plane puts on the interface: devices of users who are not disabled.
pub(crate) const ACTIVE_PEERS: &str = "SELECT d.public_key, d.preshared_key, d.ipv4, d.ipv6 \
     FROM devices d JOIN users u ON u.id = d.user_id WHERE u.disabled_at IS NULL";

pub(crate) const DEVICE_BY_ID: &str = concat!(select_devices!(), " WHERE id = $1");
/// The owner's device count, kept by the `devices_count*` triggers.
pub(crate) const COUNT_USER_DEVICES: &str = "SELECT device_count FROM users WHERE id = $1";
/// A device's insert, `$1`–`$24` (a macro, so that a backend can put a `WITH` before it).
macro_rules! insert_device {
    () => {
        "INSERT INTO devices (id, user_id, name, description, \
         public_key, preshared_key, ipv4, ipv6, allowed_ips, dns, endpoint, mtu, persistent_keepalive, \
         use_default_allowed_ips, use_default_dns, use_default_endpoint, use_default_mtu, \
         use_default_persistent_keepalive, latest_handshake, remote_ip, rx_bytes, tx_bytes, \
         inserted_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, \
         $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24)"
    };
}
pub(crate) use insert_device;
pub(crate) const INSERT_DEVICE: &str = insert_device!();
/// Writes the editable columns; the data plane's statistics are left alone.
pub(crate) const UPDATE_DEVICE: &str = "UPDATE devices SET name = $2, description = $3, \
     public_key = $4, preshared_key = $5, ipv4 = $6, ipv6 = $7, allowed_ips = $8, dns = $9, \
     endpoint = $10, mtu = $11, persistent_keepalive = $12, use_default_allowed_ips = $13, \
     use_default_dns = $14, use_default_endpoint = $15, use_default_mtu = $16, \
     use_default_persistent_keepalive = $17, updated_at = $18 WHERE id = $1";
pub(crate) const DELETE_DEVICE: &str = "DELETE FROM devices WHERE id = $1";

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

/// The device list statement for `query`. Parameters, in order and only when present:
/// `user_id`, the cursor's `inserted_at` and `id`, the limit.
pub(crate) fn list_devices(query: &DeviceQuery) -> String {
    let mut sql = String::from(select_devices!());
    let mut conditions = Vec::new();
    let mut n = 0;
    if query.user_id.is_some() {
        n += 1;
        conditions.push(format!("user_id = ${n}"));
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
        assert!(all.ends_with("FROM devices ORDER BY inserted_at, id"), "{all}");
        let q = DeviceQuery {
            user_id: Some(Uuid::nil()),
            after: Some((Timestamp::from_micros(1), Uuid::nil())),
            limit: Some(5),
        };
        let sql = list_devices(&q);
        assert!(
            sql.ends_with("WHERE user_id = $1 AND (inserted_at, id) > ($2, $3) ORDER BY inserted_at, id LIMIT $4"),
            "{sql}"
        );
        let q = DeviceQuery { limit: Some(5), ..DeviceQuery::default() };
        assert!(list_devices(&q).ends_with("ORDER BY inserted_at, id LIMIT $1"));
    }
}
