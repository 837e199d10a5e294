//! Body wrappers: a request body with a deadline for its last byte, and a response body
//! that keeps its request counted as in flight until it is done.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use hyper::body::{Body as HttpBody, Frame, Incoming, SizeHint};
use tokio::time::{Instant, Sleep};

use super::watchdog::RequestGuard;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The request body was not complete by its deadline.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive in time")]
pub struct BodyDeadline;

/// A request body that fails once `timeout` has passed since the request's head, unless it
/// has ended. Data that already arrived is always delivered first.
///
/// The timer is armed only when the body first has to be waited for: a body that came
/// with its head (most API writes) never costs one.
pub struct DeadlineBody {
    inner: Incoming,
    deadline: Instant,
    timer: Option<Pin<Box<Sleep>>>,
}

impl DeadlineBody {
    pub fn new(inner: Incoming, timeout: Duration) -> Self {
        Self { inner, deadline: Instant::now() + timeout, timer: None }
    }
}

impl HttpBody for DeadlineBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(BoxError::from)));
        }
        let deadline = self.deadline;
        match self.timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline))).as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(BodyDeadline.into()))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A response body holding its request's [`RequestGuard`]: hyper drops it once the last
/// frame is written (or the connection is gone).
pub struct Tracked {
    inner: Body,
    _guard: RequestGuard,
}

impl Tracked {
    pub fn new(inner: Body, guard: RequestGuard) -> Self {
        Self { inner, _guard: guard }
    }
}

impl HttpBody for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
