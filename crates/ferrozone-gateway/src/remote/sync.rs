//! Keeping the held state in line with the control plane: a long poll at a time, each
//! answer applied to what is held (a snapshot replaces it; changes must lead from the held
//! version to the announced one, else the next poll asks for a snapshot), saved, and the data
//! plane woken. Failures are retried with backoff while the held state stays enforced; a
//! refused credential ends the gateway.

use std::sync::Arc;
use std::time::Duration;

use ferrozone_domain::gateway::state::Answer;
use ferrozone_domain::time::backoff;
use ferrozone_domain::Timestamp;
use tokio::sync::watch;

use super::client::{Client, PollError, POLL_WAIT_SECS};
use super::held::{Held, RemoteState};
use super::state_dir::StateDir;
use crate::gateway::{Gateway, Wakes};

/// The first and the longest wait after a failed poll: a control plane back from an outage
/// has every gateway in sync within seconds.
const RETRY: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(10));
/// The wait after a 409: another process holds the session until it lapses.
const HELD_ELSEWHERE_RETRY: Duration = Duration::from_secs(10);

/// What an answer does to the held state.
#[derive(Debug)]
pub enum Step {
    /// Nothing changed.
    Keep,
    /// A new state to hold.
    Take(Held),
    /// The answer does not lead on from the held state: ask for a snapshot.
    AskForSnapshot,
}

/// What `answer` applied to `held` gives.
pub fn assemble(held: &Held, answer: Answer) -> Step {
    match answer {
        Answer::Unchanged { version } if version == held.version => Step::Keep,
        Answer::Unchanged { .. } => Step::AskForSnapshot,
        Answer::Snapshot { version, state } => {
            if state.version() != version {
                // Another release may serialise differently: the snapshot still holds.
                tracing::debug!(%version, "a snapshot whose version this gateway computes otherwise");
            }
            Step::Take(Held { version, state })
        }
        Answer::Changes { from, .. } if from != held.version => Step::AskForSnapshot,
        Answer::Changes { version, changes, .. } => {
            let state = held.state.apply(changes);
            if state.version() == version {
                Step::Take(Held { version, state })
            } else {
                tracing::warn!(%version, "changes that do not give the announced version; asking for the whole state");
                Step::AskForSnapshot
            }
        }
    }
}

/// The state to start from: the saved one, else the control plane's snapshot, asked for
/// until it comes (a refused credential ends the wait).
pub async fn first_state(client: &Client, dir: &StateDir) -> anyhow::Result<Held> {
    if let Some((version, state)) = dir.load_state() {
        tracing::info!(%version, peers = state.peers.len(), "enforcing the saved state until the control plane answers");
        return Ok(Held { version, state });
    }
    let mut failures = 0;
    loop {
        match client.poll(None, POLL_WAIT_SECS, &[]).await {
            Ok(Answer::Snapshot { version, state }) => {
                dir.save_state(&version, &state)?;
                return Ok(Held { version, state });
            }
            Ok(_) => failures = 0,
            Err(PollError::Refused) => return Err(PollError::Refused.into()),
            Err(e) => {
                failures += 1;
                let wait = retry_wait(&e, failures);
                tracing::warn!(error = %e, retry_ms = wait.as_millis(), "no state from the control plane yet");
                tokio::time::sleep(wait).await;
            }
        }
    }
}

fn retry_wait(error: &PollError, failures: i64) -> Duration {
    match error {
        PollError::HeldElsewhere(_) => HELD_ELSEWHERE_RETRY,
        _ => backoff(RETRY.0, RETRY.1, failures),
    }
}

/// Polls until `stopping`, then ends the session; an error only for a refused credential.
pub async fn run(
    client: Arc<Client>,
    dir: StateDir,
    held: Arc<RemoteState>,
    (wakes, data_plane): (Wakes, Option<Gateway>),
    stopping: impl std::future::Future<Output = ()>,
) -> anyhow::Result<()> {
    tokio::select! {
        result = poll_forever(&client, &dir, &held, &wakes, data_plane.as_ref()) => result,
        () = stopping => {
            if let Err(e) = client.end_session().await {
                tracing::info!(error = %e, "the session could not be ended: it lapses in a minute");
            }
            Ok(())
        }
    }
}

