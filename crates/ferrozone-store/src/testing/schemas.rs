//! Migrated PostgreSQL schemas for tests, reused from test to test.
//!
//! Migrating a new schema cost the server about 0.25 s of CPU and dropping it 0.15 s: with
//! a schema per test, that was most of what the PostgreSQL test pass cost it. Instead:
//!
//! - The table `public.ferrozone_test_schemas` lists the schemas made for tests: the
//!   migrations each has (a fingerprint of their checksums) and whether a test has it.
//! - A test claims a free one with its migrations (`FOR UPDATE SKIP LOCKED`: tests of every
//!   process draw from the same list) that no session is connected to (sessions carry the
//!   schema's name as their application name: a store the last test left running, or a
//!   `serve` it spawned, keeps the schema from the next test), and puts its rows back as
//!   the template's: the schema `tpl_<fingerprint>`, migrated once and
//!   never used. In one transaction, with triggers off (`session_replication_role =
//!   replica`), every table is emptied and refilled from the template's, and every sequence
//!   set as the template's is.
//! - None free: a new schema, migrated and listed, taken.
//! - A test that ends frees its schema; one that panicked keeps it, taken, for a look.
//!
//! A database where the test role may not set `session_replication_role` (scripts/pg-test-db
//! grants it) gets a new schema for every test, dropped when the test ends.

use anyhow::Context;
use sqlx::PgConnection;
use std::fmt::Write as _;
use std::hash::{Hash, Hasher};
use tokio::sync::OnceCell;

use crate::postgres::MIGRATOR;
use crate::PgStore;

const REGISTRY: &str = "public.ferrozone_test_schemas";

/// Serializes the creation of the registry and of a template across processes.
const ADVISORY_LOCK: i64 = 0x6665_7272_6f7a_6f6e;

/// What this process learns about the database once: the reset script of the template
/// (with `{schema}` for the schema to reset), or `None` where schemas cannot be reused.
static RESET_SCRIPT: OnceCell<Option<String>> = OnceCell::const_new();

/// The migrations this build applies, as a short name: a schema made by another build's
/// migrations is never handed out.
pub(super) fn fingerprint() -> String {
    let mut hasher = std::hash::DefaultHasher::new();
    for migration in MIGRATOR.iter() {
        (migration.version, &migration.checksum[..]).hash(&mut hasher);
    }
    format!("{:016x}", hasher.finish())
}

/// What [`claim`] found.
pub(super) enum Claim {
    /// A schema of this build's migrations, taken and reset to the template's rows.
    Reused(String),
    /// None free: make one, and [`register`] it if `reusable`, else drop it at the end.
    New { reusable: bool },
}

/// Takes a free schema of this build's migrations, if there is one and the database lets
/// schemas be reused.
pub(super) async fn claim(admin: &mut PgConnection, base_url: &str) -> anyhow::Result<Claim> {
    let fingerprint = fingerprint();
    let script = RESET_SCRIPT.get_or_try_init(|| prepare(admin, base_url, &fingerprint)).await?;
    let Some(script) = script else { return Ok(Claim::New { reusable: false }) };
    let claimed: Option<String> = sqlx::query_scalar(&format!(
        "UPDATE {REGISTRY} SET taken = true WHERE name = (SELECT name FROM {REGISTRY} r \
         WHERE NOT taken AND fingerprint = $1 \
         AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.application_name = r.name) \
         LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING name"
    ))
    .bind(&fingerprint)
    .fetch_optional(&mut *admin)
    .await
    .context("claim a test schema")?;
    let Some(schema) = claimed else { return Ok(Claim::New { reusable: true }) };
    reset(admin, &schema, script).await?;
    Ok(Claim::Reused(schema))
}

/// Puts the rows and sequences of `schema` back as the template's, with `script` (see
/// [`reset_script`]).
async fn reset(admin: &mut PgConnection, schema: &str, script: &str) -> anyhow::Result<()> {
    sqlx::raw_sql(&script.replace("{schema}", schema))
        .execute(&mut *admin)
        .await
        .with_context(|| format!("reset test schema {schema}"))?;
    Ok(())
}

/// Lists `schema`, just made and migrated, as taken.
pub(super) async fn register(admin: &mut PgConnection, schema: &str) -> anyhow::Result<()> {
    sqlx::query(&format!("INSERT INTO {REGISTRY} (name, fingerprint, taken) VALUES ($1, $2, true)"))
        .bind(schema)
        .bind(fingerprint())
        .execute(admin)
        .await
        .with_context(|| format!("list test schema {schema}"))?;
    Ok(())
}

/// Frees `schema` for the next test.
pub(super) async fn free(admin: &mut PgConnection, schema: &str) -> sqlx::Result<()> {
    sqlx::query(&format!("UPDATE {REGISTRY} SET taken = false WHERE name = $1")).bind(schema).execute(admin).await?;
    Ok(())
}

