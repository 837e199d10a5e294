//! Firezone 0.7.26–0.7.36: its database schema, its encryption at rest, its files, and the
//! conversion of its rows into an [`ferrozone_domain::import::ImportBatch`].
//!
//! [`prepare`] does it all: [`secrets`] gives the keys and variables, [`schema::check`]
//! accepts the database, [`read::read`] takes its rows, [`convert::convert`] builds the
//! batch and the [`report::Report`].

pub mod cloak;
pub mod convert;
#[cfg(feature = "testing")]
pub mod fixture;
pub mod networks;
pub mod read;
pub mod report;
pub mod schema;
pub mod secrets;

use anyhow::Context;
use ferrozone_domain::crypto::Cipher;
use ferrozone_domain::import::ImportBatch;
use ferrozone_domain::ipam::Pools;
use ferrozone_domain::Timestamp;
use sqlx::{Connection, PgConnection};

use self::cloak::CloakKey;
use self::convert::Keys;
use self::networks::TunnelNetworks;
use self::report::Report;
use self::secrets::{ServerKey, Variables, DATABASE_ENCRYPTION_KEY, GUARDIAN_SECRET_KEY};

/// Reads the Firezone database at `source_url` with the source's variables `vars` (its
/// `DATABASE_ENCRYPTION_KEY` is required) and turns it into a batch sealed with `cipher`,
/// for a Ferrozone serving `target`'s networks. Changes nothing anywhere.
pub async fn prepare(
    source_url: &str,
    vars: &Variables,
    server_key: Option<&ServerKey>,
    cipher: &Cipher,
    target: &Pools,
) -> anyhow::Result<(ImportBatch, Report)> {
    let key = vars.get(DATABASE_ENCRYPTION_KEY).with_context(|| {
        format!("{DATABASE_ENCRYPTION_KEY} is needed to read preshared keys and authenticators; give the env file, the secrets file or --database-encryption-key")
    })?;
    let cloak = CloakKey::from_base64(key)?;
    let networks = TunnelNetworks::from_variables(vars)?;
    let mut conn = PgConnection::connect(source_url)
        .await
        .with_context(|| format!("cannot connect to the Firezone database {}", crate::scratch::redacted(source_url)))?;
    schema::check(&mut conn).await?;
    let source = read::read(&mut conn).await.context("reading the Firezone database")?;
    let _ = conn.close().await;
    let keys = Keys { cloak: &cloak, cipher, guardian_secret_key: vars.get(GUARDIAN_SECRET_KEY), server_key };
    convert::convert(&source, &keys, &networks, target, Timestamp::now())
}
