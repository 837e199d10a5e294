//! Keeping the table as desired: level-triggered, like the peers' reconciler.

use std::time::Duration;

use super::apply::{Nft, TableState};
use super::delta::Delta;
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
    table: Table,
    sets: SetElements,
    applied: Option<Applied>,
}

/// What the last successful apply left.
#[derive(Debug)]
struct Applied {
    table: Table,
    sets: SetElements,
    /// The table as read right after that apply.
    reading: TableState,
}

impl Keeper {
    /// Nothing is applied until the first pass.
    pub fn new(nft: Nft, table: Table) -> Self {
        let sets = SetElements::of(&table.egress);
        Self { nft, table, sets, applied: None }
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

    /// One pass. When the desired table is the one last applied: reads the table and
    /// replaces it if it is not what that apply left. When only the rules changed: applies
    /// their delta without reading the table first (listing 10,000s of elements takes far
    /// longer than the delta) and brings the last reading up to date instead, so drift from
    /// before the delta is still seen, by the next pass. Anything else: replaces the table.
    pub async fn reconcile(&mut self) -> anyhow::Result<Pass> {
        let Some(mut applied) = self.applied.take() else { return self.full().await };
        if applied.table == self.table {
            if self.nft.read().await? != applied.reading {
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
            if let Err(e) = self.nft.apply(&delta.text()).await {
                tracing::warn!(error = format!("{e:#}"), "the rules' delta failed: replacing the whole table");
                return self.full().await;
            }
            let patched = match &mut applied.reading {
                TableState::Present(reading) => delta.patch(reading),
                TableState::Absent => false,
            };
            if !patched {
                applied.reading = self.nft.read().await?;
            }
        }
        self.applied = Some(Applied { table: self.table.clone(), sets: self.sets.clone(), reading: applied.reading });
        Ok(Pass::Delta)
    }

    async fn full(&mut self) -> anyhow::Result<Pass> {
        self.nft.apply(&render_with(&self.table, &self.sets)).await?;
        self.remember().await?;
        Ok(Pass::Full)
    }

    /// Records the desired table as applied, with the table as it now reads.
    async fn remember(&mut self) -> anyhow::Result<()> {
        let reading = self.nft.read().await?;
        self.applied = Some(Applied { table: self.table.clone(), sets: self.sets.clone(), reading });
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
