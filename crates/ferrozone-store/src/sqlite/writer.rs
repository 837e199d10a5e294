//! The SQLite writer: one thread owns the one connection that writes.
//!
//! Callers send it jobs. It takes every job queued (up to [`MAX_BATCH`]), runs them in one
//! `BEGIN IMMEDIATE` transaction, each inside a savepoint (a job that fails leaves no trace
//! and does not disturb the others), commits once (one fsync for the whole batch) and only
//! then answers each caller: an answer means the write is on disk. While a commit syncs,
//! new jobs queue up and form the next batch, so the cost of durability is shared under
//! load (group commit) and nothing waits for it when the server is idle.
//!
//! A job runs to its end whatever happens to its caller: a request cancelled by a client
//! disconnect cannot leave a transaction half done.
//!
//! The audit events a job appends wait in the batch ([`Batch::events`]); those of a job
//! that failed are taken out with its savepoint's rollback. After the last job the writer
//! chains them all onto the log's head and inserts them ([`super::audit::append_all`]),
//! outside every savepoint, then commits: the events commit with the writes they record,
//! and the head is read, sealed and written once per batch rather than once per event.
//! Inside a savepoint every page a job changes is first copied to its journal; the log's
//! last leaves and its head, changed by nearly every job, are no longer copied by each.
//!
//! Each committed batch is measured ([`crate::metrics`]): its jobs, and its time from
//! `BEGIN` to the end of `COMMIT`, the sync to disk included.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::time::Instant;

use ferrozone_domain::audit::{AuditKey, NewAuditEvent};
use ferrozone_domain::error::Result;
use ferrozone_domain::DomainError;
use rusqlite::Connection;
use tokio::sync::oneshot;

use crate::metrics::{COMMIT_DURATION, WRITE_BATCH_SIZE};

/// What a job writes with: the writer's connection, inside the batch transaction and the
/// job's savepoint, and the audit events the batch's jobs appended so far.
pub(crate) struct Batch<'b> {
    pub(crate) conn: &'b mut Connection,
    /// Chained and inserted after the batch's last job, in this order (see the module).
    pub(crate) events: &'b mut Vec<NewAuditEvent>,
}

/// Jobs in one transaction at most: bounds the wait of the first job of a batch.
const MAX_BATCH: usize = 256;