/// Finds out whether this database allows reuse, and if so makes sure the registry and the
/// template of `fingerprint` exist and builds the reset script from the template.
async fn prepare(admin: &mut PgConnection, base_url: &str, fingerprint: &str) -> anyhow::Result<Option<String>> {
    let probe =
        sqlx::raw_sql("BEGIN; SET LOCAL session_replication_role = replica; ROLLBACK").execute(&mut *admin).await;
    if probe.is_err() {
        // The failed SET left the transaction aborted: end it.
        let _ = sqlx::raw_sql("ROLLBACK").execute(&mut *admin).await;
        return Ok(None);
    }
    let template = format!("tpl_{fingerprint}");
    sqlx::query("SELECT pg_advisory_lock($1)").bind(ADVISORY_LOCK).execute(&mut *admin).await?;
    let made = make_template(admin, base_url, &template).await;
    sqlx::query("SELECT pg_advisory_unlock($1)").bind(ADVISORY_LOCK).execute(&mut *admin).await?;
    made?;
    Ok(Some(reset_script(admin, &template).await?))
}

/// The registry and the template, made unless they exist; under the advisory lock.
async fn make_template(admin: &mut PgConnection, base_url: &str, template: &str) -> anyhow::Result<()> {
    sqlx::query(&format!(
        "CREATE TABLE IF NOT EXISTS {REGISTRY} (name text PRIMARY KEY, fingerprint text NOT NULL, taken boolean NOT NULL)"
    ))
    .execute(&mut *admin)
    .await
    .context("create the test schema registry")?;
    let exists: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)")
        .bind(template)
        .fetch_one(&mut *admin)
        .await?;
    if exists {
        return Ok(());
    }
    // Migrated under another name and renamed once complete: a template that exists is whole.
    let draft = format!("draft_{}", uuid::Uuid::new_v4().simple());
    sqlx::query(&format!("CREATE SCHEMA {draft}")).execute(&mut *admin).await?;
    let store = PgStore::connect(&super::schema_url(base_url, &draft)?, &super::test_options()).await?;
    store.migrate_private_schema().await?;
    sqlx::query(&format!("ALTER SCHEMA {draft} RENAME TO {template}")).execute(&mut *admin).await?;
    Ok(())
}

/// One transaction that puts `{schema}`'s rows and sequences back as `template` has them.
async fn reset_script(admin: &mut PgConnection, template: &str) -> anyhow::Result<String> {
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT tablename::text FROM pg_tables WHERE schemaname = $1 AND tablename <> '_sqlx_migrations' ORDER BY 1",
    )
    .bind(template)
    .fetch_all(&mut *admin)
    .await?;
    let sequences: Vec<String> =
        sqlx::query_scalar("SELECT sequencename::text FROM pg_sequences WHERE schemaname = $1 ORDER BY 1")
            .bind(template)
            .fetch_all(&mut *admin)
            .await?;
    let mut script =
        String::from("BEGIN; SET LOCAL session_replication_role = replica; SET LOCAL lock_timeout = '5s'; ");
    for table in &tables {
        write!(
            script,
            "DELETE FROM {{schema}}.\"{table}\"; \
             INSERT INTO {{schema}}.\"{table}\" OVERRIDING SYSTEM VALUE SELECT * FROM {template}.\"{table}\"; "
        )?;
    }
    for sequence in &sequences {
        write!(
            script,
            "SELECT setval('{{schema}}.\"{sequence}\"', last_value, is_called) FROM {template}.\"{sequence}\"; "
        )?;
    }
    script.push_str("COMMIT;");
    Ok(script)
}

#[cfg(test)]
mod tests {
    use sqlx::{Connection, PgConnection};

    use super::super::{fresh, Cleanup, DATABASE_URL_ENV};
    use super::*;

    /// A used schema comes back as the template has it: the last test's rows gone, the
    /// migrations' own rows back, its sequences starting over.
    #[tokio::test]
    async fn a_reset_schema_is_as_the_template_has_it() {
        let Ok(base_url) = std::env::var(DATABASE_URL_ENV) else { return };
        let db = fresh().await.unwrap();
        let Cleanup::Schema { schema, reused: true, .. } = &db.cleanup else {
            panic!("schemas are reused on the tests' database (scripts/pg-test-db grants what it takes)")
        };
        let mut session = PgConnection::connect(&db.url).await.unwrap();
        sqlx::raw_sql(
            "INSERT INTO settings (key, value) VALUES ('test.reset', '\\x00'); DELETE FROM audit_head; \
             SELECT nextval('audit_events_pos_seq'); SELECT nextval('audit_events_pos_seq');",
        )
        .execute(&mut session)
        .await
        .unwrap();

        let script = RESET_SCRIPT.get().cloned().flatten().expect("a reused schema has its reset script");
        let mut admin = PgConnection::connect(&base_url).await.unwrap();
        reset(&mut admin, schema, &script).await.unwrap();

        let (left, heads, next): (i64, i64, i64) = sqlx::query_as(
            "SELECT (SELECT count(*) FROM settings WHERE key = 'test.reset'), (SELECT count(*) FROM audit_head), \
             nextval('audit_events_pos_seq')",
        )
        .fetch_one(&mut session)
        .await
        .unwrap();
        assert_eq!((left, heads, next), (0, 1, 1));
    }
}
