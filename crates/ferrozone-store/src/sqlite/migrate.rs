//! The embedded SQLite migration history, applied in order; the version reached is kept in
//! `PRAGMA user_version`. Each migration runs in its own `BEGIN IMMEDIATE` transaction, which
//! re-reads the version, so two processes migrating one file at once apply each step once.

use anyhow::Context;
use rusqlite::{Connection, TransactionBehavior};

/// One step of the history: `migrations/sqlite/<version>_<name>.sql`.
pub struct Migration {
    pub version: i64,
    pub name: &'static str,
    sql: &'static str,
}

/// The history, oldest first. Mirrors `migrations/postgres` file for file.
pub static MIGRATIONS: &[Migration] = &[
    Migration { version: 1, name: "init", sql: include_str!("../../migrations/sqlite/0001_init.sql") },
    Migration { version: 2, name: "device_count", sql: include_str!("../../migrations/sqlite/0002_device_count.sql") },
    Migration { version: 3, name: "peer_notify", sql: include_str!("../../migrations/sqlite/0003_peer_notify.sql") },
    Migration { version: 4, name: "sessions", sql: include_str!("../../migrations/sqlite/0004_sessions.sql") },
    Migration {
        version: 5,
        name: "sign_in_flows",
        sql: include_str!("../../migrations/sqlite/0005_sign_in_flows.sql"),
    },
    Migration {
        version: 6,
        name: "oidc_connections",
        sql: include_str!("../../migrations/sqlite/0006_oidc_connections.sql"),
    },
    Migration { version: 7, name: "rules", sql: include_str!("../../migrations/sqlite/0007_rules.sql") },
    Migration { version: 8, name: "rule_notify", sql: include_str!("../../migrations/sqlite/0008_rule_notify.sql") },
    Migration {
        version: 9,
        name: "configuration_notify",
        sql: include_str!("../../migrations/sqlite/0009_configuration_notify.sql"),
    },
    Migration {
        version: 10,
        name: "users_list_order",
        sql: include_str!("../../migrations/sqlite/0010_users_list_order.sql"),
    },
    Migration { version: 11, name: "totp", sql: include_str!("../../migrations/sqlite/0011_totp.sql") },
    Migration {
        version: 12,
        name: "console_indexes",
        sql: include_str!("../../migrations/sqlite/0012_console_indexes.sql"),
    },
    Migration { version: 13, name: "disabled_by", sql: include_str!("../../migrations/sqlite/0013_disabled_by.sql") },
    Migration {
        version: 14,
        name: "imported_tokens",
        sql: include_str!("../../migrations/sqlite/0014_imported_tokens.sql"),
    },
    Migration {
        version: 15,
        name: "change_counters",
        sql: include_str!("../../migrations/sqlite/0015_change_counters.sql"),
    },
    Migration { version: 16, name: "audit_events", sql: include_str!("../../migrations/sqlite/0016_audit_events.sql") },
    Migration { version: 17, name: "webhooks", sql: include_str!("../../migrations/sqlite/0017_webhooks.sql") },
    Migration { version: 18, name: "audit_sealer", sql: include_str!("../../migrations/sqlite/0018_audit_sealer.sql") },
    Migration {
        version: 19,
        name: "audit_head_seal",
        sql: include_str!("../../migrations/sqlite/0019_audit_head_seal.sql"),
    },
    Migration { version: 20, name: "device_stats", sql: include_str!("../../migrations/sqlite/0020_device_stats.sql") },
    Migration {
        version: 21,
        name: "device_paused",
        sql: include_str!("../../migrations/sqlite/0021_device_paused.sql"),
    },
    Migration {
        version: 22,
        name: "sign_in_links",
        sql: include_str!("../../migrations/sqlite/0022_sign_in_links.sql"),
    },
    Migration { version: 23, name: "gateways", sql: include_str!("../../migrations/sqlite/0023_gateways.sql") },
    Migration {
        version: 24,
        name: "gateway_sessions",
        sql: include_str!("../../migrations/sqlite/0024_gateway_sessions.sql"),
    },
    Migration {
        version: 25,
        name: "peer_counters",
        sql: include_str!("../../migrations/sqlite/0025_peer_counters.sql"),
    },
    Migration {
        version: 26,
        name: "gateway_reports",
        sql: include_str!("../../migrations/sqlite/0026_gateway_reports.sql"),
    },
    Migration { version: 27, name: "groups", sql: include_str!("../../migrations/sqlite/0027_groups.sql") },
    Migration { version: 28, name: "group_rules", sql: include_str!("../../migrations/sqlite/0028_group_rules.sql") },
    Migration { version: 29, name: "scim", sql: include_str!("../../migrations/sqlite/0029_scim.sql") },
    Migration { version: 30, name: "rule_changes", sql: include_str!("../../migrations/sqlite/0030_rule_changes.sql") },
    Migration {
        version: 31,
        name: "scim_user_count",
        sql: include_str!("../../migrations/sqlite/0031_scim_user_count.sql"),
    },
];

