//! What one connection is doing, and the deadline that follows: a request head must arrive
//! within the header timeout (from the connection's start, or from a later request's first
//! byte), a keep-alive connection may wait for its next request for the idle timeout, and
//! a connection with a request in flight is cut only when it has made no progress in either
//! direction for the request and idle timeouts together (a client that stops reading a
//! response).

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::time::{Duration, Instant};

use super::Limits;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for (the rest of) a request head.
    Head,
    /// Between requests: nothing in flight, nothing read since.
    Idle,
    /// One or more requests in flight (handler running or response being written).
    Busy,
}

struct State {
    phase: Phase,
    since: Instant,
    in_flight: usize,
}

/// One connection's activity, shared by its stream, its requests and its watchdog.
pub struct Activity {
    start: Instant,
    state: Mutex<State>,
    /// Milliseconds from `start` to the last byte read or written.
    last_io: AtomicU64,
    /// Told to close to make room for a new connection.
    evicted: Notify,
}

impl Activity {
    /// A new connection: waiting for its first request head.
    pub fn new() -> Arc<Self> {
        let start = Instant::now();
        let state = State { phase: Phase::Head, since: start, in_flight: 0 };
        Arc::new(Self { start, state: Mutex::new(state), last_io: AtomicU64::new(0), evicted: Notify::new() })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn io(&self, read: bool) {
        let ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_io.store(ms, Ordering::Relaxed);
        if read {
            let mut state = self.state();
            if state.phase == Phase::Idle {
                state.phase = Phase::Head;
                state.since = Instant::now();
            }
        }
    }

    /// A request head has arrived; the request is in flight until the guard drops (its
    /// response body is done or abandoned).
    pub fn request_started(self: &Arc<Self>) -> RequestGuard {
        let mut state = self.state();
        state.in_flight += 1;
        state.phase = Phase::Busy;
        state.since = Instant::now();
        drop(state);
        RequestGuard(self.clone())
    }

    fn deadline(&self, limits: &Limits) -> (Instant, &'static str) {
        let state = self.state();
        match state.phase {
            Phase::Head => (state.since + limits.header_timeout, "request head not received in time"),
            Phase::Idle => (state.since + limits.idle_timeout, "idle"),
            Phase::Busy => {
                let last_io = self.start + Duration::from_millis(self.last_io.load(Ordering::Relaxed));
                let progress = last_io.max(state.since);
                (progress + limits.request_timeout + limits.idle_timeout, "no progress on a request")
            }
        }
    }

    /// Since when the connection has been waiting for a request (head), or `None` while one
    /// is in flight: the longest waiting is closed first when the server is full.
    pub fn waiting_since(&self) -> Option<Instant> {
        let state = self.state();
        (state.phase != Phase::Busy).then_some(state.since)
    }

    /// Tells the connection to close.
    pub fn evict(&self) {
        self.evicted.notify_one();
    }

    /// Completes once [`Activity::evict`] was called.
    pub async fn evicted(&self) {
        self.evicted.notified().await;
    }

    /// Completes when the connection is past its deadline, with the reason.
    ///
    /// Nothing wakes it when the phase changes (that would cost every request a wake-up):
    /// it wakes at least once per `tick`, the shorter of the head and idle timeouts, and
    /// every phase's deadline is at least one `tick` after the phase began, so no deadline
    /// is overslept.
    pub async fn expired(&self, limits: &Limits) -> &'static str {
        let tick = limits.header_timeout.min(limits.idle_timeout);
        let sleep = tokio::time::sleep(tick);
        tokio::pin!(sleep);
        loop {
            let (deadline, reason) = self.deadline(limits);
            let now = Instant::now();
            if deadline <= now {
                return reason;
            }
            sleep.as_mut().reset(deadline.min(now + tick));
            sleep.as_mut().await;
        }
    }
}

/// A request in flight.
pub struct RequestGuard(Arc<Activity>);

impl Drop for RequestGuard {
    fn drop(&mut self) {
        let mut state = self.0.state();
        state.in_flight -= 1;
        if state.in_flight == 0 {
            state.phase = Phase::Idle;
            state.since = Instant::now();
        }
    }
}

/// The connection's socket, telling its [`Activity`] about every byte moved.
pub struct Watched {
    stream: TcpStream,
    activity: Arc<Activity>,
}

impl Watched {
    pub fn new(stream: TcpStream, activity: Arc<Activity>) -> Self {
        Self { stream, activity }
    }
}

impl AsyncRead for Watched {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.io(true);
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write(cx, buf);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.io(false);
        }
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.io(false);
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}
