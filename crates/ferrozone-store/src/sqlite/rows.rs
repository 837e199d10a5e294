//! Reading the shared row types ([`crate::rows`]) from SQLite result rows, by position: the
//! column order of the `select_*!` macros in [`crate::sql`].

use rusqlite::types::ValueRef;
use rusqlite::Row;

use crate::rows::{
    ActivePeerRow, DeviceRow, OidcConnectionRow, SessionUserRow, SignInFlowRow, TokenRow, TokenUserRow, UserRow,
};

/// The columns of `select_users!`, starting at `at`.
fn user_at(row: &Row<'_>, at: usize) -> rusqlite::Result<UserRow> {
    Ok(UserRow {
        id: row.get(at)?,
        email: row.get(at + 1)?,
        email_key: row.get(at + 2)?,
        role: row.get(at + 3)?,
        password_hash: row.get(at + 4)?,
        disabled_at: row.get(at + 5)?,
        last_signed_in_at: row.get(at + 6)?,
        last_signed_in_method: row.get(at + 7)?,
        inserted_at: row.get(at + 8)?,
        updated_at: row.get(at + 9)?,
    })
}

pub(crate) fn user(row: &Row<'_>) -> rusqlite::Result<UserRow> {
    user_at(row, 0)
}

/// A row of [`crate::sql::TOKEN_WITH_USER`].
pub(crate) fn token_with_user(row: &Row<'_>) -> rusqlite::Result<TokenUserRow> {
    Ok(TokenUserRow {
        token_id: row.get(0)?,
        token_name: row.get(1)?,
        token_hash: row.get(2)?,
        token_inserted_at: row.get(3)?,
        expires_at: row.get(4)?,
        last_used_at: row.get(5)?,
        user: user_at(row, 6)?,
    })
}

/// A row of [`crate::sql::SESSION_WITH_USER`].
pub(crate) fn session_with_user(row: &Row<'_>) -> rusqlite::Result<SessionUserRow> {
    Ok(SessionUserRow {
        session_id: row.get(0)?,
        secret_hash: row.get(1)?,
        session_inserted_at: row.get(2)?,
        expires_at: row.get(3)?,
        user: user_at(row, 4)?,
    })
}

/// A row of [`crate::sql::TAKE_SIGN_IN_FLOW`].
pub(crate) fn sign_in_flow(row: &Row<'_>) -> rusqlite::Result<SignInFlowRow> {
    Ok(SignInFlowRow {
        state_hash: row.get(0)?,
        provider_id: row.get(1)?,
        sealed: row.get(2)?,
        return_to: row.get(3)?,
        expires_at: row.get(4)?,
    })
}

/// A row of [`crate::sql::LIST_TOKENS`].
pub(crate) fn token(row: &Row<'_>) -> rusqlite::Result<TokenRow> {
    Ok(TokenRow {
        id: row.get(0)?,
        user_id: row.get(1)?,
        name: row.get(2)?,
        token_hash: row.get(3)?,
        inserted_at: row.get(4)?,
        expires_at: row.get(5)?,
        last_used_at: row.get(6)?,
    })
}

/// The columns of `select_devices!`.
pub(crate) fn device(row: &Row<'_>) -> rusqlite::Result<DeviceRow> {
    device_at(row, 0)
}

/// A row of [`crate::sql::TOKEN_AND_DEVICE`]: the token with its owner, and the device
/// when the join found one.
pub(crate) fn token_and_device(row: &Row<'_>) -> rusqlite::Result<(TokenUserRow, Option<DeviceRow>)> {
    let at = crate::sql::TOKEN_AND_DEVICE_DEVICE_AT;
    let device = match row.get_ref(at)? {
        ValueRef::Null => None,
        _ => Some(device_at(row, at)?),
    };
    Ok((token_with_user(row)?, device))
}

/// The columns of `select_devices!`, starting at `at`.
fn device_at(row: &Row<'_>, at: usize) -> rusqlite::Result<DeviceRow> {
    Ok(DeviceRow {
        id: row.get(at)?,
        user_id: row.get(at + 1)?,
        name: row.get(at + 2)?,
        description: row.get(at + 3)?,
        public_key: row.get(at + 4)?,
        preshared_key: row.get(at + 5)?,
        ipv4: row.get(at + 6)?,
        ipv6: row.get(at + 7)?,
        allowed_ips: row.get(at + 8)?,
        dns: row.get(at + 9)?,
        endpoint: row.get(at + 10)?,
        mtu: row.get(at + 11)?,
        persistent_keepalive: row.get(at + 12)?,
        use_default_allowed_ips: row.get(at + 13)?,
        use_default_dns: row.get(at + 14)?,
        use_default_endpoint: row.get(at + 15)?,
        use_default_mtu: row.get(at + 16)?,
        use_default_persistent_keepalive: row.get(at + 17)?,
        latest_handshake: row.get(at + 18)?,
        remote_ip: row.get(at + 19)?,
        rx_bytes: row.get(at + 20)?,
        tx_bytes: row.get(at + 21)?,
        inserted_at: row.get(at + 22)?,
        updated_at: row.get(at + 23)?,
    })
}

/// A row of [`crate::sql::ACTIVE_PEERS`].
pub(crate) fn active_peer(row: &Row<'_>) -> rusqlite::Result<ActivePeerRow> {
    Ok(ActivePeerRow { public_key: row.get(0)?, preshared_key: row.get(1)?, ipv4: row.get(2)?, ipv6: row.get(3)? })
}

/// A row of [`crate::sql::LIST_OIDC_CONNECTIONS`].
pub(crate) fn oidc_connection(row: &Row<'_>) -> rusqlite::Result<OidcConnectionRow> {
    Ok(OidcConnectionRow {
        user_id: row.get(0)?,
        provider_id: row.get(1)?,
        refresh_token: row.get(2)?,
        refreshed_at: row.get(3)?,
        inserted_at: row.get(4)?,
        updated_at: row.get(5)?,
    })
}
