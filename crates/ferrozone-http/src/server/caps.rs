//! Caps on connections per process and per client address, and the rate-limited log of
//! refusals.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// At most one log line per this period for each kind of refusal or accept error.
const LOG_PERIOD: Duration = Duration::from_secs(60);

/// The connections open now, in total and per client.
pub struct Caps {
    max_total: usize,
    /// 0: no cap per client.
    max_per_client: usize,
    open: Mutex<Open>,
    over_total: RateLog,
    over_client: RateLog,
}

#[derive(Default)]
struct Open {
    total: usize,
    per_client: HashMap<IpAddr, usize>,
}

impl Caps {
    pub fn new(max_total: usize, max_per_client: usize) -> Arc<Self> {
        Arc::new(Self {
            max_total,
            max_per_client,
            open: Mutex::default(),
            over_total: RateLog::new("refused connections: the server has its most connections open"),
            over_client: RateLog::new("refused connections: a client address has its most connections open"),
        })
    }

    /// A slot for a connection from `ip`, or `None` (the refusal is counted and logged).
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Option<Slot> {
        let client = client_key(ip);
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        if open.total >= self.max_total {
            drop(open);
            self.over_total.note(&client.to_string());
            return None;
        }
        let mine = open.per_client.entry(client).or_default();
        if self.max_per_client > 0 && *mine >= self.max_per_client {
            drop(open);
            self.over_client.note(&client.to_string());
            return None;
        }
        *mine += 1;
        open.total += 1;
        Some(Slot { caps: self.clone(), client })
    }
}

/// One admitted connection; dropping it frees its place.
pub struct Slot {
    caps: Arc<Caps>,
    client: IpAddr,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.caps.open.lock().unwrap_or_else(PoisonError::into_inner);
        open.total -= 1;
        if let Some(n) = open.per_client.get_mut(&self.client) {
            *n -= 1;
            if *n == 0 {
                open.per_client.remove(&self.client);
            }
        }
    }
}

/// The key a client's connections are counted under: its IPv4 address (also when written
/// IPv4-mapped), or the /64 of its IPv6 address (one host commonly holds a whole /64).
pub fn client_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

/// A warning logged at most once per [`LOG_PERIOD`], with how many events it stands for.
pub struct RateLog {
    message: &'static str,
    state: Mutex<(Option<Instant>, u64)>,
}

impl RateLog {
    pub fn new(message: &'static str) -> Self {
        Self { message, state: Mutex::new((None, 0)) }
    }

    /// Counts one event; logs when the period since the last line has passed. `detail` is
    /// the latest event's (a client address, an error).
    pub fn note(&self, detail: &str) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.1 += 1;
        let now = Instant::now();
        if state.0.is_some_and(|last| now.duration_since(last) < LOG_PERIOD) {
            return;
        }
        let count = std::mem::take(&mut state.1);
        state.0 = Some(now);
        drop(state);
        tracing::warn!(count, latest = detail, period_secs = LOG_PERIOD.as_secs(), "{}", self.message);
    }

    #[cfg(test)]
    fn pending(&self) -> u64 {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("an address")
    }

    #[test]
    fn a_client_is_capped_and_its_closed_connections_free_their_places() {
        let caps = Caps::new(10, 2);
        let a = caps.admit(ip("192.0.2.1")).expect("first");
        let _b = caps.admit(ip("192.0.2.1")).expect("second");
        assert!(caps.admit(ip("192.0.2.1")).is_none(), "third from the same address");
        assert!(caps.admit(ip("192.0.2.2")).is_some(), "another address");
        drop(a);
        assert!(caps.admit(ip("192.0.2.1")).is_some(), "a place was freed");
    }

    #[test]
    fn the_process_cap_holds_across_clients_and_zero_means_no_cap_per_client() {
        let caps = Caps::new(3, 0);
        let held: Vec<_> = (1..=3).map(|i| caps.admit(ip(&format!("192.0.2.{i}"))).expect("admitted")).collect();
        assert!(caps.admit(ip("192.0.2.9")).is_none());
        drop(held);
        let same: Vec<_> = (0..3).map(|_| caps.admit(ip("192.0.2.1")).expect("no cap per client")).collect();
        assert_eq!(same.len(), 3);
        assert!(caps.open.lock().expect("lock").per_client.len() == 1);
    }

    #[test]
    fn ipv6_clients_are_keyed_by_their_64_and_mapped_ipv4_as_ipv4() {
        assert_eq!(client_key(ip("2001:db8:1:2:aaaa::1")), client_key(ip("2001:db8:1:2:bbbb::9")));
        assert_ne!(client_key(ip("2001:db8:1:2::1")), client_key(ip("2001:db8:1:3::1")));
        assert_eq!(client_key(ip("::ffff:192.0.2.7")), ip("192.0.2.7"));
        let caps = Caps::new(10, 1);
        let _a = caps.admit(ip("2001:db8::1")).expect("first");
        assert!(caps.admit(ip("2001:db8::2")).is_none(), "same /64");
    }

    #[test]
    fn refusals_are_logged_once_per_period_with_their_count() {
        let log = RateLog::new("test");
        log.note("a");
        assert_eq!(log.pending(), 0, "the first is logged at once");
        for _ in 0..5 {
            log.note("a");
        }
        assert_eq!(log.pending(), 5, "the rest wait for the period");
    }
}