/// A job has run inside the batch; `answer` tells its caller once the batch is committed
/// (`Ok`) or failed to commit (`Err` with the reason).
struct Ran {
    succeeded: bool,
    answer: Box<dyn FnOnce(Committed<'_>) + Send>,
}

/// Whether the batch committed, or why not.
type Committed<'a> = std::result::Result<(), &'a str>;

/// A write waiting for the writer.
trait Job: Send {
    /// Runs the write inside the batch (and its savepoint).
    fn run(self: Box<Self>, batch: &mut Batch<'_>) -> Ran;
    /// Answers without running: the batch could not start.
    fn refuse(self: Box<Self>, reason: &str);
}

/// A caller's write and where its answer goes.
struct Pending<T, F> {
    work: F,
    reply: oneshot::Sender<Result<T>>,
}

impl<T, F> Job for Pending<T, F>
where
    T: Send + 'static,
    F: FnOnce(&mut Batch<'_>) -> Result<T> + Send,
{
    fn run(self: Box<Self>, batch: &mut Batch<'_>) -> Ran {
        let Pending { work, reply } = *self;
        let result = work(batch);
        Ran {
            succeeded: result.is_ok(),
            answer: Box::new(move |committed| {
                let outcome = match committed {
                    Ok(()) => result,
                    Err(reason) => result.and_then(|_| Err(unavailable(format!("commit failed: {reason}")))),
                };
                let _ = reply.send(outcome);
            }),
        }
    }

    fn refuse(self: Box<Self>, reason: &str) {
        let _ = self.reply.send(Err(unavailable(format!("cannot start a write: {reason}"))));
    }
}

enum Message {
    Job(Box<dyn Job>),
    /// Finish what is queued, then close the connection and answer.
    Stop(oneshot::Sender<()>),
}

/// The handle callers use; cheap to share.
#[derive(Debug)]
pub(crate) struct Writer {
    jobs: mpsc::Sender<Message>,
}

impl Writer {
    /// Starts the writer thread on `conn`; `key` seals the audit events of its batches.
    pub(crate) fn start(conn: Connection, key: AuditKey) -> std::io::Result<Self> {
        let (jobs, queue) = mpsc::channel();
        std::thread::Builder::new().name("ferrozone-sqlite-writer".into()).spawn(move || serve(conn, &key, &queue))?;
        Ok(Self { jobs })
    }

    /// Runs `work` in the next batch and returns its result once the batch is committed.
    pub(crate) async fn write<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Batch<'_>) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let (reply, answer) = oneshot::channel();
        self.jobs
            .send(Message::Job(Box::new(Pending { work, reply })))
            .map_err(|_| unavailable("the SQLite database is closed".into()))?;
        answer.await.map_err(|_| DomainError::Internal(anyhow::anyhow!("the SQLite writer abandoned a write")))?
    }

    /// Lets the queued jobs finish and closes the connection.
    pub(crate) async fn stop(&self) {
        let (done, stopped) = oneshot::channel();
        if self.jobs.send(Message::Stop(done)).is_ok() {
            let _ = stopped.await;
        }
    }
}

fn unavailable(reason: String) -> DomainError {
    crate::metrics::unavailable("sqlite");
    DomainError::Unavailable(anyhow::anyhow!(reason))
}

fn serve(mut conn: Connection, key: &AuditKey, queue: &mpsc::Receiver<Message>) {
    let mut stop = None;
    while stop.is_none() {
        let Ok(first) = queue.recv() else { break };
        let mut batch = Vec::new();
        let mut next = Some(first);
        while let Some(message) = next.take() {
            match message {
                Message::Job(job) => batch.push(job),
                Message::Stop(done) => {
                    stop = Some(done);
                    break;
                }
            }
            if batch.len() < MAX_BATCH {
                next = queue.try_recv().ok();
            }
        }
        if !batch.is_empty() {
            run_batch(&mut conn, key, batch);
        }
    }
    drop(conn);
    if let Some(done) = stop {
        let _ = done.send(());
    }
}

fn run_batch(conn: &mut Connection, key: &AuditKey, batch: Vec<Box<dyn Job>>) {
    let (started, jobs) = (Instant::now(), batch.len());
    if let Err(err) = conn.execute_batch("BEGIN IMMEDIATE") {
        let reason = err.to_string();
        // Each job answers with the reason; none of them ran.
        for job in batch {
            job.refuse(&reason);
        }
        return;
    }
    let mut events = Vec::new();
    let mut ran = Vec::with_capacity(batch.len());
    for job in batch {
        if let Err(err) = conn.execute_batch("SAVEPOINT job") {
            job.refuse(&err.to_string());
            continue;
        }
        let appended_before = events.len();
        let outcome = catch_unwind(AssertUnwindSafe(|| job.run(&mut Batch { conn, events: &mut events })));
        let keep = matches!(&outcome, Ok(r) if r.succeeded);
        if !keep {
            events.truncate(appended_before);
        }
        let end = if keep { "RELEASE job" } else { "ROLLBACK TO job; RELEASE job" };
        if let Err(err) = conn.execute_batch(end) {
            // The savepoint is in an unknown state: the whole batch must not commit.
            tracing::error!(error = %err, "ending a savepoint failed; rolling the batch back");
            let _ = conn.execute_batch("ROLLBACK");
            answer_all(ran.into_iter().chain(outcome.ok()), Err(&err.to_string()));
            return;
        }
        // A job that panicked dropped its answer: its caller gets an internal error.
        ran.extend(outcome.ok());
    }
    let committed = super::audit::append_all(conn, key, &events)
        .map_err(|err| format!("appending the audit events failed: {err}"))
        .and_then(|()| conn.execute_batch("COMMIT").map_err(|err| err.to_string()));
    if committed.is_ok() {
        metrics::histogram!(WRITE_BATCH_SIZE).record(jobs as f64);
        metrics::histogram!(COMMIT_DURATION).record(started.elapsed().as_secs_f64());
    } else {
        let _ = conn.execute_batch("ROLLBACK");
    }
    answer_all(ran.into_iter(), committed.as_ref().map(|_| ()).map_err(String::as_str));
}

fn answer_all(ran: impl Iterator<Item = Ran>, committed: Committed<'_>) {
    for job in ran {
        (job.answer)(committed);
    }
}

#[cfg(test)]
mod tests {
    use ferrozone_domain::audit::{verify, Actor, AuditQuery, Origin, Subject};
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};

