//! The sending side of the email outbox ([`crate::email`]): what the mail worker of each
//! process works with.

use std::sync::Arc;

use tokio::sync::Notify;
use uuid::Uuid;

use super::Domain;
use crate::crypto::Cipher;
use crate::email::{EmailLease, EmailOutcome, Message};
use crate::error::Result;
use crate::store::Store;
use crate::time::Timestamp;

impl Domain {
    /// What the mail worker works with.
    pub fn mail_outbox(&self) -> MailOutbox {
        MailOutbox { store: self.shared_store(), cipher: self.cipher().clone(), queued: Arc::clone(&self.mail_queued) }
    }
}

/// Leases on queued messages, their text, and the record of each attempt.
#[derive(Clone)]
pub struct MailOutbox {
    store: Arc<dyn Store>,
    cipher: Cipher,
    queued: Arc<Notify>,
}

impl MailOutbox {
    /// Notified when this process queues a message.
    pub fn queued(&self) -> Arc<Notify> {
        Arc::clone(&self.queued)
    }

    pub async fn claim(&self, owner: Uuid, now: Timestamp, until: Timestamp, limit: u32) -> Result<Vec<EmailLease>> {
        self.store.claim_emails(owner, now, until, limit).await
    }

    /// The message a lease holds. A message that does not open or decode (sealed under
    /// another key) is an error, which the worker records as a give-up.
    pub fn open(&self, lease: &EmailLease) -> anyhow::Result<Message> {
        let plain = self.cipher.open(&lease.message)?;
        Ok(serde_json::from_slice(&plain)?)
    }

    pub async fn record(&self, id: Uuid, owner: Uuid, outcome: &EmailOutcome) -> Result<bool> {
        self.store.record_email_attempt(id, owner, outcome).await
    }

    /// Deletes what is older than `before` and done: messages sent or given up, links
    /// expired.
    pub async fn prune(&self, before: Timestamp, max: u32) -> Result<u64> {
        self.store.prune_sign_in_links(before, max).await
    }
}
