//! What the assertion consumer spends on responses, bounded: the body it reads (a setting,
//! smaller than the API's; the HTTP layer reads it), and how many responses are verified at
//! once. Parsing, canonicalization and signature checks run on the blocking pool, never on
//! the async workers; at most `concurrency` at a time, `concurrency` more may wait, and a
//! response beyond those is turned away at once (the HTTP layer answers 503 with
//! `Retry-After`).

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The consumer's body limit unless `FERROZONE_SAML_CONSUMER_BODY_LIMIT` says otherwise. Real
/// responses are under about 50 KB of XML (67 KB as base64); 256 KiB leaves room for IdPs
/// that send many attributes or certificates.
pub const DEFAULT_BODY_LIMIT: usize = 256 * 1024;

/// The consumer's limits (`FERROZONE_SAML_VERIFY_CONCURRENCY`,
/// `FERROZONE_SAML_CONSUMER_BODY_LIMIT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SamlLimits {
    /// Responses verified at once (as many more may wait).
    pub concurrency: usize,
    /// The largest request body the consumer reads, in bytes.
    pub body_limit: usize,
}

impl Default for SamlLimits {
    /// One verification per core, [`DEFAULT_BODY_LIMIT`].
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        Self { concurrency: cores, body_limit: DEFAULT_BODY_LIMIT }
    }
}

/// Admission to verification: `concurrency` run, as many wait, the rest are turned away.
/// Clones share the queue.
#[derive(Debug, Clone)]
pub(crate) struct Gate {
    admitted: Arc<Semaphore>,
    running: Arc<Semaphore>,
}

/// A response admitted to verification (holding a place in the queue).
#[derive(Debug)]
pub(crate) struct Admitted {
    place: OwnedSemaphorePermit,
    running: Arc<Semaphore>,
}

/// A response being verified: dropped when its verification ends.
#[derive(Debug)]
pub(crate) struct Running {
    _place: OwnedSemaphorePermit,
    _slot: OwnedSemaphorePermit,
}

impl Gate {
    pub(crate) fn new(concurrency: usize) -> Self {
        let concurrency = concurrency.max(1);
        Self { admitted: Arc::new(Semaphore::new(concurrency * 2)), running: Arc::new(Semaphore::new(concurrency)) }
    }

    /// A place, or `None` when as many responses as allowed are already running or waiting.
    pub(crate) fn try_enter(&self) -> Option<Admitted> {
        let place = Arc::clone(&self.admitted).try_acquire_owned().ok()?;
        Some(Admitted { place, running: Arc::clone(&self.running) })
    }
}

impl Admitted {
    /// Waits for a verification slot.
    pub(crate) async fn run(self) -> Running {
        let slot = self.running.acquire_owned().await.expect("the verification semaphore is never closed");
        Running { _place: self.place, _slot: slot }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn admits_twice_the_concurrency_and_frees_places_when_done() {
        let gate = Gate::new(1);
        let first = gate.try_enter().expect("a place");
        let second = gate.try_enter().expect("a place to wait in");
        assert!(gate.try_enter().is_none(), "running and waiting are full");
        let running = first.run().await;
        drop(running);
        let third = gate.try_enter().expect("the first's place is free again");
        drop((second, third));
        assert!(Gate::new(0).try_enter().is_some(), "at least one runs");
    }
}
