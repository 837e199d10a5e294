//! The embedded PostgreSQL migration history, applied by sqlx's migrator: recorded in
//! `_sqlx_migrations`, each in its own transaction, under sqlx's advisory lock. Mirrors
//! `migrations/sqlite` file for file.
//!
//! Listed here rather than made by `sqlx::migrate!`: that macro was the only use of sqlx's
//! `macros` feature, which builds a second copy of sqlx's PostgreSQL driver (for the
//! compiler, and optimised, as the workspace's profile asks) into every clean build. Each
//! entry is made exactly as the macro made it, from the file's name and text (a test checks
//! this against sqlx's own reading of the directory), so databases migrated before keep
//! their recorded checksums.

use std::borrow::Cow;
use std::sync::LazyLock;

use sqlx::migrate::{Migration, MigrationType, Migrator};

/// `migrations/postgres/<version>_<name>.sql`, oldest first.
const FILES: &[(i64, &str, &str)] = &[
    (1, "init", include_str!("../../migrations/postgres/0001_init.sql")),
    (2, "device_count", include_str!("../../migrations/postgres/0002_device_count.sql")),
    (3, "peer_notify", include_str!("../../migrations/postgres/0003_peer_notify.sql")),
    (4, "sessions", include_str!("../../migrations/postgres/0004_sessions.sql")),
    (5, "sign_in_flows", include_str!("../../migrations/postgres/0005_sign_in_flows.sql")),
    (6, "oidc_connections", include_str!("../../migrations/postgres/0006_oidc_connections.sql")),
    (7, "rules", include_str!("../../migrations/postgres/0007_rules.sql")),
    (8, "rule_notify", include_str!("../../migrations/postgres/0008_rule_notify.sql")),
    (9, "configuration_notify", include_str!("../../migrations/postgres/0009_configuration_notify.sql")),
    (10, "users_list_order", include_str!("../../migrations/postgres/0010_users_list_order.sql")),
    (11, "totp", include_str!("../../migrations/postgres/0011_totp.sql")),
    (12, "console_indexes", include_str!("../../migrations/postgres/0012_console_indexes.sql")),
    (13, "disabled_by", include_str!("../../migrations/postgres/0013_disabled_by.sql")),
    (14, "imported_tokens", include_str!("../../migrations/postgres/0014_imported_tokens.sql")),
    (15, "change_counters", include_str!("../../migrations/postgres/0015_change_counters.sql")),
    (16, "audit_events", include_str!("../../migrations/postgres/0016_audit_events.sql")),
    (17, "webhooks", include_str!("../../migrations/postgres/0017_webhooks.sql")),
    (18, "audit_sealer", include_str!("../../migrations/postgres/0018_audit_sealer.sql")),
    (19, "audit_head_seal", include_str!("../../migrations/postgres/0019_audit_head_seal.sql")),
    (20, "device_stats", include_str!("../../migrations/postgres/0020_device_stats.sql")),
    (21, "device_paused", include_str!("../../migrations/postgres/0021_device_paused.sql")),
    (22, "sign_in_links", include_str!("../../migrations/postgres/0022_sign_in_links.sql")),
    (23, "gateways", include_str!("../../migrations/postgres/0023_gateways.sql")),
    (24, "gateway_sessions", include_str!("../../migrations/postgres/0024_gateway_sessions.sql")),
    (25, "peer_counters", include_str!("../../migrations/postgres/0025_peer_counters.sql")),
    (26, "gateway_reports", include_str!("../../migrations/postgres/0026_gateway_reports.sql")),
    (27, "groups", include_str!("../../migrations/postgres/0027_groups.sql")),
    (28, "group_rules", include_str!("../../migrations/postgres/0028_group_rules.sql")),
    (29, "scim", include_str!("../../migrations/postgres/0029_scim.sql")),
    (30, "rule_changes", include_str!("../../migrations/postgres/0030_rule_changes.sql")),
    (31, "scim_user_count", include_str!("../../migrations/postgres/0031_scim_user_count.sql")),
];

/// The history as sqlx's migrator runs it.
pub static MIGRATOR: LazyLock<Migrator> = LazyLock::new(|| migrator(true));

/// The history, under sqlx's advisory lock on the database or (`locking` false, for a
/// schema nobody else uses) without it.
pub(crate) fn migrator(locking: bool) -> Migrator {
    let migrations = FILES.iter().map(|&(version, name, sql)| migration(version, name, sql)).collect();
    Migrator { migrations: Cow::Owned(migrations), ignore_missing: false, locking, no_tx: false }
}

/// One file as sqlx reads it: the description is the name with spaces for underscores, the
/// checksum is of the text, and a file starting `-- no-transaction` runs outside one.
fn migration(version: i64, name: &str, sql: &'static str) -> Migration {
    let description = Cow::Owned(name.replace('_', " "));
    Migration::new(
        version,
        description,
        MigrationType::Simple,
        Cow::Borrowed(sql),
        sql.starts_with("-- no-transaction"),
    )
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// Every file of the directory is listed, and each entry is what sqlx's own reading of
    /// the directory (what `sqlx::migrate!` embedded) makes of it.
    #[tokio::test]
    async fn the_list_is_the_directory_as_sqlx_reads_it() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations/postgres");
        let read = Migrator::new(dir.as_path()).await.unwrap();
        let summary =
            |m: &Migration| (m.version, m.description.to_string(), m.migration_type, m.checksum.to_vec(), m.no_tx);
        let listed: Vec<_> = MIGRATOR.iter().map(summary).collect();
        let expected: Vec<_> = read.iter().map(summary).collect();
        assert_eq!(listed.len(), expected.len(), "a file of migrations/postgres is not in FILES");
        assert_eq!(listed, expected);
    }
}
