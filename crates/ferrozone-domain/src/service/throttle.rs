//! Throttling of password sign-in (and of everything that checks a password or a code:
//! the use cases of [`super::throttled`]). An attempt is counted *before* its password is checked
//! ([`Throttle::reserve`]), under one lock, so concurrency cannot buy more guesses:
//!
//! - per (account, client network): at most [`MAX_ATTEMPTS`] attempts evaluated per
//!   [`WINDOW`] (from the first); a sign-in that succeeds clears the count. A client network
//!   is its IPv4 address, or its IPv6 /64 (what one host or site usually holds).
//! - per account, across all networks: a budget of `account_burst` attempts that regains
//!   one every `account_refill` (a token bucket). Spent, it slows sign-in for that account
//!   down to that rate, it never locks the account out.
//! - per client network, across all accounts: a budget of `network_burst` attempts that
//!   regains one every `network_refill` (0 attempts: no such budget), so that one client
//!   spraying emails it makes up cannot keep the password checks busy for everyone.
//!
//! The counts live in this process's memory: each `serve` process counts on its own, and a
//! restart forgets them.

use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::client::client_network;
use crate::settings::PasswordLimits;

/// Attempts evaluated per (account, client network) within [`WINDOW`].
pub const MAX_ATTEMPTS: u32 = 5;
/// The window attempts are counted in, from the first one.
pub const WINDOW: Duration = Duration::from_secs(60);
/// The most pairs (and accounts) tracked; past it stale entries go, then the oldest, so
/// memory stays bounded.
const MAX_TRACKED: usize = 100_000;

/// Why an attempt is refused before its password is checked, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// This account from this network used its attempts for the window.
    Pair(Duration),
    /// This account used its budget across all networks.
    Account(Duration),
    /// This client network used its budget across all accounts.
    Network(Duration),
}

impl Refused {
    /// Seconds to wait, rounded up, at least 1: the `Retry-After` value.
    pub fn retry_after_secs(self) -> u64 {
        let (Self::Pair(wait) | Self::Account(wait) | Self::Network(wait)) = self;
        (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1)
    }
}

/// The counts of one (account, network) pair.
#[derive(Debug)]
struct Window {
    first: Instant,
    count: u32,
}

/// One account's (or network's) budget, as the time it is spent up to (the generic cell
/// rate algorithm's "theoretical arrival time"): at most `burst - 1` refills ahead of now.
#[derive(Debug)]
struct Budget {
    spent_until: Instant,
}

#[derive(Debug, Default)]
struct Counts {
    pairs: HashMap<(String, IpAddr), Window>,
    accounts: HashMap<String, Budget>,
    networks: HashMap<IpAddr, Budget>,
}

/// How a budget is sized: `burst` attempts at once, one more every `refill`.
#[derive(Debug, Clone, Copy)]
struct Rate {
    burst: u32,
    refill: Duration,
}

impl Rate {
    fn new(burst: u32, refill_secs: u32) -> Self {
        Self { burst, refill: Duration::from_secs(u64::from(refill_secs.max(1))) }
    }

    /// The time a budget spent up to `spent_until` is spent up to with one attempt more
    /// at `now`, or how long until it has one.
    fn take(self, spent_until: Option<&Budget>, now: Instant) -> Result<Instant, Duration> {
        let tolerance = self.refill * (self.burst.max(1) - 1);
        let spent_until = spent_until.map_or(now, |b| b.spent_until).max(now);
        let ahead = spent_until.duration_since(now);
        if ahead > tolerance {
            return Err(ahead - tolerance);
        }
        Ok(spent_until + self.refill)
    }

    /// Gives one attempt back to `budget`.
    fn refund(self, budget: Option<&mut Budget>) {
        if let Some(budget) = budget {
            budget.spent_until = budget.spent_until.checked_sub(self.refill).unwrap_or(budget.spent_until);
        }
    }
}

#[derive(Debug)]
pub struct Throttle {
    account: Rate,
    /// `None`: no budget per network.
    network: Option<Rate>,
    counts: Mutex<Counts>,
}

impl Default for Throttle {
    fn default() -> Self {
        Self::new(&PasswordLimits::default())
    }
}

impl Throttle {
    pub fn new(limits: &PasswordLimits) -> Self {
        Self {
            account: Rate::new(limits.account_burst, limits.account_refill_secs),
            network: (limits.network_burst > 0).then(|| Rate::new(limits.network_burst, limits.network_refill_secs)),
            counts: Mutex::default(),
        }
    }

