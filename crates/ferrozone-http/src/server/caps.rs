//! Caps on connections per process and per client address, and the rate-limited log of
//! refusals. When the process is full, the connection that has waited longest for a
//! request is closed to make room, so idle sockets cannot lock new clients out.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use ferrozone_domain::client::client_network;

use super::watchdog::Activity;

/// At most one log line per this period for each kind of refusal or accept error.
const LOG_PERIOD: Duration = Duration::from_secs(60);

/// Most evicted connections still closing; past it a full server refuses instead.
const MAX_CLOSING: usize = 64;

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
    /// The connections that may be evicted, by id.
    live: HashMap<u64, Arc<Activity>>,
    /// Evicted connections that have not closed yet (counted in `total`).
    closing: usize,
    next_id: u64,
}

impl Open {
    /// Evicts the connection that has waited longest for a request; false if every one
    /// has a request in flight.
    fn evict_longest_waiting(&mut self) -> bool {
        let victim = self
            .live
            .iter()
            .filter_map(|(id, activity)| activity.waiting_since().map(|since| (since, *id)))
            .min()
            .map(|(_, id)| id);
        let Some(activity) = victim.and_then(|id| self.live.remove(&id)) else {
            return false;
        };
        activity.evict();
        self.closing += 1;
        true
    }
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

    /// A slot for a connection from `ip` whose state is `activity`, or `None` (the refusal
    /// is counted and logged). A full server makes room by evicting the connection that has
    /// waited longest for a request.
    pub fn admit(self: &Arc<Self>, ip: IpAddr, activity: &Arc<Activity>) -> Option<Slot> {
        let client = client_network(ip);
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let mine = open.per_client.get(&client).copied().unwrap_or(0);
        if self.max_per_client > 0 && mine >= self.max_per_client {
            drop(open);
            self.over_client.note(&client.to_string());
            return None;
        }
        let full = open.total - open.closing >= self.max_total;
        if full && (open.closing >= MAX_CLOSING || !open.evict_longest_waiting()) {
            drop(open);
            self.over_total.note(&client.to_string());
            return None;
        }
        *open.per_client.entry(client).or_default() += 1;
        open.total += 1;
        let id = open.next_id;
        open.next_id += 1;
        open.live.insert(id, activity.clone());
        Some(Slot { caps: self.clone(), client, id })
    }
}

/// One admitted connection; dropping it frees its place.
pub struct Slot {
    caps: Arc<Caps>,
    client: IpAddr,
    id: u64,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.caps.open.lock().unwrap_or_else(PoisonError::into_inner);
        open.total -= 1;
        if open.live.remove(&self.id).is_none() {
            open.closing -= 1;
        }
        if let Some(n) = open.per_client.get_mut(&self.client) {
            *n -= 1;
            if *n == 0 {
                open.per_client.remove(&self.client);
            }
        }
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
    use crate::server::watchdog::RequestGuard;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("an address")
    }

    /// A connection waiting for its first request.
    fn waiting(caps: &Arc<Caps>, from: &str) -> Option<(Arc<Activity>, Slot)> {
        let activity = Activity::new();
        caps.admit(ip(from), &activity).map(|slot| (activity, slot))
    }

    /// A connection with a request in flight (never evicted).
    fn busy(caps: &Arc<Caps>, from: &str) -> Option<(RequestGuard, Slot)> {
        let activity = Activity::new();
        let guard = activity.request_started();
        caps.admit(ip(from), &activity).map(|slot| (guard, slot))
    }

    #[test]
    fn a_client_is_capped_and_its_closed_connections_free_their_places() {
        let caps = Caps::new(10, 2);
        let a = waiting(&caps, "192.0.2.1").expect("first");
        let _b = waiting(&caps, "192.0.2.1").expect("second");
        assert!(waiting(&caps, "192.0.2.1").is_none(), "third from the same address");
        assert!(waiting(&caps, "192.0.2.2").is_some(), "another address");
        drop(a);
        assert!(waiting(&caps, "192.0.2.1").is_some(), "a place was freed");
    }

    #[test]
    fn a_full_server_refuses_when_every_connection_is_busy_and_zero_means_no_cap_per_client() {
        let caps = Caps::new(3, 0);
        let held: Vec<_> = (1..=3).map(|i| busy(&caps, &format!("192.0.2.{i}")).expect("admitted")).collect();
        assert!(waiting(&caps, "192.0.2.9").is_none());
        drop(held);
        let same: Vec<_> = (0..3).map(|_| busy(&caps, "192.0.2.1").expect("no cap per client")).collect();
        assert_eq!(same.len(), 3);
        assert_eq!(caps.open.lock().expect("lock").per_client.len(), 1);
    }

    #[tokio::test]
    async fn a_full_server_evicts_the_connection_that_waited_longest() {
        let bound = Duration::from_secs(5);
        let caps = Caps::new(2, 0);
        let (oldest, _a) = waiting(&caps, "192.0.2.1").expect("first");
        let _b = busy(&caps, "192.0.2.2").expect("second");
        tokio::time::sleep(Duration::from_millis(5)).await;
        let (newer, _c) = waiting(&caps, "192.0.2.3").expect("room made");
        tokio::time::timeout(bound, oldest.evicted()).await.expect("the oldest waiting is told to close");
        let _d = busy(&caps, "192.0.2.4").expect("room made again");
        tokio::time::timeout(bound, newer.evicted()).await.expect("then the next oldest");
        assert!(waiting(&caps, "192.0.2.5").is_none(), "every live connection is busy: refused");
    }

    #[test]
    fn ipv6_clients_are_keyed_by_their_64_and_mapped_ipv4_as_ipv4() {
        assert_eq!(client_network(ip("2001:db8:1:2:aaaa::1")), client_network(ip("2001:db8:1:2:bbbb::9")));
        assert_ne!(client_network(ip("2001:db8:1:2::1")), client_network(ip("2001:db8:1:3::1")));
        assert_eq!(client_network(ip("::ffff:192.0.2.7")), ip("192.0.2.7"));
        let caps = Caps::new(10, 1);
        let _a = waiting(&caps, "2001:db8::1").expect("first");
        assert!(waiting(&caps, "2001:db8::2").is_none(), "same /64");
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
