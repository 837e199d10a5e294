//! Opening the database and the domain, shared by every subcommand.

use std::sync::Arc;

use anyhow::Context;
use ferrozone_domain::audit::AuditKey;
use ferrozone_domain::crypto::Cipher;
use ferrozone_domain::Domain;
use ferrozone_store::{Redacted, StoreOptions};

use crate::config::Config;

/// The store's options. `cipher` is the secret key's: the audit chain is keyed from it, so
/// every process that writes to the database must open it with the key (a store opened
/// without one would chain events that anyone who can write the database could forge).
pub fn store_options(config: &Config, cipher: &Cipher) -> StoreOptions {
    StoreOptions {
        synchronous: config.sqlite_synchronous,
        max_connections: config.database_max_connections,
        audit_key: AuditKey::from_cipher(cipher),
        ..StoreOptions::default()
    }
}

/// Opens the database, applies pending migrations, and opens the domain on it.
pub async fn open_domain(config: &Config) -> anyhow::Result<Arc<Domain>> {
    Ok(open_domain_with_database(config).await?.0)
}

/// [`open_domain`], and the database it is open on, for what reads the database itself
/// (the store's metrics: its pool, its counts).
pub async fn open_domain_with_database(config: &Config) -> anyhow::Result<(Arc<Domain>, ferrozone_store::Database)> {
    let settings = Arc::new(config.settings()?);
    let cipher = crate::secret::load(config)?;
    let db = open_database(config, &cipher).await?;
    tracing::info!(backend = db.backend(), database = %Redacted(&config.database_url()), "database ready");
    let domain = Domain::open(db.clone().into_store(), settings, cipher).await?;
    Ok((Arc::new(domain), db))
}

/// The configured database (in the data directory, made if missing), migrated, keyed for
/// the audit chain with `cipher`.
pub async fn open_database(config: &Config, cipher: &Cipher) -> anyhow::Result<ferrozone_store::Database> {
    create_data_dir(&config.data_dir)?;
    let url = config.database_url();
    let db = ferrozone_store::open(&url, &store_options(config, cipher))
        .await
        .with_context(|| format!("opening the database {}", Redacted(&url)))?;
    db.migrate().await.context("applying database migrations")?;
    Ok(db)
}

/// The data directory holds the database and the secret key: only its owner may read it.
/// An existing one is left as it is, with a warning if others may enter it.
pub fn create_data_dir(dir: &std::path::Path) -> anyhow::Result<()> {
    if dir.exists() {
        warn_if_shared(dir);
        return Ok(());
    }
    create_private_dir(dir).with_context(|| format!("creating the data directory {}", dir.display()))
}

/// Creates `dir` and any missing parent with mode 0700 (a directory that exists is left
/// as it is). Whatever creates the data directory first (the secret key, `serve`'s lock
/// file, the database) makes it so.
pub fn create_private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Warns when the group or others have any access to `dir`.
fn warn_if_shared(dir: &std::path::Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let Ok(metadata) = std::fs::metadata(dir) else { return };
        let mode = metadata.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            tracing::warn!(
                directory = %dir.display(),
                mode = format!("{mode:03o}"),
                "the data directory is open to other users; it holds the database and the secret key: \
                 make it its owner's alone (chmod 700)"
            );
        }
    }
}
