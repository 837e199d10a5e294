//! The tasks of `ferrozone serve`, watched in one place. Every task runs for the life of
//! the process: one that ends (returns or panics) before shutdown is a fault, logged with its
//! name, and the process stops with an error. Shutdown is ordered: the draining tasks (the
//! HTTP server) are told to stop and finish what they hold, then the background tasks are
//! stopped.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::{Id, JoinError, JoinSet};

#[derive(Debug)]
pub struct Supervisor {
    tasks: JoinSet<anyhow::Result<()>>,
    names: HashMap<Id, &'static str>,
    /// The tasks that end by themselves once told to stop.
    draining: HashSet<Id>,
    stop: watch::Sender<bool>,
}

impl Default for Supervisor {
    fn default() -> Self {
        Self { tasks: JoinSet::new(), names: HashMap::new(), draining: HashSet::new(), stop: watch::Sender::new(false) }
    }
}

impl Supervisor {
    /// A background task: stopped (aborted at its next await) once the draining tasks ended.
    pub fn spawn(&mut self, name: &'static str, task: impl Future<Output = anyhow::Result<()>> + Send + 'static) {
        let id = self.tasks.spawn(task).id();
        self.names.insert(id, name);
    }

    /// A task that ends by itself after [`Self::stopping`] resolves (the HTTP server's
    /// graceful shutdown).
    pub fn spawn_draining(
        &mut self,
        name: &'static str,
        task: impl Future<Output = anyhow::Result<()>> + Send + 'static,
    ) {
        let id = self.tasks.spawn(task).id();
        self.names.insert(id, name);
        self.draining.insert(id);
    }

    /// Resolves when shutdown begins.
    pub fn stopping(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut stop = self.stop.subscribe();
        async move {
            // An error means the supervisor is gone: stop too.
            let _ = stop.wait_for(|stopping| *stopping).await;
        }
    }

    /// Runs until `signal` resolves (then `Ok`) or a task ends first (then the error names
    /// it); either way every task has ended when it returns. Draining tasks get `grace` to
    /// finish before they are aborted with the others.
    pub async fn run(mut self, signal: impl Future<Output = ()>, grace: Duration) -> anyhow::Result<()> {
        let outcome = tokio::select! {
            () = signal => Ok(()),
            ended = self.tasks.join_next_with_id() => Err(match ended {
                Some(ended) => self.fault(ended),
                None => anyhow::anyhow!("no task to supervise"),
            }),
        };
        self.shut_down(grace).await;
        outcome
    }

    /// Logs an unexpected end and describes it.
    fn fault(&mut self, ended: Result<(Id, anyhow::Result<()>), JoinError>) -> anyhow::Error {
        let (id, cause) = match ended {
            Ok((id, Ok(()))) => (id, "it returned".to_owned()),
            Ok((id, Err(e))) => (id, format!("{e:#}")),
            Err(e) if e.is_panic() => (e.id(), format!("it panicked: {}", panic_message(e))),
            Err(e) => (e.id(), "it was cancelled".to_owned()),
        };
        let name = self.name(id);
        tracing::error!(task = name, %cause, "a task of the server ended unexpectedly; stopping");
        anyhow::anyhow!("the task `{name}` ended unexpectedly: {cause}")
    }

    fn name(&mut self, id: Id) -> &'static str {
        self.draining.remove(&id);
        self.names.remove(&id).unwrap_or("unknown")
    }

    /// Tells the draining tasks to stop and waits for them (at most `grace`), then stops
    /// the rest.
    async fn shut_down(&mut self, grace: Duration) {
        self.stop.send_replace(true);
        let drained = tokio::time::timeout(grace, self.wait_for_draining()).await;
        if drained.is_err() {
            tracing::warn!(grace_secs = grace.as_secs(), "shutdown grace period over; closing what remains");
        }
        self.tasks.abort_all();
        while let Some(ended) = self.tasks.join_next_with_id().await {
            match ended {
                Ok((id, Err(e))) => tracing::warn!(task = self.name(id), error = format!("{e:#}"), "task failed"),
                Err(e) if e.is_panic() => {
                    let id = e.id();
                    tracing::error!(task = self.name(id), cause = panic_message(e), "task panicked");
                }
                Ok((id, Ok(()))) => tracing::debug!(task = self.name(id), "task stopped"),
                Err(e) => tracing::debug!(task = self.name(e.id()), "task stopped"),
            }
        }
    }

    async fn wait_for_draining(&mut self) {
        while !self.draining.is_empty() {
            let Some(ended) = self.tasks.join_next_with_id().await else { return };
            let id = ended.as_ref().map_or_else(JoinError::id, |(id, _)| *id);
            let name = self.name(id);
            match ended {
                Ok((_, Ok(()))) => tracing::debug!(task = name, "task stopped"),
                Ok((_, Err(e))) => tracing::warn!(task = name, error = format!("{e:#}"), "task failed while stopping"),
                Err(e) => tracing::error!(task = name, error = %e, "task failed while stopping"),
            }
        }
    }
}

