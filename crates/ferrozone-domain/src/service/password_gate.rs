//! The bound on password hashing: each argon2 run holds 19 MiB and a core for tens of
//! milliseconds, so at most `hash_concurrency` run at once, at most `hash_queue` more wait
//! for a turn, and any other is refused at once with [`DomainError::Busy`] (a 503).
//! `hash_reserve` of the waiting places are kept for the checks of accounts that have a
//! password: work against the dummy hash (an unknown account, or one without a password)
//! goes through [`PasswordGate::run_unreserved`] and is refused once only those are left,
//! so a flood of made-up emails cannot keep the real accounts out.
//!
//! The runs happen on `hash_concurrency` threads of their own, not on tokio's blocking
//! pool: that pool starts a new thread whenever none is idle, and glibc gives each new
//! thread its own malloc arena, which keeps the 19 MiB it last freed. Through the blocking
//! pool, a burst of sign-ins left hundreds of MiB resident however few ran at once; on
//! the same few threads the memory is reused, and stays flat.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};

use crate::error::{DomainError, Result};
use crate::settings::PasswordLimits;

/// What a refused password operation says.
pub const BUSY: &str = "too many password sign-ins or changes are in progress";

type Job = Box<dyn FnOnce() + Send>;

#[derive(Debug)]
pub struct PasswordGate {
    jobs: Sender<Job>,
    /// Operations admitted (running or waiting for a turn).
    admitted: Arc<AtomicUsize>,
    capacity: usize,
    /// What work outside the reserve may fill of `capacity`.
    unreserved: usize,
}

/// One admitted operation; dropping it (when the work is done) lets another in.
struct Admission(Arc<AtomicUsize>);

impl Drop for Admission {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl PasswordGate {
    /// Starts the `hash_concurrency` threads; they end when the gate is dropped.
    pub fn new(limits: &PasswordLimits) -> Self {
        let running = limits.hash_concurrency.max(1);
        let (jobs, queue) = channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        for i in 0..running {
            let queue = Arc::clone(&queue);
            std::thread::Builder::new()
                .name(format!("password-{i}"))
                .spawn(move || work(&queue))
                .expect("starting a password hashing thread: without it no password can be checked");
        }
        let capacity = running.saturating_add(limits.hash_queue);
        let unreserved = capacity - limits.hash_reserve.min(limits.hash_queue);
        Self { jobs, admitted: Arc::new(AtomicUsize::new(0)), capacity, unreserved }
    }

    /// Operations admitted right now (running or waiting).
    pub fn admitted(&self) -> usize {
        self.admitted.load(Ordering::Acquire)
    }

    /// Runs `work` on a password thread when one is free; `Busy` at once when the queue is
    /// full. The admission goes with the work, so a caller that gives up waiting (a closed
    /// connection) does not make room while its work still runs.
    pub async fn run<T: Send + 'static>(&self, work: impl FnOnce() -> T + Send + 'static) -> Result<T> {
        self.run_within(self.capacity, work).await
    }

    /// [`run`](Self::run) for work that may not take the reserve (a check against the dummy
    /// hash): `Busy` once only the reserved places are left.
    pub async fn run_unreserved<T: Send + 'static>(&self, work: impl FnOnce() -> T + Send + 'static) -> Result<T> {
        self.run_within(self.unreserved, work).await
    }

    async fn run_within<T: Send + 'static>(
        &self,
        limit: usize,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T> {
        let admission = self.admit(limit)?;
        let (answer, answered) = tokio::sync::oneshot::channel();
        let span = tracing::Span::current();
        let job: Job = Box::new(move || {
            let result = catch_unwind(AssertUnwindSafe(|| span.in_scope(work)));
            // Room first, then the answer: a caller that goes on at once finds the room.
            drop(admission);
            match result {
                Ok(value) => drop(answer.send(value)),
                Err(_) => tracing::error!("a password operation panicked"),
            }
        });
        let sent = self.jobs.send(job);
        if sent.is_err() {
            return Err(DomainError::Internal(anyhow::anyhow!("the password threads have stopped")));
        }
        answered.await.map_err(|_| DomainError::Internal(anyhow::anyhow!("a password operation failed")))
    }

    fn admit(&self, limit: usize) -> Result<Admission> {
        let taken = self.admitted.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < limit).then_some(n + 1));
        match taken {
            Ok(_) => Ok(Admission(Arc::clone(&self.admitted))),
            Err(_) => Err(DomainError::Busy(BUSY)),
        }
    }
}

/// A password thread: runs jobs until the gate is dropped. A job that panics fails only
/// itself (its caller gets an error).
fn work(queue: &Mutex<Receiver<Job>>) {
    loop {
        let job = queue.lock().unwrap_or_else(std::sync::PoisonError::into_inner).recv();
        let Ok(job) = job else { return };
        job();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(running: usize, queue: usize) -> Arc<PasswordGate> {
        reserving_gate(running, queue, 0)
    }

    fn reserving_gate(running: usize, queue: usize, reserve: usize) -> Arc<PasswordGate> {
        let limits = PasswordLimits {
            hash_concurrency: running,
            hash_queue: queue,
            hash_reserve: reserve,
            ..PasswordLimits::default()
        };
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
    async fn unreserved_work_leaves_the_reserve_to_the_rest() {
        let gate = reserving_gate(1, 2, 1);
        let (running, release_running) = hold(&gate).await;
        let (waiting, release_waiting) = hold(&gate).await;
        assert!(matches!(gate.run_unreserved(|| ()).await, Err(DomainError::Busy(BUSY))), "only the reserve is left");
        let (reserved, release_reserved) = hold(&gate).await;
        assert_eq!(gate.admitted(), 3, "the reserve admits other work");
        for release in [release_running, release_waiting, release_reserved] {
            release.send(()).unwrap();
        }
        for task in [running, waiting, reserved] {
            task.await.unwrap().unwrap();
        }
        assert_eq!(gate.run_unreserved(|| 1).await.unwrap(), 1, "room again");
        assert_eq!(reserving_gate(1, 0, 5).unreserved, 1, "the reserve is at most the queue");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_panic_fails_only_its_own_operation() {
        let gate = gate(1, 0);
        assert!(matches!(gate.run(|| panic!("boom")).await, Err(DomainError::Internal(_))));
        assert_eq!(gate.run(|| 1).await.unwrap(), 1, "the thread still serves");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_caller_that_gives_up_keeps_its_turn_until_the_work_ends() {
        let gate = gate(1, 0);
        let (task, release) = hold(&gate).await;
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
