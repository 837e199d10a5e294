//! Keeping the table as desired: level-triggered, like the peers' reconciler.

use std::time::Duration;

use super::apply::{Nft, TableState};
use super::delta::Delta;
use super::generation::Generation;
use super::render::{render_with, Table};
use super::sets::SetElements;

/// What a pass did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    /// The table was as the last apply left it, and the desired table had not changed.
    Unchanged,
    /// The whole table was replaced: the first apply, a repair, or a change beyond the rules.
    Full,
    /// Only the rules changed: their set elements were added and deleted.
    Delta,
}

/// Holds the table to the desired [`Table`], re-applying it whenever the table differs from
/// what the last apply left (flushed, deleted or edited behind Ferrozone's back) or the
/// desired table changed. A change of the egress rules alone is applied as element
/// additions and deletions (one small transaction, milliseconds); anything else replaces
/// the whole table (one transaction too).
#[derive(Debug)]
pub struct Keeper {
    nft: Nft,
    /// The ruleset generation of nft's namespace; `None` when it cannot be read (every
    /// check then lists the table).
    generation: Option<Generation>,
    table: Table,
    sets: SetElements,
    applied: Option<Applied>,
    /// How many times the table was listed, for tests.
    listings: u64,
}

/// What the last successful apply left.
#[derive(Debug)]
struct Applied {
    table: Table,
    sets: SetElements,
    /// The table as read right after that apply.
    reading: TableState,
    /// The ruleset generation when the table was known to be `reading`: nothing has been
    /// committed since while the generation is still this one. `None`: not known.
    generation: Option<u32>,
}

impl Keeper {
    /// Nothing is applied until the first pass.
    pub fn new(nft: Nft, table: Table) -> Self {
        let sets = SetElements::of(&table.egress);
        let generation = nft
            .generation()
            .inspect_err(|e| {
                tracing::debug!(error = format!("{e:#}"), "no ruleset generation: every check lists the table")
            })
            .ok();
        Self { nft, generation, table, sets, applied: None, listings: 0 }
    }

    /// The ruleset generation now; `None` when it cannot be read.
    fn generation(&self) -> Option<u32> {
        let generation = self.generation.as_ref()?;
        generation
            .read()
            .inspect_err(|e| tracing::debug!(error = format!("{e:#}"), "reading the ruleset generation failed"))
            .ok()
    }

    /// Lists the table.
    async fn read(&mut self) -> anyhow::Result<TableState> {
        self.listings += 1;
        self.nft.read().await
    }

    /// How many times the table was listed.
    pub fn listings(&self) -> u64 {
        self.listings
    }

    /// A new desired table, applied by the next pass if it differs.
    pub fn set_table(&mut self, table: Table) {
        if table != self.table {
            self.sets = SetElements::of(&table.egress);
            self.table = table;
        }
    }

    /// One pass: whether it applied anything (see [`Keeper::reconcile`]).
    pub async fn reconcile_once(&mut self) -> anyhow::Result<bool> {
        Ok(self.reconcile().await? != Pass::Unchanged)
    }

    /// One pass. When the desired table is the one last applied: checks that the table is
    /// what that apply left (unchanged ruleset generation, else a listing of it) and
    /// replaces it if not. When only the rules changed: applies their delta without reading
    /// the table first (listing 10,000s of elements takes far longer than the delta) and
    /// brings the last reading up to date instead, so drift from before the delta is still
    /// seen, by the next pass. Anything else: replaces the table.
    pub async fn reconcile(&mut self) -> anyhow::Result<Pass> {
        let Some(mut applied) = self.applied.take() else { return self.full().await };
        if applied.table == self.table {
            if !self.still(&mut applied).await? {
                tracing::warn!("the nftables table inet ferrozone changed behind Ferrozone's back: applying it again");
                return self.full().await;
            }
            self.applied = Some(applied);
            return Ok(Pass::Unchanged);
        }
        if !same_structure(&applied.table, &self.table) {
            return self.full().await;
        }
        let delta = Delta::between(&applied.sets, &self.sets);
        if !delta.is_empty() {
            let before = self.generation();
            if let Err(e) = self.nft.apply(&delta.text()).await {
                tracing::warn!(error = format!("{e:#}"), "the rules' delta failed: replacing the whole table");
                return self.full().await;
            }
            // The delta was the only commit since the table was known: known still.
            let after = self.generation();
            let known = applied.generation.is_some() && before == applied.generation;
            applied.generation = after.filter(|&after| known && Some(after) == before.map(|g| g.wrapping_add(1)));
            let patched = match &mut applied.reading {
                TableState::Present(reading) => delta.patch(reading),
                TableState::Absent => false,
            };
            if !patched {
                (applied.reading, applied.generation) = self.read_known().await?;
            }
        }
        self.applied = Some(Applied { table: self.table.clone(), sets: self.sets.clone(), ..applied });
        Ok(Pass::Delta)
    }

    /// Whether the table is still as `applied` records: the ruleset generation has not
    /// moved since it was known, or (it moved, or is not known) a listing equals the record,
    /// which makes the generation of the listing known.
    async fn still(&mut self, applied: &mut Applied) -> anyhow::Result<bool> {
        if applied.generation.is_some() && self.generation() == applied.generation {
            return Ok(true);
        }
        let (reading, generation) = self.read_known().await?;
        if reading != applied.reading {
            return Ok(false);
        }
        applied.generation = generation;
        Ok(true)
    }

    /// A listing of the table, with the ruleset generation it was listed at when no commit
    /// came between the two readings of the generation around it.
    async fn read_known(&mut self) -> anyhow::Result<(TableState, Option<u32>)> {
        let before = self.generation();
        let reading = self.read().await?;
        let after = self.generation();
        Ok((reading, before.filter(|_| before == after)))
    }

    async fn full(&mut self) -> anyhow::Result<Pass> {
        self.nft.apply(&render_with(&self.table, &self.sets)).await?;
        self.remember().await?;
        Ok(Pass::Full)
    }

    /// Records the desired table as applied, with the table as it now reads.
    async fn remember(&mut self) -> anyhow::Result<()> {
        let (reading, generation) = self.read_known().await?;
        self.applied = Some(Applied { table: self.table.clone(), sets: self.sets.clone(), reading, generation });
        Ok(())
    }

    /// Deletes the table (on clean shutdown, when a setting says so); no table is no error.
    pub async fn remove(&self) -> anyhow::Result<()> {
        self.nft.remove().await
    }

    /// Passes every `interval`, forever; a failed pass is logged and retried at the next.
    pub async fn run(&mut self, interval: Duration) {
        loop {
            if let Err(e) = self.reconcile().await {
                tracing::warn!(error = format!("{e:#}"), "applying the nftables table failed");
            }
            tokio::time::sleep(interval).await;
        }
    }
}

/// Whether the two tables differ at most in their egress rules.
fn same_structure(a: &Table, b: &Table) -> bool {
    a.tunnel_networks == b.tunnel_networks
        && a.masquerade_on == b.masquerade_on
        && a.filter_host == b.filter_host
        && a.egress.wireguard == b.egress.wireguard
        && a.egress.default == b.egress.default
}