fn panic_message(e: JoinError) -> String {
    match e.try_into_panic() {
        Ok(payload) => payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(no message)".to_owned()),
        Err(e) => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    use tokio::sync::oneshot;

    use super::*;

    const GRACE: Duration = Duration::from_secs(3600);

    async fn forever() -> anyhow::Result<()> {
        std::future::pending().await
    }

    /// Sets its flag when dropped (its task stopped).
    struct SetOnDrop(Arc<AtomicBool>);

    impl Drop for SetOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    #[tokio::test]
    async fn a_task_that_returns_is_fatal_and_named() {
        let mut tasks = Supervisor::default();
        tasks.spawn("reconciler", forever());
        tasks.spawn("session janitor", async { Ok(()) });
        let error = tasks.run(std::future::pending(), GRACE).await.unwrap_err();
        assert_eq!(error.to_string(), "the task `session janitor` ended unexpectedly: it returned");
    }

    #[tokio::test]
    async fn a_task_that_fails_or_panics_is_fatal_and_named() {
        let mut tasks = Supervisor::default();
        tasks.spawn("statistics", async { Err(anyhow::anyhow!("interface gone")) });
        let error = tasks.run(std::future::pending(), GRACE).await.unwrap_err();
        assert_eq!(error.to_string(), "the task `statistics` ended unexpectedly: interface gone");

        let mut tasks = Supervisor::default();
        tasks.spawn("OpenID Connect refresh job", async { panic!("a bug") });
        let error = tasks.run(std::future::pending(), GRACE).await.unwrap_err();
        assert_eq!(error.to_string(), "the task `OpenID Connect refresh job` ended unexpectedly: it panicked: a bug");
    }

    #[tokio::test]
    async fn a_draining_task_that_ends_before_shutdown_is_fatal() {
        let mut tasks = Supervisor::default();
        tasks.spawn_draining("HTTP server", async { Err(anyhow::anyhow!("accept failed")) });
        tasks.spawn("reconciler", forever());
        let error = tasks.run(std::future::pending(), GRACE).await.unwrap_err();
        assert_eq!(error.to_string(), "the task `HTTP server` ended unexpectedly: accept failed");
    }

    /// On the signal the HTTP server drains while background tasks still run; then they stop.
    #[tokio::test]
    async fn shutdown_drains_first_then_stops_the_rest() {
        let mut tasks = Supervisor::default();
        let background_stopped = Arc::new(AtomicBool::new(false));
        let guard = SetOnDrop(background_stopped.clone());
        tasks.spawn("reconciler", async move {
            let _guard = guard;
            forever().await
        });
        let stopping = tasks.stopping();
        let seen = background_stopped.clone();
        let (drained_tx, drained_rx) = oneshot::channel();
        tasks.spawn_draining("HTTP server", async move {
            stopping.await;
            // Draining: the background tasks still run.
            tokio::task::yield_now().await;
            drained_tx.send(seen.load(Ordering::SeqCst)).unwrap();
            Ok(())
        });
        tasks.run(std::future::ready(()), GRACE).await.unwrap();
        assert!(!drained_rx.await.unwrap(), "background tasks ran while the server drained");
        assert!(background_stopped.load(Ordering::SeqCst), "background tasks stopped before run returned");
    }

    #[tokio::test]
    async fn a_server_that_does_not_drain_is_closed_after_the_grace_period() {
        let mut tasks = Supervisor::default();
        let stopped = Arc::new(AtomicBool::new(false));
        let guard = SetOnDrop(stopped.clone());
        tasks.spawn_draining("HTTP server", async move {
            let _guard = guard;
            forever().await
        });
        tasks.run(std::future::ready(()), Duration::from_millis(10)).await.unwrap();
        assert!(stopped.load(Ordering::SeqCst));
    }
}
