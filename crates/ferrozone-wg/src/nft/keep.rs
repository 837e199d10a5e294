//! Keeping the table as rendered: level-triggered, like the peers' reconciler.

use std::time::Duration;

use super::apply::{Nft, TableState};

/// Holds the table to `ruleset`, re-applying it whenever the table differs from what the last
/// apply left (flushed, deleted or edited behind Ferrozone's back) or the ruleset changed.
#[derive(Debug)]
pub struct Keeper {
    nft: Nft,
    ruleset: String,
    /// The table as read right after the last successful apply of `ruleset`.
    applied: Option<TableState>,
}

impl Keeper {
    /// Nothing is applied until the first pass.
    pub fn new(nft: Nft, ruleset: String) -> Self {
        Self { nft, ruleset, applied: None }
    }

    /// A new desired table (a rendered text), applied by the next pass if it differs.
    pub fn set_ruleset(&mut self, ruleset: String) {
        if ruleset != self.ruleset {
            self.ruleset = ruleset;
            self.applied = None;
        }
    }

    /// One pass: reads the table and applies the ruleset when the table is not what the
    /// last apply left. Returns whether it applied.
    pub async fn reconcile_once(&mut self) -> anyhow::Result<bool> {
        if let Some(applied) = &self.applied {
            if *applied == self.nft.read().await? {
                return Ok(false);
            }
            tracing::warn!("the nftables table inet ferrozone changed behind Ferrozone's back: applying it again");
        }
        self.applied = None;
        self.nft.apply(&self.ruleset).await?;
        self.applied = Some(self.nft.read().await?);
        Ok(true)
    }

    /// Deletes the table (on clean shutdown, when a setting says so); no table is no error.
    pub async fn remove(&self) -> anyhow::Result<()> {
        self.nft.remove().await
    }

    /// Passes every `interval`, forever; a failed pass is logged and retried at the next.
    pub async fn run(&mut self, interval: Duration) {
        loop {
            if let Err(e) = self.reconcile_once().await {
                tracing::warn!(error = format!("{e:#}"), "applying the nftables table failed");
            }
            tokio::time::sleep(interval).await;
        }
    }
}
