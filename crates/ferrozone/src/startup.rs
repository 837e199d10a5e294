//! Opening the database and the domain, shared by every subcommand.

use std::sync::Arc;

use anyhow::Context;
use ferrozone_domain::Domain;
use ferrozone_store::{Redacted, StoreOptions};

use crate::config::Config;

pub fn store_options(config: &Config) -> StoreOptions {
    StoreOptions {
        synchronous: config.sqlite_synchronous,
        max_connections: config.database_max_connections,
        ..StoreOptions::default()
    }
}

/// Opens the database, applies pending migrations, and opens the domain on it.
pub async fn open_domain(config: &Config) -> anyhow::Result<Arc<Domain>> {
    let settings = Arc::new(config.settings()?);
    create_data_dir(&config.data_dir)?;
    let url = config.database_url();
    let db = ferrozone_store::open(&url, &store_options(config))
        .await
        .with_context(|| format!("opening the database {}", Redacted(&url)))?;
    db.migrate().await.context("applying database migrations")?;
    tracing::info!(backend = db.backend(), database = %Redacted(&url), "database ready");
    let cipher = crate::secret::load(config)?;
    let domain = Domain::open(db.into_store(), settings, cipher).await?;
    Ok(Arc::new(domain))
}

/// The data directory holds the database and the secret key: only its owner may read it.
pub fn create_data_dir(dir: &std::path::Path) -> anyhow::Result<()> {
    if dir.exists() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir).with_context(|| format!("creating the data directory {}", dir.display()))
}
