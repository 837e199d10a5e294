//! A request's deadline, armed only when its answer is not ready at once: an answer made
//! on the spot (a probe, a refusal, a cached page) costs no timer.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;
use tokio::time::Sleep;

pin_project! {
    /// `inner`, or `None` once `timeout` has passed since its first poll found it pending.
    pub struct Deadline<F> {
        #[pin]
        inner: F,
        #[pin]
        timer: Option<Sleep>,
        timeout: Duration,
    }
}

impl<F> Deadline<F> {
    pub fn new(inner: F, timeout: Duration) -> Self {
        Self { inner, timer: None, timeout }
    }
}

impl<F: Future> Future for Deadline<F> {
    type Output = Option<F::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        if let Poll::Ready(output) = this.inner.poll(cx) {
            return Poll::Ready(Some(output));
        }
        if this.timer.is_none() {
            this.timer.set(Some(tokio::time::sleep(*this.timeout)));
        }
        match this.timer.as_pin_mut().map(|timer| timer.poll(cx)) {
            Some(Poll::Pending) => Poll::Pending,
            _ => Poll::Ready(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_answer_in_time_passes_and_one_that_never_comes_is_cut() {
        assert_eq!(Deadline::new(async { 7 }, Duration::from_secs(60)).await, Some(7), "ready at once");
        let after_a_wait = async {
            tokio::task::yield_now().await;
            7
        };
        assert_eq!(Deadline::new(after_a_wait, Duration::from_secs(60)).await, Some(7), "pending once, then ready");
        let never = std::future::pending::<u8>();
        assert_eq!(Deadline::new(never, Duration::from_millis(20)).await, None, "cut once the deadline passes");
    }
}
