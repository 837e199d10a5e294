//! `ferrozone import firezone`: reads a Firezone installation (its database directly, or a
//! dump loaded into a scratch database), prints what it found, and, unless it is a dry
//! run, writes it into this installation's database in one transaction.

mod dump;

use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Context};
use ferrozone_domain::crypto::Cipher;
use ferrozone_domain::import::{ImportBatch, ImportMode, ImportOutcome};
use ferrozone_domain::ipam::Pools;
use ferrozone_domain::{Domain, DomainError, Settings, Store};
use ferrozone_import::firezone::prepare;
use ferrozone_import::firezone::report::Report;
use ferrozone_import::firezone::secrets::{ServerKey, Variables, DATABASE_ENCRYPTION_KEY, GUARDIAN_SECRET_KEY};
use ferrozone_import::scratch::ScratchDatabase;
use zeroize::Zeroizing;

use crate::cli::{FirezoneImport, ImportCommand};
use crate::config::Config;
use crate::startup::open_database;

pub async fn run(config: &Config, cmd: ImportCommand) -> anyhow::Result<()> {
    match cmd {
        ImportCommand::Firezone(args) => firezone(config, &args).await,
    }
}

async fn firezone(config: &Config, args: &FirezoneImport) -> anyhow::Result<()> {
    let vars = variables(args)?;
    let server_key = args.private_key_file.as_deref().map(read_server_key).transpose()?;
    let settings = config.settings()?;
    if args.dry_run {
        // Nothing is written: the batch is sealed with a throwaway key.
        let cipher = Cipher::from_base64(&Cipher::generate_key())?;
        let (_, report) = read_source(args, &vars, server_key.as_ref(), &cipher, &settings.pools).await?;
        println!("{report}\ndry run: nothing was written");
        return Ok(());
    }
    if let Some(source) = &args.source_database_url {
        refuse_same_database(source, &config.database_url())?;
    }
    let (store, cipher) = open_target(config, settings.clone()).await?;
    let (batch, report) = read_source(args, &vars, server_key.as_ref(), &cipher, &settings.pools).await?;
    println!("{report}");
    let mode = if args.merge { ImportMode::Merge } else { ImportMode::Fresh };
    let outcome = store.import(&batch, mode).await.map_err(|error| match error {
        DomainError::Invalid(errors) if mode == ImportMode::Fresh && errors.get("database").is_some() => {
            anyhow::anyhow!(
                "this installation's database already holds users or devices: import into an empty \
                 database, or add --merge to add to it (taken emails, keys and addresses are skipped)"
            )
        }
        other => anyhow::Error::new(other).context("importing into this installation's database"),
    })?;
    print_outcome(&outcome);
    Ok(())
}

/// Refuses to import a Firezone database into itself: this installation's database is
/// migrated before the import, which would add Ferrozone's tables to Firezone's. Firezone's
/// `DATABASE_*` variables, which Ferrozone reads too, make that an easy mistake.
fn refuse_same_database(source: &str, target: &str) -> anyhow::Result<()> {
    let place = |url: &str| {
        let url = url::Url::parse(url).ok()?;
        let host = url.host_str()?.to_ascii_lowercase();
        Some((host, url.port().unwrap_or(5432), url.path().trim_start_matches('/').to_owned()))
    };
    match (place(source), place(target)) {
        (Some(a), Some(b)) if a == b => bail!(
            "--source-database-url names this installation's own database ({}): set FERROZONE_DATABASE_URL \
             to another database (or none, for SQLite) to import into",
            ferrozone_store::Redacted(target)
        ),
        _ => Ok(()),
    }
}

/// The source's variables: from its env or secrets file, then the flags.
fn variables(args: &FirezoneImport) -> anyhow::Result<Variables> {
    let mut vars = match (&args.env_file, &args.secrets_file) {
        (Some(path), _) => Variables::from_env_file(&read_secret_file(path)?)
            .with_context(|| format!("reading the env file {}", path.display()))?,
        (None, Some(path)) => Variables::from_secrets_json(&read_secret_file(path)?)
            .with_context(|| format!("reading the secrets file {}", path.display()))?,
        (None, None) => Variables::default(),
    };
    if let Some(key) = &args.database_encryption_key {
        vars.set(DATABASE_ENCRYPTION_KEY, key);
    }
    if let Some(key) = &args.guardian_secret_key {
        vars.set(GUARDIAN_SECRET_KEY, key);
    }
    Ok(vars)
}

fn read_secret_file(path: &Path) -> anyhow::Result<Zeroizing<String>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(Zeroizing::new(text))
}

fn read_server_key(path: &Path) -> anyhow::Result<ServerKey> {
    ServerKey::from_file_text(&read_secret_file(path)?).with_context(|| format!("in {}", path.display()))
}

/// This installation's store, migrated, and its key, checked against the database.
async fn open_target(config: &Config, settings: Settings) -> anyhow::Result<(Arc<dyn Store>, Cipher)> {
    let cipher = crate::secret::load(config)?;
    let store = open_database(config, &cipher).await?.into_store();
    Domain::open(store.clone(), Arc::new(settings), cipher.clone()).await?;
    Ok((store, cipher))
}

/// Reads the source database, or the dump loaded into a scratch database dropped after.
async fn read_source(
    args: &FirezoneImport,
    vars: &Variables,
    server_key: Option<&ServerKey>,
    cipher: &Cipher,
    pools: &Pools,
) -> anyhow::Result<(ImportBatch, Report)> {
    if let Some(url) = &args.source_database_url {
        return prepare(url, vars, server_key, cipher, pools).await;
    }
    let (Some(dump), Some(server)) = (&args.dump, &args.scratch_database_url) else {
        bail!("give --source-database-url, or --dump with --scratch-database-url");
    };
    dump::check_scratch_role(server, args.allow_privileged_scratch_role).await?;
    let scratch = ScratchDatabase::create(server, "ferrozone_import").await?;
    let result = match dump::load(dump, &scratch.url).await {
        Ok(()) => prepare(&scratch.url, vars, server_key, cipher, pools).await,
        Err(e) => Err(e),
    };
    let dropped = scratch.drop_now().await;
    let read = result?;
    dropped?;
    Ok(read)
}

fn print_outcome(outcome: &ImportOutcome) {
    println!(
        "\nimported: {} users, {} devices, {} tokens, {} rules, {} provider sign-ins, {} authenticators",
        outcome.users, outcome.devices, outcome.tokens, outcome.rules, outcome.oidc_connections, outcome.totp
    );
    if !outcome.skipped.is_empty() {
        println!("skipped by this installation's database ({}):", outcome.skipped.len());
        for s in &outcome.skipped {
            println!("  {} {}: {}", s.kind, s.id, s.reason);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_source_may_not_be_this_installations_own_database() {
        let refused = super::refuse_same_database(
            "postgres://firezone:a@DB:5432/firezone",
            "postgres://other:b@db/firezone?sslmode=require",
        );
        assert!(format!("{:#}", refused.unwrap_err()).contains("this installation's own database"));
        assert!(super::refuse_same_database("postgres://db/firezone", "postgres://db/ferrozone").is_ok());
        assert!(super::refuse_same_database("postgres://db/firezone", "postgres://db:5433/firezone").is_ok());
        assert!(super::refuse_same_database("postgres://db/firezone", "sqlite://data/ferrozone.db").is_ok());
    }
}
