//! Throttling of password sign-in per (account, client address): after
//! [`MAX_FAILURES`] failures within [`WINDOW`], that pair is refused for [`LOCKOUT`], even
//! with the right password. The counts live in this process's memory: each `serve`
//! process counts on its own, and a restart forgets them.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failures allowed within [`WINDOW`] before the pair is locked out.
pub const MAX_FAILURES: u32 = 5;
/// The window failures are counted in, from the first one.
pub const WINDOW: Duration = Duration::from_secs(60);
/// How long a locked-out pair is refused.
pub const LOCKOUT: Duration = Duration::from_secs(60);
/// The most pairs tracked; past it the oldest is forgotten, so memory stays bounded.
const MAX_TRACKED: usize = 100_000;

type Key = (String, IpAddr);

#[derive(Debug)]
struct Failures {
    first: Instant,
    count: u32,
    locked_until: Option<Instant>,
}

impl Failures {
    fn is_locked(&self, now: Instant) -> bool {
        self.locked_until.is_some_and(|until| now < until)
    }

    fn is_stale(&self, now: Instant) -> bool {
        !self.is_locked(now) && now.duration_since(self.first) >= WINDOW
    }
}

#[derive(Debug, Default)]
pub struct Throttle {
    pairs: Mutex<HashMap<Key, Failures>>,
}

impl Throttle {
    /// Whether sign-in for `account` from `address` is refused right now.
    pub fn is_locked(&self, account: &str, address: IpAddr) -> bool {
        let pairs = self.pairs.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        pairs.get(&(account.to_owned(), address)).is_some_and(|f| f.is_locked(Instant::now()))
    }

    /// Counts a failed sign-in.
    pub fn failed(&self, account: &str, address: IpAddr) {
        let now = Instant::now();
        let mut pairs = self.pairs.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if pairs.len() >= MAX_TRACKED {
            pairs.retain(|_, f| !f.is_stale(now));
            if pairs.len() >= MAX_TRACKED {
                let oldest = pairs.iter().min_by_key(|(_, f)| f.first).map(|(k, _)| k.clone());
                oldest.map(|k| pairs.remove(&k));
            }
        }
        let entry =
            pairs.entry((account.to_owned(), address)).or_insert(Failures { first: now, count: 0, locked_until: None });
        if entry.is_stale(now) || entry.locked_until.is_some_and(|until| now >= until) {
            *entry = Failures { first: now, count: 0, locked_until: None };
        }
        entry.count += 1;
        if entry.count >= MAX_FAILURES {
            entry.locked_until = Some(now + LOCKOUT);
        }
    }

    /// Forgets the failures of a pair that signed in.
    pub fn succeeded(&self, account: &str, address: IpAddr) {
        let mut pairs = self.pairs.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        pairs.remove(&(account.to_owned(), address));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locks_a_pair_after_the_limit_only() {
        let throttle = Throttle::default();
        let (here, there) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        for _ in 1..MAX_FAILURES {
            throttle.failed("a@example.com", here);
        }
        assert!(!throttle.is_locked("a@example.com", here));
        throttle.failed("a@example.com", here);
        assert!(throttle.is_locked("a@example.com", here));
        assert!(!throttle.is_locked("a@example.com", there), "another address");
        assert!(!throttle.is_locked("b@example.com", here), "another account");
        throttle.succeeded("a@example.com", here);
        assert!(!throttle.is_locked("a@example.com", here));
    }
}
