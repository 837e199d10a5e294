//! Reading the audit log: the API's `/v0/audit_events`, the console's audit page and
//! `ferrozone audit list` all page through it here, an admin's to read.

use super::{Domain, Principal};
use crate::audit::{context, Actor, AuditEvent, AuditQuery, Change, NewAuditEvent, Subject};
use crate::error::Result;

/// One page of events, newest first (or oldest first with `after_seq`).
#[derive(Debug, Clone, PartialEq)]
pub struct AuditPage {
    pub events: Vec<AuditEvent>,
    /// The seq the next page continues from (its `before_seq`, or `after_seq` when reading
    /// oldest first); `None` on the last page.
    pub next: Option<i64>,
}

impl Domain {
    /// The events `query` selects: one bounded read of at most `query.limit` rows. A row
    /// that no longer decodes (edited in the database) is left out of the page, which still
    /// continues after it; `ferrozone audit verify` names such rows.
    pub async fn audit_events(&self, actor: &Principal, query: &AuditQuery) -> Result<AuditPage> {
        actor.require_admin()?;
        let records = self.store().audit_records(query).await?;
        let full = query.limit > 0 && records.len() >= query.limit as usize;
        let next = records.last().filter(|_| full).map(|record| record.seq);
        let events = records.iter().filter_map(|record| record.decode()).collect();
        Ok(AuditPage { events, next })
    }
}

/// The most events one retention transaction removes: a batch holds the head row (and so
/// the sealing of new events) only briefly.
pub const PRUNE_BATCH: u32 = 1000;

impl Domain {
    /// Retention: removes every event recorded before `before`, oldest first, one batch
    /// of at most [`PRUNE_BATCH`] per transaction. Returns how many were removed.
    pub async fn prune_audit_log(&self, before: crate::time::Timestamp) -> Result<u64> {
        let mut removed = 0;
        loop {
            let batch = self.store().prune_audit_events(before, PRUNE_BATCH).await?;
            removed += batch;
            if batch < u64::from(PRUNE_BATCH) {
                return Ok(removed);
            }
        }
    }
}

impl Domain {
    /// Seals the audit events this process and others commit, as they come, forever (on
    /// PostgreSQL, whose appends leave the chaining to a sealer; elsewhere it just waits).
    pub async fn keep_audit_log_sealed(&self) {
        self.store().keep_audit_events_sealed().await
    }
}

/// The most characters of a typed account a refused sign-in's event keeps.
const MAX_RECORDED_ACCOUNT: usize = 254;

impl Domain {
    /// Records a refused sign-in (`user.sign_in_refused`, by nobody known) of `account`
    /// (the email typed) by `method` (`password`, `totp`, ...) from `client_address`. The
    /// subject is the user when the account exists, else the typed account is kept (cut
    /// short). `reason` is refined from the account: `unknown_account` or `disabled` rather
    /// than the caller's guess. Called only for attempts the sign-in throttle let through.
    /// A failure to record is logged: the refusal stands either way.
    pub async fn record_refused_sign_in(&self, account: &str, method: &str, reason: &str, client_address: String) {
        let user = self.user_with_email(account).await.ok().flatten();
        let reason = match &user {
            None => "unknown_account",
            Some(user) if user.disabled_at.is_some() => "disabled",
            Some(_) => reason,
        };
        let mut changes = vec![
            Change::value("method", None, Some(method.into())),
            Change::value("reason", None, Some(reason.into())),
        ];
        if user.is_none() {
            let typed: String = account.chars().take(MAX_RECORDED_ACCOUNT).collect();
            changes.push(Change::value("account", None, Some(typed.into())));
        }
        let subject = Subject { kind: "user".into(), id: user.map(|u| u.id.to_string()) };
        let mut origin = context::current().origin;
        origin.client_address = Some(client_address);
        let event =
            NewAuditEvent::new(Actor::anonymous(), "user.sign_in_refused", subject, origin).with_changes(changes);
        if let Err(e) = self.store().append_audit_events(&[event]).await {
            tracing::warn!(error = %e, "recording a refused sign-in failed");
        }
    }
}
