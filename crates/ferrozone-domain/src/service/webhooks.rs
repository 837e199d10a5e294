//! Webhooks: administrators register endpoints; a delivery worker works through the
//! [`Outbox`] (docs/api.md section 5e, docs/operations.md "Webhooks").

use std::sync::Arc;

use uuid::Uuid;
use zeroize::Zeroizing;

use super::{Domain, Principal};
use crate::audit::{AuditQuery, EventRecord};
use crate::crypto::{Cipher, Sealed};
use crate::error::{DomainError, Result};
use crate::store::Store;
use crate::time::Timestamp;
use crate::webhook::validate::{self, NewWebhook, WebhookChanges};
use crate::webhook::{Attempt, Progress, Webhook, WebhookInsert, WebhookLease, WebhookUpdate, KEPT_ATTEMPTS};

/// An endpoint with the secret that was just set: shown once, in the answer to its
/// creation or rotation.
pub struct WithSecret {
    pub webhook: Webhook,
    pub secret: Option<Zeroizing<String>>,
}

impl Domain {
    pub async fn list_webhooks(&self, actor: &Principal) -> Result<Vec<Webhook>> {
        actor.require_admin()?;
        self.store().list_webhooks().await
    }

    pub async fn get_webhook(&self, actor: &Principal, id: Uuid) -> Result<Webhook> {
        actor.require_admin()?;
        self.store().webhook_by_id(id).await?.ok_or(DomainError::NotFound)
    }

    pub async fn create_webhook(&self, actor: &Principal, input: &NewWebhook) -> Result<WithSecret> {
        actor.require_admin()?;
        let checked = validate::create(input, self.settings().webhook_allow_private)?;
        let insert = WebhookInsert {
            id: Uuid::new_v4(),
            url: checked.url,
            events: checked.events,
            secret: self.cipher().seal(checked.secret.as_bytes()),
            enabled: checked.enabled,
            now: Timestamp::now(),
        };
        let webhook = self.store().insert_webhook(&insert).await?;
        tracing::info!(webhook.id = %webhook.id, "webhook created");
        Ok(WithSecret { webhook, secret: Some(checked.secret) })
    }

    pub async fn update_webhook(&self, actor: &Principal, id: Uuid, input: &WebhookChanges) -> Result<WithSecret> {
        actor.require_admin()?;
        let checked = validate::update(input, self.settings().webhook_allow_private)?;
        let update = WebhookUpdate {
            url: checked.url,
            events: checked.events,
            enabled: checked.enabled,
            secret: checked.secret.as_ref().map(|secret| self.cipher().seal(secret.as_bytes())),
        };
        let webhook = self.store().update_webhook(id, &update, Timestamp::now()).await?;
        tracing::info!(webhook.id = %webhook.id, secret_changed = update.secret.is_some(), "webhook updated");
        // Only a generated secret is shown: one the administrator gave, they already have.
        let secret = if input.rotate_secret { checked.secret } else { None };
        Ok(WithSecret { webhook, secret })
    }

    pub async fn delete_webhook(&self, actor: &Principal, id: Uuid) -> Result<()> {
        actor.require_admin()?;
        if !self.store().delete_webhook(id).await? {
            return Err(DomainError::NotFound);
        }
        tracing::info!(webhook.id = %id, "webhook deleted");
        Ok(())
    }

    /// The endpoint's last attempts, newest first.
    pub async fn webhook_attempts(&self, actor: &Principal, id: Uuid) -> Result<Vec<Attempt>> {
        actor.require_admin()?;
        self.store().webhook_by_id(id).await?.ok_or(DomainError::NotFound)?;
        self.store().webhook_attempts(id, KEPT_ATTEMPTS as u32).await
    }

    /// What the delivery worker works with.
    pub fn webhook_outbox(&self) -> Outbox {
        Outbox {
            store: self.shared_store(),
            cipher: self.cipher().clone(),
            allow_private: self.settings().webhook_allow_private,
        }
    }
}

/// The delivery side of webhooks: leases on endpoints, the events to send and the
/// record of each attempt. Used by the delivery worker only.
#[derive(Clone)]
pub struct Outbox {
    store: Arc<dyn Store>,
    cipher: Cipher,
    allow_private: bool,
}

impl Outbox {
    /// Whether loopback, link-local and private addresses may be called.
    pub fn allow_private(&self) -> bool {
        self.allow_private
    }

    pub async fn claim(&self, owner: Uuid, now: Timestamp, until: Timestamp, limit: u32) -> Result<Vec<WebhookLease>> {
        self.store.claim_webhooks(owner, now, until, limit).await
    }

    pub async fn renew(&self, id: Uuid, owner: Uuid, until: Timestamp) -> Result<bool> {
        self.store.renew_webhook_lease(id, owner, until).await
    }

    pub async fn record(&self, id: Uuid, owner: Uuid, progress: &Progress) -> Result<bool> {
        self.store.record_webhook_progress(id, owner, progress).await
    }

    pub async fn release(&self, id: Uuid, owner: Uuid) -> Result<()> {
        self.store.release_webhook_lease(id, owner).await
    }

    /// Up to `limit` events after `seq`, oldest first.
    pub async fn events_after(&self, seq: i64, limit: u32) -> Result<Vec<EventRecord>> {
        self.store.audit_records(&AuditQuery { after_seq: Some(seq), limit, ..AuditQuery::default() }).await
    }

    /// The last event's seq.
    pub async fn head_seq(&self) -> Result<i64> {
        Ok(self.store.audit_head().await?.last_seq)
    }

    /// An endpoint's secret, to sign with.
    pub fn open_secret(&self, sealed: &Sealed) -> Result<Zeroizing<Vec<u8>>> {
        Ok(self.cipher.open(sealed)?)
    }
}
