//! Refused sign-ins of accounts that do not exist, summarised (docs/operations.md, "Audit
//! log"). One event per refused attempt let anyone who types made-up emails grow the log
//! (kept forever by default) and hold webhook deliveries up behind it; so such attempts
//! are counted per client network (an IPv4 address, an IPv6 /64) and window, and each
//! window becomes one [`SUMMARY_ACTION`] event: how many, when, from where, and the first
//! few accounts typed. The window starts at the first refusal and lasts [`WINDOW_SECS`];
//! its event is written when a later refusal from that network finds it over, or by
//! [`Domain::keep_refused_sign_ins_summarised`] within [`SUMMARY_PERIOD_SECS`] after its
//! end, and every open one when `serve` stops.
//!
//! The counts live in this process's memory until written: a process that is killed loses
//! at most one window per network.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;

use super::Domain;
use crate::audit::{Actor, Change, NewAuditEvent, Origin, Subject};
use crate::client::client_network;
use crate::time::Timestamp;

/// The action of a summary. Webhooks receive it only when they name it (see
/// [`crate::webhook::wants`]).
pub const SUMMARY_ACTION: &str = "user.sign_in_refused_summary";
/// How long a window lasts, from its first refusal.
pub const WINDOW_SECS: i64 = 60;
/// The typed accounts a summary keeps (the first distinct ones of its window).
pub const KEPT_ACCOUNTS: usize = 5;
/// The most characters of a typed account kept.
const MAX_ACCOUNT_CHARS: usize = 254;
/// How often `serve` looks for windows that are over.
pub const SUMMARY_PERIOD_SECS: u64 = 5;
/// The most windows open at once; past it the oldest is written at once.
const MAX_OPEN: usize = 10_000;

/// The open windows, by (client network, method).
#[derive(Debug, Default)]
pub(crate) struct Tally {
    open: Mutex<HashMap<(IpAddr, String), Window>>,
}

/// One network's refusals in one window.
#[derive(Debug, Clone, PartialEq)]
struct Window {
    network: IpAddr,
    method: String,
    first: Timestamp,
    last: Timestamp,
    count: u64,
    accounts: Vec<String>,
}

impl Window {
    fn over(&self, now: Timestamp) -> bool {
        now >= self.first.plus_secs(WINDOW_SECS)
    }

    fn event(&self) -> NewAuditEvent {
        let network = match self.network {
            IpAddr::V4(v4) => v4.to_string(),
            IpAddr::V6(v6) => format!("{v6}/64"),
        };
        let changes = vec![
            Change::value("method", None, Some(self.method.clone().into())),
            Change::value("reason", None, Some("unknown_account".into())),
            Change::value("count", None, Some(self.count.into())),
            Change::value("first_at", None, Some(self.first.to_string().into())),
            Change::value("last_at", None, Some(self.last.to_string().into())),
            Change::value("accounts", None, Some(self.accounts.clone().into())),
        ];
        let origin = Origin { client_address: Some(network), request_id: None };
        let subject = Subject { kind: "user".into(), id: None };
        NewAuditEvent::new(Actor::anonymous(), SUMMARY_ACTION, subject, origin).with_changes(changes)
    }
}

impl Tally {
    /// Counts a refusal of `account` by `method` from `address` at `now`; returns the
    /// windows to write now (this network's that was over, or the oldest when too many
    /// are open).
    fn count(&self, account: &str, method: &str, address: IpAddr, now: Timestamp) -> Vec<Window> {
        let network = client_network(address);
        let mut open = self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let key = (network, method.to_owned());
        let mut due = Vec::new();
        match open.get_mut(&key) {
            Some(window) if !window.over(now) => {
                window.add(account, now);
                return due;
            }
            Some(_) => due.extend(open.remove(&key)),
            None => {}
        }
        if open.len() >= MAX_OPEN {
            let oldest = open.iter().min_by_key(|(_, w)| w.first).map(|(k, _)| k.clone());
            due.extend(oldest.and_then(|k| open.remove(&k)));
        }
        let mut window =
            Window { network, method: method.to_owned(), first: now, last: now, count: 0, accounts: Vec::new() };
        window.add(account, now);
        open.insert(key, window);
        due
    }

