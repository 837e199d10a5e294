//! Reading and writing the stored provider lists: one row per list, sealed with the
//! secret key (OpenID Connect entries hold client secrets).

use std::sync::Arc;

use serde_json::Value;

use super::super::Domain;
use super::start_up_providers;
use crate::configuration::provider_lists::{CurrentProviders, OIDC_KEY, SAML_KEY};
use crate::configuration::ROW_PREFIX;
use crate::crypto::Sealed;
use crate::error::Result;

impl Domain {
    /// The lists in effect now: a list the environment sets is the environment's, else the
    /// stored one, else the start-up one. Stored lists that no longer read or parse are
    /// logged and the start-up ones used.
    pub(super) async fn load_providers(&self) -> Result<CurrentProviders> {
        let settings = self.settings();
        let mut current = start_up_providers(settings);
        for key in [OIDC_KEY, SAML_KEY] {
            if settings.fixed.source(key).is_some() {
                continue;
            }
            let Some(bytes) = self.store().setting(&format!("{ROW_PREFIX}{key}")).await? else { continue };
            match self.open_list(bytes) {
                Ok(list) => {
                    *current.lists.get_mut(key) = list;
                    current.stored = true;
                }
                Err(e) => tracing::warn!(error = %e, key, "the stored provider list is unreadable; ignoring it"),
            }
        }
        if !current.stored {
            return Ok(current);
        }
        match current.lists.parse() {
            Ok(providers) => Ok(CurrentProviders { providers, ..current }),
            Err(e) => {
                tracing::warn!(error = %e, "the stored provider lists do not parse; using the start-up ones");
                Ok(start_up_providers(settings))
            }
        }
    }

    /// Keeps `current` unless it equals what is held (so the `Arc` changes only with them).
    pub(super) fn remember_providers(&self, current: CurrentProviders) {
        let mut held = self.configuration_providers.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        if held.lists != current.lists || held.stored != current.stored {
            *held = Arc::new(current);
        }
    }

    pub(super) fn seal_list(&self, list: &[Value]) -> Vec<u8> {
        self.cipher().seal(Value::Array(list.to_vec()).to_string().as_bytes()).0
    }

    fn open_list(&self, bytes: Vec<u8>) -> anyhow::Result<Vec<Value>> {
        let plain = self.cipher().open(&Sealed(bytes))?;
        Ok(serde_json::from_slice(&plain)?)
    }
}