    /// Counts an attempt for `account` from `address` before its password is checked, or
    /// says why and for how long it is refused (then nothing is counted).
    pub fn reserve(&self, account: &str, address: IpAddr) -> Result<(), Refused> {
        self.reserve_at(account, address, Instant::now())
    }

    fn reserve_at(&self, account: &str, address: IpAddr, now: Instant) -> Result<(), Refused> {
        let network = client_network(address);
        let key = (account.to_owned(), network);
        let mut counts = self.counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let count = counts.pairs.get(&key).filter(|w| now.duration_since(w.first) < WINDOW).map_or(0, |w| w.count);
        if count >= MAX_ATTEMPTS {
            let first = counts.pairs.get(&key).map_or(now, |w| w.first);
            return Err(Refused::Pair((first + WINDOW).saturating_duration_since(now)));
        }
        let account_spent = self.account.take(counts.accounts.get(account), now).map_err(Refused::Account)?;
        let network_spent = match self.network {
            Some(rate) => Some(rate.take(counts.networks.get(&network), now).map_err(Refused::Network)?),
            None => None,
        };
        bound(&mut counts.pairs, |w| now.duration_since(w.first) >= WINDOW, |w| w.first);
        let window = counts.pairs.entry(key).or_insert(Window { first: now, count: 0 });
        if now.duration_since(window.first) >= WINDOW {
            *window = Window { first: now, count: 0 };
        }
        window.count += 1;
        bound(&mut counts.accounts, |b| b.spent_until <= now, |b| b.spent_until);
        counts.accounts.insert(account.to_owned(), Budget { spent_until: account_spent });
        if let Some(spent_until) = network_spent {
            bound(&mut counts.networks, |b| b.spent_until <= now, |b| b.spent_until);
            counts.networks.insert(network, Budget { spent_until });
        }
        Ok(())
    }

    /// Gives back an attempt [`reserve`](Self::reserve) counted but that was never evaluated
    /// (the server was too busy to check the password).
    pub fn release(&self, account: &str, address: IpAddr) {
        let mut counts = self.counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(window) = counts.pairs.get_mut(&(account.to_owned(), client_network(address))) {
            window.count = window.count.saturating_sub(1);
        }
        self.refund(&mut counts, account, address);
    }

    /// A sign-in that succeeded: its pair starts afresh, and its attempt goes back to the
    /// account's and the network's budgets (so many people signing in from behind one
    /// address do not spend it).
    pub fn succeeded(&self, account: &str, address: IpAddr) {
        let mut counts = self.counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        counts.pairs.remove(&(account.to_owned(), client_network(address)));
        self.refund(&mut counts, account, address);
    }

    fn refund(&self, counts: &mut Counts, account: &str, address: IpAddr) {
        self.account.refund(counts.accounts.get_mut(account));
        if let Some(rate) = self.network {
            rate.refund(counts.networks.get_mut(&client_network(address)));
        }
    }
}

