//! The sending loop. Each process runs one: it leases due messages (polling, so that
//! messages queued by any process sharing the database are sent; woken at once by its own),
//! sends up to [`Options::concurrency`] at a time, and records each attempt:
//!
//! - sent: the message is marked sent and emptied;
//! - refused for good (a 5xx answer), or failing for [`Options::give_up_after`]: given up,
//!   emptied, the error kept for the invitations page;
//! - otherwise: tried again after a delay that doubles from [`Options::first_backoff`].
//!
//! A message is marked only after the server's answer, and only while this process holds
//! its lease: one whose sender dies mid-way is sent again once the lease expires (at least
//! once, never lost).

use std::sync::Arc;
use std::time::Duration;

use ferrozone_domain::email::{self, EmailLease, EmailOutcome};
use ferrozone_domain::service::mail::MailOutbox;
use ferrozone_domain::Timestamp;
use tokio::task::JoinSet;
use uuid::Uuid;

use crate::smtp::Mailer;

/// The most bytes of an error kept.
const MAX_ERROR_LEN: usize = 500;

/// How the worker paces itself; the defaults are the product's, tests shorten them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Messages sent at once.
    pub concurrency: usize,
    /// How often due messages are looked for.
    pub poll: Duration,
    /// How long a lease lasts (longer than one attempt can take).
    pub lease: Duration,
    pub first_backoff: Duration,
    pub max_backoff: Duration,
    pub give_up_after: Duration,
    /// How often old rows are pruned.
    pub prune_every: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            concurrency: 4,
            poll: Duration::from_secs(5),
            lease: Duration::from_secs(120),
            first_backoff: Duration::from_secs(email::FIRST_BACKOFF_SECS),
            max_backoff: Duration::from_secs(email::MAX_BACKOFF_SECS),
            give_up_after: Duration::from_secs(email::GIVE_UP_AFTER_SECS),
            prune_every: Duration::from_secs(3600),
        }
    }
}

/// The mail worker of one process.
pub struct Worker {
    outbox: MailOutbox,
    mailer: Arc<Mailer>,
    options: Options,
    /// This process's name on its leases.
    owner: Uuid,
}

impl Worker {
    pub fn new(outbox: MailOutbox, mailer: Mailer, options: Options) -> Self {
        Self { outbox, mailer: Arc::new(mailer), options, owner: Uuid::new_v4() }
    }

    /// Sends until the task is dropped. A database error is logged and retried at the next
    /// poll: the worker itself never ends.
    pub async fn run(self) -> anyhow::Result<()> {
        let queued = self.outbox.queued();
        let mut poll = tokio::time::interval(self.options.poll);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut pruned_at = tokio::time::Instant::now();
        loop {
            tokio::select! {
                _ = poll.tick() => {}
                _ = queued.notified() => {}
            }
            // A full batch means more may be due: go on without waiting.
            while self.send_due().await == self.options.concurrency {}
            if pruned_at.elapsed() >= self.options.prune_every {
                pruned_at = tokio::time::Instant::now();
                self.prune().await;
            }
        }
    }

    /// Leases the due messages (up to the concurrency), sends them and records each
    /// attempt; returns how many were leased.
    pub async fn send_due(&self) -> usize {
        let now = Timestamp::now();
        let limit = u32::try_from(self.options.concurrency).unwrap_or(u32::MAX);
        let leases = match self.outbox.claim(self.owner, now, plus(now, self.options.lease), limit).await {
            Ok(leases) => leases,
            Err(e) => {
                tracing::warn!(error = %e, "claiming emails failed");
                return 0;
            }
        };
        let count = leases.len();
        let mut sending = JoinSet::new();
        for lease in leases {
            let (outbox, mailer, options, owner) = (self.outbox.clone(), self.mailer.clone(), self.options, self.owner);
            sending.spawn(async move {
                let outcome = attempt(&outbox, &mailer, &options, &lease).await;
                if let EmailOutcome::Failed { error, .. } | EmailOutcome::GaveUp { error } = &outcome {
                    tracing::warn!(email.id = %lease.id, error = %error, gave_up = matches!(outcome, EmailOutcome::GaveUp { .. }), "sending an email failed");
                } else {
                    tracing::info!(email.id = %lease.id, "email sent");
                }
                match outbox.record(lease.id, owner, &outcome).await {
                    Ok(true) => {}
                    Ok(false) => tracing::warn!(email.id = %lease.id, "an email's lease was lost before its attempt was recorded"),
                    Err(e) => tracing::warn!(email.id = %lease.id, error = %e, "recording an email attempt failed"),
                }
            });
        }
        while sending.join_next().await.is_some() {}
        count
    }

    async fn prune(&self) {
        let before = Timestamp::now().plus_days(-email::KEPT_DAYS);
        match self.outbox.prune(before, 1000).await {
            Ok(0) => {}
            Ok(pruned) => tracing::info!(pruned, "old emails and sign-in links pruned"),
            Err(e) => tracing::warn!(error = %e, "pruning emails failed"),
        }
    }
}

/// One attempt at `lease`'s message, and what it came to.
async fn attempt(outbox: &MailOutbox, mailer: &Mailer, options: &Options, lease: &EmailLease) -> EmailOutcome {
    let message = match outbox.open(lease) {
        Ok(message) => message,
        Err(e) => return EmailOutcome::GaveUp { error: format!("the queued message does not open: {e}") },
    };
    let Err(failure) = mailer.send(&message).await else { return EmailOutcome::Sent };
    let error = truncated(failure.text);
    let now = Timestamp::now();
    let failing_for = now.micros().saturating_sub(lease.inserted_at.micros());
    if failure.permanent || failing_for >= micros(options.give_up_after) {
        return EmailOutcome::GaveUp { error };
    }
    let delay = email::backoff(options.first_backoff, options.max_backoff, lease.attempts + 1);
    EmailOutcome::Failed { error, next_attempt_at: plus(now, delay) }
}

fn truncated(mut text: String) -> String {
    if text.len() > MAX_ERROR_LEN {
        let mut end = MAX_ERROR_LEN;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

fn plus(at: Timestamp, duration: Duration) -> Timestamp {
    Timestamp::from_micros(at.micros().saturating_add(micros(duration)))
}

fn micros(duration: Duration) -> i64 {
    i64::try_from(duration.as_micros()).unwrap_or(i64::MAX)
}
