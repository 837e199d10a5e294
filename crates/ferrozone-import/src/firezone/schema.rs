//! Which Firezone schema a database holds. Every release from 0.7.26 to 0.7.36 has the
//! same one (newest migration `20230317161258`); older ones differ (integer ids, text
//! lists) and are refused: Firezone upgrades its own schema on start, so upgrading it first
//! is the safe path.

use std::collections::HashSet;

use sqlx::PgConnection;

/// The newest migration of the supported schema.
pub const NEWEST_MIGRATION: i64 = 20_230_317_161_258;

/// What an older installation is told.
pub const UPGRADE_FIRST: &str = "upgrade Firezone to 0.7.36 first (it migrates itself on start), then import";

/// Columns of the supported schema whose shape older schemas lack: `(table, column, data
/// type)` as `information_schema.columns` names them.
const EXPECTED: &[(&str, &str, &str)] = &[
    ("users", "id", "uuid"),
    ("users", "email", "USER-DEFINED"),
    ("users", "password_hash", "character varying"),
    ("users", "disabled_at", "timestamp with time zone"),
    ("devices", "id", "uuid"),
    ("devices", "preshared_key", "bytea"),
    ("devices", "ipv4", "inet"),
    ("devices", "ipv6", "inet"),
    ("devices", "allowed_ips", "ARRAY"),
    ("devices", "dns", "ARRAY"),
    ("devices", "use_default_allowed_ips", "boolean"),
    ("rules", "port_range", "int4range"),
    ("rules", "port_type", "USER-DEFINED"),
    ("api_tokens", "expires_at", "timestamp with time zone"),
    ("mfa_methods", "payload", "bytea"),
    ("mfa_methods", "last_used_at", "timestamp without time zone"),
    ("oidc_connections", "refresh_token", "text"),
    ("configurations", "openid_connect_providers", "jsonb"),
    ("configurations", "saml_identity_providers", "jsonb"),
    ("configurations", "vpn_session_duration", "integer"),
];

/// Why a database cannot be imported.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    #[error("the source database holds no Firezone schema (no `users` and `devices` tables)")]
    NotFirezone,
    #[error("the source database has an older Firezone schema ({0}): {UPGRADE_FIRST}")]
    TooOld(String),
    #[error("reading the source database's schema: {0}")]
    Database(#[from] sqlx::Error),
}

/// Checks that `conn`'s current schema is Firezone 0.7.26–0.7.36's.
pub async fn check(conn: &mut PgConnection) -> Result<(), SchemaError> {
    let rows: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT table_name::text, column_name::text, data_type::text FROM information_schema.columns \
         WHERE table_schema = current_schema()",
    )
    .fetch_all(&mut *conn)
    .await?;
    let present: HashSet<(String, String, String)> = rows.into_iter().collect();
    let has_table = |table: &str| present.iter().any(|(t, _, _)| t == table);
    if !has_table("users") || !has_table("devices") {
        return Err(SchemaError::NotFirezone);
    }
    let missing: Vec<String> = EXPECTED
        .iter()
        .filter(|(t, c, d)| !present.contains(&((*t).to_owned(), (*c).to_owned(), (*d).to_owned())))
        .map(|(t, c, d)| format!("{t}.{c} is not {d}"))
        .collect();
    if let Some(first) = missing.first() {
        return Err(SchemaError::TooOld(first.clone()));
    }
    if !has_table("schema_migrations") {
        return Err(SchemaError::TooOld("no schema_migrations table".into()));
    }
    let migrated: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)")
        .bind(NEWEST_MIGRATION)
        .fetch_one(&mut *conn)
        .await?;
    if !migrated {
        return Err(SchemaError::TooOld(format!("migration {NEWEST_MIGRATION} has not run")));
    }
    Ok(())
}
