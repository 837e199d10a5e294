//! Concurrent point reads, answered many at a time.
//!
//! An authenticated `GET /v0/devices/{id}` reads a token, its owner and a device: three
//! index look-ups, far cheaper than what surrounds them on either backend (on PostgreSQL a
//! round trip, a backend wake-up and an executor start; on SQLite the WAL read lock, taken
//! and dropped with a file lock and a mutex). So the reads are queued to one reader task,
//! which takes every request waiting (up to [`MAX_BATCH`]) and answers them all at once:
//! one statement on PostgreSQL, one read transaction on SQLite.
//!
//! - **No read is stale.** The batch starts after each of its requests arrived, and reads
//!   one snapshot: each answer sees every write committed before its request was made, as
//!   a read of its own would.
//! - **No wait is added.** A reader with nothing to do takes a lone request at once;
//!   batches grow only while the reader is busy, when requests would queue anyway.
//! - **A caller may go away.** Its answer is dropped; the batch is not held up.

use std::future::Future;
use std::pin::Pin;

use ferrozone_domain::error::Result;
use ferrozone_domain::DomainError;
use tokio::sync::{mpsc, oneshot};

/// The most requests one batch answers: beyond a few dozen the batch's own run time
/// dominates, and each of its requests waits for all of them.
pub(crate) const MAX_BATCH: usize = 64;

/// Requests waiting for the reader; a caller beyond this waits to enqueue (back-pressure).
const QUEUE: usize = 1024;

/// What a reader does with a batch: one answer per question, in the batch's order.
pub(crate) type AnswerBatch<Q, A> =
    Box<dyn Fn(Vec<Q>) -> Pin<Box<dyn Future<Output = Vec<Result<A>>> + Send>> + Send + Sync>;

struct Request<Q, A> {
    question: Q,
    reply: oneshot::Sender<Result<A>>,
}

/// The queue in front of the reader task. Clones share it; the reader ends when the last
/// clone is dropped.
pub(crate) struct Coalescer<Q, A> {
    queue: mpsc::Sender<Request<Q, A>>,
}

impl<Q, A> Clone for Coalescer<Q, A> {
    fn clone(&self) -> Self {
        Self { queue: self.queue.clone() }
    }
}

impl<Q, A> std::fmt::Debug for Coalescer<Q, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Coalescer").field("waiting", &(QUEUE - self.queue.capacity())).finish()
    }
}

impl<Q: Send + 'static, A: Send + 'static> Coalescer<Q, A> {
    /// Starts the reader task on the current runtime. `answer` must return one answer per
    /// question; a question it leaves unanswered gets an internal error.
    pub(crate) fn start(answer: AnswerBatch<Q, A>) -> Self {
        let (queue, requests) = mpsc::channel(QUEUE);
        tokio::spawn(run_reader(requests, answer));
        Self { queue }
    }

    /// Queues `question` and waits for its answer. `context` names the read in errors.
    pub(crate) async fn ask(&self, question: Q, context: &'static str) -> Result<A> {
        let (reply, answer) = oneshot::channel();
        if self.queue.send(Request { question, reply }).await.is_err() {
            return Err(DomainError::Unavailable(anyhow::anyhow!("{context}: the store is closed")));
        }
        answer.await.map_err(|_| DomainError::Internal(anyhow::anyhow!("{context}: the reader gave no answer")))?
    }
}

/// `err` as the answer to each of `count` questions: the first gets it, the others a copy
/// of the same kind (503 stays 503) with the same message.
pub(crate) fn fail_all<A>(err: DomainError, count: usize) -> Vec<Result<A>> {
    let copy = |err: &DomainError| match err {
        DomainError::NotFound => DomainError::NotFound,
        DomainError::Forbidden => DomainError::Forbidden,
        DomainError::Disallowed(why) => DomainError::Disallowed(why),
        DomainError::Invalid(errors) => DomainError::Invalid(errors.clone()),
        DomainError::Unavailable(e) => DomainError::Unavailable(anyhow::anyhow!("{e:#}")),
        DomainError::Busy(what) => DomainError::Busy(what),
        DomainError::Internal(e) => DomainError::Internal(anyhow::anyhow!("{e:#}")),
    };
    let mut answers: Vec<Result<A>> = (1..count).map(|_| Err(copy(&err))).collect();
    if count > 0 {
        answers.insert(0, Err(err));
    }
    answers
}

/// Takes the waiting requests, up to [`MAX_BATCH`], and answers them; until the queue closes.
async fn run_reader<Q, A>(mut requests: mpsc::Receiver<Request<Q, A>>, answer: AnswerBatch<Q, A>) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while requests.recv_many(&mut batch, MAX_BATCH).await > 0 {
        let (questions, replies): (Vec<Q>, Vec<_>) = batch.drain(..).map(|r| (r.question, r.reply)).unzip();
        let answers = answer(questions).await;
        // A reply whose caller went away fails to send: nothing is left to do for it. A
        // question without an answer drops its reply: its caller sees an internal error.
        for (reply, answer) in replies.into_iter().zip(answers) {
            let _ = reply.send(answer);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doubler() -> Coalescer<u32, u32> {
        Coalescer::start(Box::new(|questions: Vec<u32>| {
            Box::pin(async move {
                let size = u32::try_from(questions.len()).unwrap();
                // Each answer carries its batch's size, so the test sees the batches.
                questions.into_iter().map(|q| Ok(q * 2 + 1000 * size)).collect()
            })
        }))
    }

    #[tokio::test]
    async fn each_caller_gets_its_own_answer_and_waiting_callers_share_a_batch() {
        let coalescer = doubler();
        // A lone question is a batch of one.
        assert_eq!(coalescer.ask(21, "test").await.unwrap(), 1042);
        // Questions queued while the reader is not running are answered together, each
        // with its own answer. (On this single-threaded runtime the reader runs only when
        // the test awaits, after all of them are queued.)
        let asks = (0..100).map(|q| coalescer.ask(q, "test"));
        let answers = futures_util::future::join_all(asks).await;
        let sizes: Vec<u32> = answers.iter().map(|a| a.as_ref().unwrap() / 1000).collect();
        for (q, answer) in (0..100).zip(&answers) {
            assert_eq!(answer.as_ref().unwrap() % 1000, q * 2, "question {q}");
        }
        assert_eq!(sizes.iter().max(), Some(&u32::try_from(MAX_BATCH).unwrap()), "{sizes:?}");
        assert!(sizes.iter().all(|&s| s > 1), "{sizes:?}");
    }

    #[test]
    fn a_failed_batch_fails_each_question_alike() {
        let answers: Vec<Result<()>> = fail_all(DomainError::Unavailable(anyhow::anyhow!("down")), 3);
        assert_eq!(answers.len(), 3);
        for answer in answers {
            assert!(matches!(&answer, Err(DomainError::Unavailable(e)) if e.to_string() == "down"), "{answer:?}");
        }
        assert!(fail_all::<()>(DomainError::NotFound, 0).is_empty());
    }

    #[tokio::test]
    async fn a_question_left_unanswered_is_an_error_and_the_reader_goes_on() {
        let coalescer: Coalescer<u32, u32> = Coalescer::start(Box::new(|questions: Vec<u32>| {
            Box::pin(async move { questions.into_iter().filter(|q| q % 2 == 0).map(Ok).collect() })
        }));
        assert!(matches!(coalescer.ask(1, "test").await, Err(DomainError::Internal(_))));
        assert_eq!(coalescer.ask(2, "test").await.unwrap(), 2);
    }
}
