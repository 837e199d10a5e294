//! `ferrozone audit`: the audit log from the command line.

use anyhow::Context;
use ferrozone_domain::audit::{AuditHead, AuditKey, AuditQuery, Break, ChainStart, Verified, Verifier};
use ferrozone_domain::store::Store;

use crate::cli::AuditCommand;
use crate::config::Config;
use crate::startup::open_database;

/// Records read per page while verifying: a long chain is streamed, never held whole.
const PAGE: u32 = 1000;

pub async fn run(config: &Config, cmd: AuditCommand) -> anyhow::Result<()> {
    match cmd {
        AuditCommand::Verify => verify(config).await,
        AuditCommand::List(args) => super::audit_list::list(config, args).await,
    }
}

/// Checks the chain with the secret key: `audit chain intact: N events (seq A..B)`, or an
/// error naming the first event that breaks it (exit status 1).
async fn verify(config: &Config) -> anyhow::Result<()> {
    let cipher = crate::secret::load(config)?;
    let db = open_database(config, &cipher).await?;
    let store = db.into_store();
    let key = AuditKey::from_cipher(&cipher);
    // Sealed first (on PostgreSQL, events committed but not yet chained), then checked.
    store.seal_audit_events().await.context("sealing pending audit events")?;
    let verified = check(store.as_ref(), &key).await?;
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
        Err(broken) => anyhow::bail!("audit chain broken at event {}: {broken}", broken_at(&broken)),
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

/// Streams the events up to the head read first (events appended meanwhile by a running
/// server come after it and are left for the next check) through a [`Verifier`].
async fn check(store: &dyn Store, key: &AuditKey) -> anyhow::Result<Result<Verified, Break>> {
    let head: AuditHead = store.audit_head().await.context("reading the audit chain's head")?;
    let mut verifier = Verifier::new(key, ChainStart::from(&head));
    let mut after = head.pruned_seq;
    loop {
        let query = AuditQuery { after_seq: Some(after), limit: PAGE, ..AuditQuery::default() };
        let page = store.audit_records(&query).await.context("reading audit events")?;
        let Some(last) = page.last().map(|record| record.seq) else { break };
        for record in page.iter().take_while(|record| record.seq <= head.last_seq) {
            if let Err(broken) = verifier.push(record) {
                return Ok(Err(broken));
            }
        }
        if last >= head.last_seq || page.len() < PAGE as usize {
            break;
        }
        after = last;
    }
    Ok(verifier.finish(&head))
}

/// The event a break is reported at: the first one that is not as recorded.
fn broken_at(broken: &Break) -> i64 {
    match *broken {
        Break::Edited { seq } | Break::Unlinked { seq } => seq,
        Break::Missing { expected, .. } => expected,
        Break::Head { head_seq, last_read } => head_seq.min(last_read + 1),
    }
}
