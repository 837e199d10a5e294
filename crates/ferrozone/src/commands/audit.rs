//! `ferrozone audit`: the audit log from the command line.

use anyhow::Context;
use ferrozone_domain::audit::{verify_log, AuditKey, Verified};

use crate::cli::AuditCommand;
use crate::config::Config;
use crate::startup::open_database;

pub async fn run(config: &Config, cmd: AuditCommand) -> anyhow::Result<()> {
    match cmd {
        AuditCommand::Verify => verify(config).await,
        AuditCommand::List(args) => super::audit_list::list(config, args).await,
    }
}

/// Checks the chain with the secret key ([`verify_log`]): `audit chain intact: N events
/// (seq A..B)`, or an error naming the first break (exit status 1).
async fn verify(config: &Config) -> anyhow::Result<()> {
    let cipher = crate::secret::load(config)?;
    let db = open_database(config, &cipher).await?;
    let store = db.into_store();
    let key = AuditKey::from_cipher(&cipher);
    // Sealed first (on PostgreSQL, events committed but not yet chained), then checked.
    store.seal_audit_events().await.context("sealing pending audit events")?;
    let verified = verify_log(store.as_ref(), &key).await.context("reading the audit log")?;
    let pending = store.pending_audit_events().await.context("counting pending audit events")?;
    match verified {
        Ok(Verified { events, first: Some(first), last: Some(last) }) => {
            println!("audit chain intact: {events} events (seq {first}..{last}){}", pending_note(pending));
            Ok(())
        }
        Ok(_) => {
            println!("audit chain intact: 0 events{}", pending_note(pending));
            Ok(())
        }
        Err(broken) => match broken.at() {
            Some(seq) => anyhow::bail!("audit chain broken at event {seq}: {broken}"),
            None => anyhow::bail!("audit chain broken: {broken}"),
        },
    }
}

/// The events committed during the check, not yet sealed (and so not checked): on
/// PostgreSQL a running server's writes; the next check covers them.
fn pending_note(pending: u64) -> String {
    match pending {
        0 => String::new(),
        n => format!("; {n} events committed since are pending, to be sealed"),
    }
}