    /// Takes the windows that are over at `now`, or all with `all`.
    fn take(&self, now: Timestamp, all: bool) -> Vec<Window> {
        let mut open = self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let keys: Vec<_> = open.iter().filter(|(_, w)| all || w.over(now)).map(|(k, _)| k.clone()).collect();
        let mut due: Vec<Window> = keys.iter().filter_map(|k| open.remove(k)).collect();
        due.sort_by_key(|w| w.first);
        due
    }
}

impl Window {
    fn add(&mut self, account: &str, now: Timestamp) {
        self.count += 1;
        self.last = now;
        let typed: String = account.chars().take(MAX_ACCOUNT_CHARS).collect();
        if self.accounts.len() < KEPT_ACCOUNTS && !self.accounts.contains(&typed) {
            self.accounts.push(typed);
        }
    }
}

impl Domain {
    /// Counts a refused sign-in of `account`, which names no user, in its network's window
    /// (writing any window that is due).
    pub(crate) async fn count_unknown_account_refusal(&self, account: &str, method: &str, address: IpAddr) {
        let due = self.refused_unknown.count(account, method, address, Timestamp::now());
        self.write_summaries(&due).await;
    }

    /// Writes the summaries of the windows that are over (with `all`, of every open one:
    /// when the server stops). A failure is logged: the refusals stand either way.
    pub async fn record_refused_sign_in_summaries(&self, all: bool) {
        let due = self.refused_unknown.take(Timestamp::now(), all);
        self.write_summaries(&due).await;
    }

    /// Writes each summary once its window is over, every [`SUMMARY_PERIOD_SECS`], forever.
    pub async fn keep_refused_sign_ins_summarised(&self) {
        let mut ticks = tokio::time::interval(std::time::Duration::from_secs(SUMMARY_PERIOD_SECS));
        loop {
            ticks.tick().await;
            self.record_refused_sign_in_summaries(false).await;
        }
    }

    async fn write_summaries(&self, due: &[Window]) {
        if due.is_empty() {
            return;
        }
        let events: Vec<_> = due.iter().map(Window::event).collect();
        if let Err(e) = self.store().append_audit_events(&events).await {
            tracing::warn!(error = %e, windows = due.len(), "recording refused sign-ins failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn one_window_per_network_counts_every_refusal_and_keeps_a_few_accounts() {
        let (tally, start) = (Tally::default(), Timestamp::from_secs(1_000));
        for i in 0..20 {
            let due = tally.count(&format!("made-up-{}@example.com", i % 7), "password", ip("192.0.2.1"), start);
            assert!(due.is_empty());
        }
        let later = start.plus_secs(1);
        assert!(tally.count("x@example.com", "password", ip("2001:db8::1"), later).is_empty());
        assert!(tally.count("y@example.com", "password", ip("2001:db8::ffff"), later).is_empty(), "the same /64");
        assert!(tally.take(start.plus_secs(WINDOW_SECS - 1), false).is_empty(), "not over yet");
        let due = tally.take(later.plus_secs(WINDOW_SECS), false);
        assert_eq!(due.iter().map(|w| w.count).collect::<Vec<_>>(), [20, 2]);
        assert_eq!(due[0].accounts.len(), KEPT_ACCOUNTS);
        assert_eq!(due[1].event().origin.client_address.as_deref(), Some("2001:db8::/64"));
        assert!(tally.take(start.plus_secs(WINDOW_SECS), true).is_empty(), "written once");
    }

    #[test]
    fn a_refusal_after_the_window_writes_it_and_starts_the_next() {
        let (tally, start) = (Tally::default(), Timestamp::from_secs(1_000));
        tally.count("a@example.com", "password", ip("192.0.2.1"), start);
        let due = tally.count("b@example.com", "password", ip("192.0.2.1"), start.plus_secs(WINDOW_SECS));
        assert_eq!(due.len(), 1);
        assert_eq!(due[0].accounts, ["a@example.com"]);
        let open = tally.take(start, true);
        assert_eq!((open[0].count, open[0].first), (1, start.plus_secs(WINDOW_SECS)));
    }
}