    use super::*;

    /// A job inserting `value`, and where its answer arrives.
    fn insert(value: i64) -> (Box<dyn Job>, oneshot::Receiver<Result<usize>>) {
        audited_insert(value, None)
    }

    /// A job appending the audit event `action` (if any), then inserting `value`.
    fn audited_insert(value: i64, action: Option<&str>) -> (Box<dyn Job>, oneshot::Receiver<Result<usize>>) {
        let (reply, answer) = oneshot::channel();
        let event = action
            .map(|action| NewAuditEvent::new(Actor::system(), action, Subject::new("test", value), Origin::default()));
        let work = move |batch: &mut Batch<'_>| {
            batch.events.extend(event);
            batch
                .conn
                .execute("INSERT INTO t (x) VALUES (?1)", [value])
                .map_err(|e| DomainError::Internal(anyhow::anyhow!("insert: {e}")))
        };
        (Box::new(Pending { work, reply }), answer)
    }

    /// Every histogram's values, by name; taking them empties them.
    fn histograms(recorder: &DebuggingRecorder) -> Vec<(String, Vec<f64>)> {
        let snapshot = recorder.snapshotter().snapshot().into_vec().into_iter();
        snapshot
            .filter_map(|(key, _, _, value)| match value {
                DebugValue::Histogram(values) => {
                    Some((key.key().name().to_owned(), values.into_iter().map(|v| v.0).collect()))
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_committed_batch_is_measured_with_its_size() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (x INTEGER NOT NULL UNIQUE)").unwrap();
        let recorder = DebuggingRecorder::new();
        let (jobs, answers): (Vec<_>, Vec<_>) = [1, 2, 1].into_iter().map(insert).unzip();
        metrics::with_local_recorder(&recorder, || run_batch(&mut conn, &AuditKey::unkeyed(), jobs));

        let outcomes: Vec<bool> = answers.into_iter().map(|mut a| a.try_recv().unwrap().is_ok()).collect();
        assert_eq!(outcomes, [true, true, false], "the duplicate failed alone");
        let histograms = histograms(&recorder);
        let [(size, jobs), (duration, seconds)] = &histograms[..] else { panic!("{histograms:?}") };
        assert_eq!((size.as_str(), &jobs[..]), (WRITE_BATCH_SIZE, &[3.0][..]), "every job, the failed one too");
        assert_eq!(duration, COMMIT_DURATION);
        assert!(matches!(seconds[..], [s] if s > 0.0), "{seconds:?}");
    }

    /// The events of the jobs that succeeded are chained after the batch, in job order; the
    /// one of a job that failed after appending it is gone with the job's other writes.
    #[test]
    fn a_failed_job_leaves_no_audit_event_and_the_others_are_chained_in_order() {
        let mut conn = Connection::open_in_memory().unwrap();
        super::super::migrate::run(&mut conn).unwrap();
        conn.execute_batch("CREATE TABLE t (x INTEGER NOT NULL UNIQUE)").unwrap();
        let key = AuditKey::unkeyed();
        let jobs = [(1, "test.first"), (1, "test.duplicate"), (2, "test.second")];
        let (jobs, answers): (Vec<_>, Vec<_>) =
            jobs.into_iter().map(|(value, action)| audited_insert(value, Some(action))).unzip();
        run_batch(&mut conn, &key, jobs);

        let outcomes: Vec<bool> = answers.into_iter().map(|mut a| a.try_recv().unwrap().is_ok()).collect();
        assert_eq!(outcomes, [true, false, true]);
        let head = super::super::audit::head(&conn).unwrap();
        let query = AuditQuery { after_seq: Some(0), limit: 10, ..AuditQuery::default() };
        let records = super::super::audit::select(&conn, &query).unwrap();
        let actions: Vec<(i64, &str)> = records.iter().map(|r| (r.seq, r.action.as_str())).collect();
        assert_eq!(actions, [(1, "test.first"), (2, "test.second")]);
        assert_eq!(head.last_seq, 2);
        verify(&key, &head, &records).expect("the chain and the head's seal hold");
    }
}