/// Keeps `map` under [`MAX_TRACKED`] entries before one is added: stale ones go first,
/// then the oldest.
fn bound<K: Clone + Eq + Hash, V>(map: &mut HashMap<K, V>, stale: impl Fn(&V) -> bool, age: impl Fn(&V) -> Instant) {
    if map.len() < MAX_TRACKED {
        return;
    }
    map.retain(|_, v| !stale(v));
    if map.len() >= MAX_TRACKED {
        let oldest = map.iter().min_by_key(|(_, v)| age(v)).map(|(k, _)| k.clone());
        oldest.map(|k| map.remove(&k));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn throttle(burst: u32, refill_secs: u32) -> Throttle {
        let limits = PasswordLimits { network_burst: 0, ..Default::default() };
        Throttle::new(&PasswordLimits { account_burst: burst, account_refill_secs: refill_secs, ..limits })
    }

    fn network_throttle(burst: u32, refill_secs: u32) -> Throttle {
        Throttle::new(&PasswordLimits { network_burst: burst, network_refill_secs: refill_secs, ..Default::default() })
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn a_pair_gets_max_attempts_per_window_then_waits_for_its_end() {
        let throttle = throttle(100, 1);
        let (start, here, there) = (Instant::now(), ip("10.0.0.1"), ip("10.0.0.2"));
        for _ in 0..MAX_ATTEMPTS {
            throttle.reserve_at("a@example.com", here, start).unwrap();
        }
        let later = start + Duration::from_secs(20);
        assert_eq!(throttle.reserve_at("a@example.com", here, later), Err(Refused::Pair(Duration::from_secs(40))));
        throttle.reserve_at("a@example.com", there, later).expect("another address");
        throttle.reserve_at("b@example.com", here, later).expect("another account");
        throttle.reserve_at("a@example.com", here, start + WINDOW).expect("a new window");
        throttle.succeeded("a@example.com", here);
        throttle.reserve_at("a@example.com", here, start + WINDOW).expect("cleared by a success");
    }

    #[test]
    fn ipv6_clients_count_by_their_64() {
        let throttle = throttle(100, 1);
        let now = Instant::now();
        for i in 0..MAX_ATTEMPTS {
            throttle.reserve_at("a@example.com", ip(&format!("2001:db8:1:2::{i:x}")), now).unwrap();
        }
        let same_64 = ip("2001:db8:1:2:ffff:ffff:ffff:ffff");
        assert!(matches!(throttle.reserve_at("a@example.com", same_64, now), Err(Refused::Pair(_))));
        throttle.reserve_at("a@example.com", ip("2001:db8:1:3::1"), now).expect("another /64");
        assert_eq!(client_network(ip("::ffff:192.0.2.1")), ip("192.0.2.1"));
        assert_eq!(client_network(ip("2001:db8::1:2:3:4")), ip("2001:db8::"));
    }

    #[test]
    fn the_account_budget_slows_down_across_addresses_and_refills() {
        let throttle = throttle(3, 30);
        let now = Instant::now();
        for i in 0..3 {
            throttle.reserve_at("a@example.com", ip(&format!("10.0.1.{i}")), now).unwrap();
        }
        let refused = throttle.reserve_at("a@example.com", ip("10.0.2.1"), now);
        assert_eq!(refused, Err(Refused::Account(Duration::from_secs(30))));
        assert_eq!(refused.unwrap_err().retry_after_secs(), 30);
        throttle.reserve_at("b@example.com", ip("10.0.2.1"), now).expect("another account");
        let later = now + Duration::from_secs(30);
        throttle.reserve_at("a@example.com", ip("10.0.2.1"), later).expect("one attempt regained");
        assert!(throttle.reserve_at("a@example.com", ip("10.0.2.2"), later).is_err(), "only one");
        throttle.release("a@example.com", ip("10.0.2.1"));
        throttle.reserve_at("a@example.com", ip("10.0.2.2"), later).expect("a released attempt comes back");
    }

    #[test]
    fn the_network_budget_counts_every_account_and_refills() {
        let throttle = network_throttle(3, 2);
        let (now, here) = (Instant::now(), ip("192.0.2.1"));
        for i in 0..3 {
            throttle.reserve_at(&format!("made-up-{i}@example.com"), here, now).unwrap();
        }
        let refused = throttle.reserve_at("pat@example.com", here, now);
        assert_eq!(refused, Err(Refused::Network(Duration::from_secs(2))));
        throttle.reserve_at("pat@example.com", ip("192.0.2.2"), now).expect("another network");
        let v6 = |host: u32| ip(&format!("2001:db8:7:7::{host:x}"));
        for i in 0..3 {
            throttle.reserve_at(&format!("v6-{i}@example.com"), v6(i), now).unwrap();
        }
        assert!(matches!(throttle.reserve_at("a@example.com", v6(9), now), Err(Refused::Network(_))), "one /64");
        throttle.reserve_at("pat@example.com", here, now + Duration::from_secs(2)).expect("one attempt regained");
        throttle.succeeded("pat@example.com", here);
        throttle.reserve_at("kim@example.com", here, now + Duration::from_secs(2)).expect("a success gives back");
        assert!(network_throttle(0, 2).network.is_none(), "0 turns it off");
    }

    #[test]
    fn retry_after_rounds_up_to_a_whole_second() {
        assert_eq!(Refused::Pair(Duration::from_millis(1)).retry_after_secs(), 1);
        assert_eq!(Refused::Pair(Duration::ZERO).retry_after_secs(), 1);
        assert_eq!(Refused::Account(Duration::from_millis(2_500)).retry_after_secs(), 3);
        assert_eq!(Refused::Account(Duration::from_secs(2)).retry_after_secs(), 2);
    }
}
