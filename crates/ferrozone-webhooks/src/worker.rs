//! The delivery loop. Every [`Options::poll`] it leases the endpoints that are due and
//! have events after their cursor (polling, so that events committed by any process sharing
//! the database are seen, and nothing is added to a change's path), and delivers to up to
//! [`Options::concurrency`] endpoints at once, each by one task:
//!
//! - the task reads the events after the endpoint's cursor, oldest first; events its filter
//!   does not want move the cursor without a request;
//! - it POSTs the next wanted event; a 2xx moves the cursor past it and the task goes on;
//! - a failure records the attempt and schedules the next one (1 s, doubling, up to an
//!   hour) and the task ends; once an event has failed for a day, its last attempt is
//!   recorded as `gave_up` and the cursor moves past it.
//!
//! The cursor moves only after the receiver's 2xx (or a give-up), and only while this
//! process holds the endpoint's lease, renewed before each attempt: an event is delivered
//! at least once, in seq order, whatever process dies when. A process that dies mid-way
//! leaves a lease that expires; another (or the same, restarted) takes over from the cursor.

use std::sync::Arc;
use std::time::Duration;

use ferrozone_domain::audit::{EventRecord, EventView};
use ferrozone_domain::service::webhooks::Outbox;
use ferrozone_domain::webhook::{self, Attempt, Outcome, Progress, WebhookLease};
use ferrozone_domain::Timestamp;
use tokio::task::JoinSet;
use uuid::Uuid;
use zeroize::Zeroizing;

use crate::client::{Client, Delivery, Limits};

/// Events read per batch after a cursor.
const BATCH: u32 = 100;

/// How the worker paces itself; the defaults are the product's, tests shorten them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Endpoints delivered to at once.
    pub concurrency: usize,
    /// How often due endpoints are looked for.
    pub poll: Duration,
    /// How long a lease lasts without renewal (longer than one attempt can take).
    pub lease: Duration,
    pub limits: Limits,
    /// The first retry's delay; each next one doubles...
    pub first_backoff: Duration,
    /// ...up to this.
    pub max_backoff: Duration,
    /// How long an event is retried before it is given up.
    pub give_up_after: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            concurrency: 8,
            poll: Duration::from_secs(1),
            lease: Duration::from_secs(30),
            limits: Limits::default(),
            first_backoff: Duration::from_secs(webhook::FIRST_BACKOFF_SECS),
            max_backoff: Duration::from_secs(webhook::MAX_BACKOFF_SECS),
            give_up_after: Duration::from_secs(webhook::GIVE_UP_AFTER_SECS),
        }
    }
}

impl Options {
    /// The delay before the next attempt after `attempts` failed ones.
    pub fn backoff(&self, attempts: i64) -> Duration {
        ferrozone_domain::time::backoff(self.first_backoff, self.max_backoff, attempts)
    }
}

/// The delivery worker of one process.
#[derive(Clone)]
pub struct Worker {
    outbox: Outbox,
    client: Client,
    options: Options,
    /// This process's name on its leases.
    owner: Uuid,
}

impl Worker {
    pub fn new(outbox: Outbox, options: Options) -> anyhow::Result<Self> {
        let client = Client::new(outbox.allow_private(), options.limits)?;
        Ok(Self { outbox, client, options, owner: Uuid::new_v4() })
    }

