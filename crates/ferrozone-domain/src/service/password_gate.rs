//! The bound on password hashing: each argon2 run holds 19 MiB and a core for tens of
//! milliseconds, so at most `hash_concurrency` run at once, at most `hash_queue` more wait
//! for a turn, and any other is refused at once with [`DomainError::Busy`] (a 503), so
//! memory stays flat whatever arrives.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::Semaphore;

use super::blocking;
use crate::error::{DomainError, Result};
use crate::settings::PasswordLimits;

/// What a refused password operation says.
pub const BUSY: &str = "too many password sign-ins or changes are in progress";

#[derive(Debug)]
pub struct PasswordGate {
    turns: Arc<Semaphore>,
    /// Operations admitted (running or waiting for a turn).
    admitted: Arc<AtomicUsize>,
    capacity: usize,
}

/// One admitted operation; dropping it lets another in.
struct Admission(Arc<AtomicUsize>);

impl Drop for Admission {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl PasswordGate {
    pub fn new(limits: &PasswordLimits) -> Self {
        let running = limits.hash_concurrency.max(1);
        Self {
            turns: Arc::new(Semaphore::new(running)),
            admitted: Arc::new(AtomicUsize::new(0)),
            capacity: running.saturating_add(limits.hash_queue),
        }
    }

    /// Operations admitted right now (running or waiting).
    pub fn admitted(&self) -> usize {
        self.admitted.load(Ordering::Acquire)
    }

    /// Runs `work` on a blocking thread when a turn is free; `Busy` at once when the queue is
    /// full. The admission and the turn go with the work, so a caller that gives up waiting
    /// (a closed connection) does not free a turn that is still in use.
    pub async fn run<T: Send + 'static>(&self, work: impl FnOnce() -> T + Send + 'static) -> Result<T> {
        let admission = self.admit()?;
        let turn = Arc::clone(&self.turns)
            .acquire_owned()
            .await
            .map_err(|_| DomainError::Internal(anyhow::anyhow!("the password gate was closed")))?;
        blocking(move || {
            let _held = (admission, turn);
            work()
        })
        .await
    }

    fn admit(&self) -> Result<Admission> {
        let taken =
            self.admitted.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < self.capacity).then_some(n + 1));
        match taken {
            Ok(_) => Ok(Admission(Arc::clone(&self.admitted))),
            Err(_) => Err(DomainError::Busy(BUSY)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(running: usize, queue: usize) -> Arc<PasswordGate> {
        let limits = PasswordLimits { hash_concurrency: running, hash_queue: queue, ..PasswordLimits::default() };
        Arc::new(PasswordGate::new(&limits))
    }

    /// Starts work that holds its turn until `release` gets a message; returns once admitted.
    async fn hold(gate: &Arc<PasswordGate>) -> (tokio::task::JoinHandle<Result<()>>, std::sync::mpsc::Sender<()>) {
        let (release, held) = std::sync::mpsc::channel::<()>();
        let before = gate.admitted();
        let task = tokio::spawn({
            let gate = Arc::clone(gate);
            async move { gate.run(move || held.recv().map_err(drop)).await.map(drop) }
        });
        while gate.admitted() == before {
            tokio::task::yield_now().await;
        }
        (task, release)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn refuses_past_the_running_and_waiting_bound_and_recovers() {
        let gate = gate(1, 1);
        let (running, release_running) = hold(&gate).await;
        let (waiting, release_waiting) = hold(&gate).await;
        assert_eq!(gate.admitted(), 2);
        assert!(matches!(gate.run(|| ()).await, Err(DomainError::Busy(BUSY))), "the queue is full");
        release_running.send(()).unwrap();
        release_waiting.send(()).unwrap();
        running.await.unwrap().unwrap();
        waiting.await.unwrap().unwrap();
        assert_eq!(gate.admitted(), 0);
        assert_eq!(gate.run(|| 7).await.unwrap(), 7, "room again");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_caller_that_gives_up_keeps_its_turn_until_the_work_ends() {
        let gate = gate(1, 0);
        let (task, release) = hold(&gate).await;
        while gate.turns.available_permits() > 0 {
            tokio::task::yield_now().await;
        }
        task.abort();
        let _ = task.await;
        assert!(matches!(gate.run(|| ()).await, Err(DomainError::Busy(_))), "the work still runs");
        release.send(()).unwrap();
        while gate.admitted() > 0 {
            tokio::task::yield_now().await;
        }
        gate.run(|| ()).await.unwrap();
    }
}