async fn poll_forever(
    client: &Client,
    dir: &StateDir,
    held: &RemoteState,
    wakes: &Wakes,
    data_plane: Option<&Gateway>,
) -> anyhow::Result<()> {
    let (mut failures, mut snapshot) = (0, false);
    let mut connected = false;
    loop {
        let current = held.current();
        let since = (!snapshot).then_some(current.version.as_str());
        match client.poll(since, POLL_WAIT_SECS, &report(data_plane)).await {
            Ok(answer) => {
                if !connected || failures > 0 {
                    tracing::info!(version = answer.version(), "connected to the control plane");
                }
                (connected, failures) = (true, 0);
                snapshot = match assemble(&current, answer) {
                    Step::Take(next) => {
                        take(dir, held, wakes, next);
                        false
                    }
                    Step::Keep => false,
                    Step::AskForSnapshot => true,
                };
            }
            Err(PollError::Refused) => return Err(PollError::Refused.into()),
            Err(e) => {
                failures += 1;
                let wait = retry_wait(&e, failures);
                tracing::warn!(error = %e, retry_ms = wait.as_millis(), "polling the control plane failed; enforcing the state held");
                // Statistics going through again end the wait early: back in sync within
                // the statistics interval of the control plane's return.
                tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    () = client.reached() => {}
                }
            }
        }
    }
}

/// What the poll says of the data plane: its backend, peers applied and refused, and
/// whether its last reconcile failed (`none` without a backend).
fn report(data_plane: Option<&Gateway>) -> Vec<(&'static str, String)> {
    let Some(gateway) = data_plane else { return vec![("backend", "none".to_owned())] };
    let health = gateway.health();
    vec![
        ("backend", health.backend.to_owned()),
        ("applied", health.reconcile.applied.to_string()),
        ("refused", health.reconcile.refused.to_string()),
        ("failing", health.reconcile.last_failed.to_string()),
    ]
}

/// Holds `next`: saved (a failure is logged: the state is still enforced), then the data
/// plane woken.
fn take(dir: &StateDir, held: &RemoteState, wakes: &Wakes, next: Held) {
    let interface_changed = held.current().state.interface != next.state.interface;
    if let Err(e) = dir.save_state(&next.version, &next.state) {
        tracing::warn!(error = format!("{e:#}"), "saving the state failed");
    }
    if interface_changed {
        tracing::warn!("the interface's key or addresses changed: they apply when the gateway restarts");
    }
    tracing::debug!(version = %next.version, peers = next.state.peers.len(), "new state");
    held.replace(next);
    wakes.peers.notify_one();
    wakes.table.notify_one();
}

/// Wakes the data plane when the next VPN session among the held peers ends, so that the
/// peer goes then, with or without the control plane. Runs as long as the gateway.
pub async fn wake_at_expiries(mut held: watch::Receiver<Arc<Held>>, wakes: Wakes) -> anyhow::Result<()> {
    loop {
        let now = Timestamp::now();
        let next = held.borrow_and_update().state.next_expiry(now);
        let wait = next.map(|at| Duration::from_micros(u64::try_from(at.micros() - now.micros()).unwrap_or(0)));
        tokio::select! {
            changed = held.changed() => {
                if changed.is_err() {
                    return Ok(());
                }
            }
            () = sleep_or_forever(wait) => {
                wakes.peers.notify_one();
                wakes.table.notify_one();
            }
        }
    }
}

async fn sleep_or_forever(wait: Option<Duration>) {
    match wait {
        // A millisecond past the end, so that the pass it wakes finds the session over.
        Some(wait) => tokio::time::sleep(wait + Duration::from_millis(1)).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests;