/// Applies every migration newer than the database.
pub(crate) fn run(conn: &mut Connection) -> anyhow::Result<()> {
    adopt_earlier_history(conn)?;
    for migration in MIGRATIONS {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let current: i64 = tx.query_row("PRAGMA user_version", [], |row| row.get(0))?;
        if current >= migration.version {
            continue;
        }
        tx.execute_batch(migration.sql)
            .with_context(|| format!("migration {} ({}) failed", migration.version, migration.name))?;
        tx.pragma_update(None, "user_version", migration.version)?;
        tx.commit()?;
        tracing::info!(version = migration.version, name = migration.name, "SQLite migration applied");
    }
    Ok(())
}

/// Databases made by earlier Ferrozone builds recorded their history in a
/// `_sqlx_migrations` table; their version carries over to `user_version`.
fn adopt_earlier_history(conn: &Connection) -> anyhow::Result<()> {
    let current: i64 = conn.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    let has_table: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = '_sqlx_migrations')",
        [],
        |row| row.get(0),
    )?;
    if current != 0 || !has_table {
        return Ok(());
    }
    let recorded: Option<i64> =
        conn.query_row("SELECT MAX(version) FROM _sqlx_migrations WHERE success", [], |row| row.get(0))?;
    if let Some(version) = recorded {
        conn.pragma_update(None, "user_version", version)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrating_twice_is_a_no_op_and_earlier_histories_are_adopted() {
        let mut conn = Connection::open_in_memory().unwrap();
        run(&mut conn).unwrap();
        run(&mut conn).unwrap();
        let version: i64 = conn.query_row("PRAGMA user_version", [], |row| row.get(0)).unwrap();
        assert_eq!(version, MIGRATIONS.last().unwrap().version);

        let mut earlier = Connection::open_in_memory().unwrap();
        earlier.execute_batch(MIGRATIONS[0].sql).unwrap();
        earlier
            .execute_batch(
                "CREATE TABLE _sqlx_migrations (version INTEGER PRIMARY KEY, success BOOLEAN NOT NULL);
                 INSERT INTO _sqlx_migrations VALUES (1, TRUE);",
            )
            .unwrap();
        run(&mut earlier).expect("the init migration is not applied twice");
        let version: i64 = earlier.query_row("PRAGMA user_version", [], |row| row.get(0)).unwrap();
        assert_eq!(version, MIGRATIONS.last().unwrap().version, "the later ones are");
    }

    /// Migration 0020 moves the statistics out of `devices`: the figures stored before it
    /// are in `device_stats` after, and a device that never reported has no row there.
    #[test]
    fn stored_statistics_move_to_their_own_table() {
        let mut conn = Connection::open_in_memory().unwrap();
        for migration in MIGRATIONS.iter().filter(|m| m.version < 20) {
            conn.execute_batch(migration.sql).unwrap();
            conn.pragma_update(None, "user_version", migration.version).unwrap();
        }
        conn.execute_batch(
            "INSERT INTO users (id, email, email_key, role, inserted_at, updated_at) VALUES (x'01', 'a@b', 'a@b', 'admin', 1, 1);
             INSERT INTO devices (id, user_id, name, public_key, preshared_key, use_default_allowed_ips, use_default_dns,
                 use_default_endpoint, use_default_mtu, use_default_persistent_keepalive, inserted_at, updated_at,
                 latest_handshake, remote_ip, rx_bytes, tx_bytes)
             VALUES (x'0a', x'01', 'talked', 'k1', x'00', 1, 1, 1, 1, 1, 1, 1, 123, '192.0.2.1', 5, 6),
                    (x'0b', x'01', 'silent', 'k2', x'00', 1, 1, 1, 1, 1, 2, 2, NULL, NULL, NULL, NULL);",
        )
        .unwrap();
        run(&mut conn).unwrap();
        let rows: Vec<(String, i64, String, i64, i64)> = conn
            .prepare("SELECT public_key, latest_handshake, remote_ip, rx_bytes, tx_bytes FROM device_stats")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(rows, [("k1".to_owned(), 123, "192.0.2.1".to_owned(), 5, 6)]);
    }
}
