//! Reading the audit log: the API's `/v0/audit_events`, the console's audit page and
//! `ferrozone audit list` all page through it here, an admin's to read.

use std::collections::HashMap;
use std::net::IpAddr;

use uuid::Uuid;

use super::{Domain, Principal};
use crate::audit::{context, Actor, AuditEvent, AuditQuery, Change, NewAuditEvent, Origin, Subject};
use crate::error::Result;
use crate::model::User;

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

impl Domain {
    /// The emails of the users among `ids` (those a page of events names), an admin's to
    /// read, in one store read; a user deleted since is missing, and so shown by its id.
    pub async fn audit_user_emails(&self, actor: &Principal, ids: &[Uuid]) -> Result<HashMap<Uuid, String>> {
        actor.require_admin()?;
        let mut ids = ids.to_vec();
        ids.sort_unstable();
        ids.dedup();
        let users = self.store().users_by_ids(&ids).await?;
        Ok(users.into_iter().map(|user| (user.id, user.email)).collect())
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
    /// (the email typed) by `method` (`password`, `totp`, `recovery_code`) from
    /// `client_address`, when the account is a user's. `reason` is refined from the
    /// account: `disabled` rather than the caller's guess. An account that names no user is
    /// only counted, in its client network's summary ([`super::refused_sign_ins`]). Called
    /// only for attempts the sign-in throttle let through. A failure to record is logged:
    /// the refusal stands either way.
    pub async fn record_refused_sign_in(&self, account: &str, method: &str, reason: &str, client_address: IpAddr) {
        let user = match self.user_with_email(account).await {
            Ok(Some(user)) => user,
            Ok(None) => return self.count_unknown_account_refusal(account, method, client_address).await,
            Err(e) => {
                tracing::warn!(error = %e, "recording a refused sign-in failed");
                return;
            }
        };
        let reason = if user.disabled_at.is_some() { "disabled" } else { reason };
        let changes = vec![
            Change::value("method", None, Some(method.into())),
            Change::value("reason", None, Some(reason.into())),
        ];
        let mut origin = context::current().origin;
        origin.client_address = Some(client_address.to_string());
        self.append_refused_sign_in(Some(&user), Some(account), changes, origin).await;
    }

    /// Records a refused sign-in through the identity provider `provider_id` by `method`
    /// (`oidc`, `saml`) once the provider answered a flow this server started: `reason` is
    /// the caller's (the answer failed a check, the user is unknown or disabled, ...), and
    /// `email` the one the provider proved, when it proved one. The subject is that email's
    /// user, else the email is kept (cut short). Called at most once per flow, and flows
    /// are capped per address, so a flood cannot grow the log faster than flows start.
    pub async fn record_refused_provider_sign_in(
        &self,
        method: &str,
        provider_id: &str,
        email: Option<&str>,
        reason: &str,
    ) {
        let user = match email {
            Some(email) => self.user_with_email(email).await.ok().flatten(),
            None => None,
        };
        let changes = vec![
            Change::value("method", None, Some(method.into())),
            Change::value("reason", None, Some(reason.into())),
            Change::value("provider", None, Some(provider_id.into())),
        ];
        self.append_refused_sign_in(user.as_ref(), email, changes, context::current().origin).await;
    }

    /// Appends one `user.sign_in_refused` of `user` (or, with none, of the `account` given,
    /// cut short) with `changes`, from `origin`. A failure is logged, not returned.
    async fn append_refused_sign_in(
        &self,
        user: Option<&User>,
        account: Option<&str>,
        mut changes: Vec<Change>,
        origin: Origin,
    ) {
        if let (None, Some(account)) = (user, account) {
            let typed: String = account.chars().take(MAX_RECORDED_ACCOUNT).collect();
            changes.push(Change::value("account", None, Some(typed.into())));
        }
        let subject = Subject { kind: "user".into(), id: user.map(|u| u.id.to_string()) };
        let event =
            NewAuditEvent::new(Actor::anonymous(), "user.sign_in_refused", subject, origin).with_changes(changes);
        if let Err(e) = self.store().append_audit_events(&[event]).await {
            tracing::warn!(error = %e, "recording a refused sign-in failed");
        }
    }
}