    /// Delivers until the task is dropped. A database error is logged and retried at the
    /// next poll: the worker itself never ends.
    pub async fn run(self) -> anyhow::Result<()> {
        let this = Arc::new(self);
        let mut running = JoinSet::new();
        let mut poll = tokio::time::interval(this.options.poll);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = poll.tick() => {}
                Some(_) = running.join_next(), if !running.is_empty() => continue,
            }
            let free = this.options.concurrency.saturating_sub(running.len());
            if free == 0 {
                continue;
            }
            match this.claim(free).await {
                Ok(leases) => {
                    for lease in leases {
                        let worker = this.clone();
                        running.spawn(async move { worker.deliver_endpoint(lease).await });
                    }
                }
                Err(e) => tracing::warn!(error = %e, "claiming webhooks failed"),
            }
        }
    }

    /// Leases up to `limit` due endpoints.
    async fn claim(&self, limit: usize) -> ferrozone_domain::error::Result<Vec<WebhookLease>> {
        let now = Timestamp::now();
        let limit = u32::try_from(limit).unwrap_or(u32::MAX);
        self.outbox.claim(self.owner, now, self.lease_until(now), limit).await
    }

    fn lease_until(&self, now: Timestamp) -> Timestamp {
        Timestamp::from_micros(now.micros().saturating_add(micros(self.options.lease)))
    }

    /// Works through one leased endpoint until it is caught up, fails, or the lease is lost.
    async fn deliver_endpoint(&self, lease: WebhookLease) {
        let id = lease.id;
        match self.deliver_leased(lease).await {
            Ok(()) => {}
            Err(e) => tracing::warn!(webhook.id = %id, error = %e, "webhook delivery stopped"),
        }
        if let Err(e) = self.outbox.release(id, self.owner).await {
            tracing::warn!(webhook.id = %id, error = %e, "releasing a webhook lease failed");
        }
    }

    async fn deliver_leased(&self, mut lease: WebhookLease) -> anyhow::Result<()> {
        let secret = Zeroizing::new(self.outbox.open_secret(&lease.secret)?.to_vec());
        loop {
            let events = self.outbox.events_after(lease.delivered_seq, BATCH).await?;
            let Some(last) = events.last().map(|e| e.seq) else { return Ok(()) };
            let skipped_to =
                |seq| events.iter().take_while(|e| e.seq < seq).last().map_or(lease.delivered_seq, |e| e.seq);
            let Some((record, view)) = events.iter().find_map(|record| self.wanted(&lease, record)) else {
                // Nothing in the batch is wanted: move past it without a request.
                let progress = progress(None, last, Timestamp::now(), None, 0);
                if !self.outbox.record(lease.id, self.owner, &progress).await? {
                    return Ok(());
                }
                lease.delivered_seq = last;
                continue;
            };
            if !self.outbox.renew(lease.id, self.owner, self.lease_until(Timestamp::now())).await? {
                return Ok(());
            }
            let delivery = self.client.deliver(&lease.url, &secret, &view).await;
            let before = skipped_to(record.seq);
            let (progress, done) = self.after_attempt(&lease, record.seq, before, &delivery);
            if !self.outbox.record(lease.id, self.owner, &progress).await? || !done {
                return Ok(());
            }
            lease.delivered_seq = progress.delivered_seq;
            lease.failing_since = None;
            lease.attempts = 0;
        }
    }

    /// The event of `record` as sent, if the endpoint wants it. An event that does not
    /// decode (an edited row, which `ferrozone audit verify` reports) is not sent.
    fn wanted(&self, lease: &WebhookLease, record: &EventRecord) -> Option<(EventRecord, EventView)> {
        if !webhook::wants(&lease.events, &record.action) {
            return None;
        }
        match record.decode() {
            Some(event) => Some((record.clone(), EventView::from(event))),
            None => {
                tracing::warn!(seq = record.seq, "an audit event does not decode; not delivered");
                None
            }
        }
    }

    /// The endpoint's next state after an attempt on event `seq` (`before` being the
    /// cursor just before it), and whether to go on with the next event.
    fn after_attempt(&self, lease: &WebhookLease, seq: i64, before: i64, delivery: &Delivery) -> (Progress, bool) {
        let now = Timestamp::now();
        let attempt = |outcome| Attempt {
            seq,
            at: now,
            outcome,
            status: delivery.status,
            error: delivery.error.clone(),
            duration_ms: i64::try_from(delivery.duration.as_millis()).unwrap_or(i64::MAX),
        };
        if delivery.outcome == Outcome::Delivered {
            return (progress(Some(attempt(Outcome::Delivered)), seq, now, None, 0), true);
        }
        let failing_since = lease.failing_since.unwrap_or(now);
        if now.micros().saturating_sub(failing_since.micros()) >= micros(self.options.give_up_after) {
            tracing::warn!(webhook.id = %lease.id, seq, "webhook event given up after failing for a day");
            return (progress(Some(attempt(Outcome::GaveUp)), seq, now, None, 0), true);
        }
        let attempts = lease.attempts + 1;
        let next = Timestamp::from_micros(now.micros().saturating_add(micros(self.options.backoff(attempts))));
        (progress(Some(attempt(delivery.outcome)), before, next, Some(failing_since), attempts), false)
    }
}

fn progress(
    attempt: Option<Attempt>,
    delivered_seq: i64,
    next_attempt_at: Timestamp,
    failing_since: Option<Timestamp>,
    attempts: i64,
) -> Progress {
    Progress { attempt, delivered_seq, next_attempt_at, failing_since, attempts }
}

fn micros(duration: Duration) -> i64 {
    i64::try_from(duration.as_micros()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_the_first_delay_up_to_the_cap() {
        let options = Options::default();
        let delays: Vec<u64> = (1..=4).map(|n| options.backoff(n).as_secs()).collect();
        assert_eq!(delays, [1, 2, 4, 8]);
        assert_eq!(options.backoff(13).as_secs(), 3600);
        assert_eq!(options.backoff(10_000).as_secs(), 3600);
    }
}
