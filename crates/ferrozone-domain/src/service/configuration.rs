//! The configuration singleton's use cases: show it, change its stored keys.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;
use uuid::Uuid;

use super::{Domain, Principal};
use crate::configuration::provider_lists::{self, CurrentProviders, ProviderLists};
use crate::configuration::{patch, Values, ID_ROW, INSERTED_AT_ROW, KEYS, ROW_PREFIX, UPDATED_AT_ROW};
use crate::error::{DomainError, Result};
use crate::input::ConfigurationChanges;
use crate::providers::Providers;
use crate::settings::{ClientDefaults, Settings};
use crate::time::Timestamp;
use crate::Errors;

mod lists;
mod watch;

pub use watch::SAFETY_RELOAD;

/// The configuration values in effect, and the client defaults taken from them once rather
/// than on every read of a device.
pub(crate) struct InEffect {
    values: Arc<Values>,
    client_defaults: Arc<ClientDefaults>,
}

impl InEffect {
    pub(crate) fn new(values: Values) -> Self {
        Self { client_defaults: Arc::new(values.client_defaults()), values: Arc::new(values) }
    }
}

/// The singleton as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Configuration {
    pub id: Uuid,
    pub values: Values,
    pub providers: ProviderLists,
    pub inserted_at: Timestamp,
    pub updated_at: Timestamp,
}

/// A check of new provider lists beyond the parser's (the SAML metadata, which the web
/// layer reads): the message, or nothing.
pub type ProviderCheck<'a> = &'a (dyn Fn(&Providers) -> std::result::Result<(), String> + Send + Sync);

impl Domain {
    /// The effective configuration, read from the database now (admins only).
    pub async fn configuration(&self, actor: &Principal) -> Result<Configuration> {
        actor.require_admin()?;
        self.load_configuration().await
    }

    /// Stores the keys `sent` changes, after checking them all (new provider lists also
    /// with `check`); answers the result.
    pub async fn update_configuration(
        &self,
        actor: &Principal,
        sent: &ConfigurationChanges,
        check: ProviderCheck<'_>,
    ) -> Result<Configuration> {
        actor.require_admin()?;
        let fixed = &self.settings().fixed;
        let mut errors = Errors::new();
        let changes = patch::collect(sent, fixed, &mut errors);
        let current = self.load_providers().await?;
        let lists = provider_lists::check(sent, &current.lists, fixed, &mut errors);
        if let Some((_, providers, _)) = &lists {
            if let Err(message) = check(providers) {
                errors.add(provider_lists::SAML_KEY, message);
            }
        }
        errors.finish(())?;
        let mut rows: Vec<(String, Vec<u8>)> = changes
            .into_iter()
            .map(|(key, value)| (format!("{ROW_PREFIX}{key}"), value.to_string().into_bytes()))
            .collect();
        if let Some((lists, _, keys)) = &lists {
            rows.extend(keys.iter().map(|key| (format!("{ROW_PREFIX}{key}"), self.seal_list(lists.get(key)))));
        }
        if !rows.is_empty() {
            rows.push((UPDATED_AT_ROW.to_owned(), Timestamp::now().micros().to_string().into_bytes()));
            self.store().put_settings(&rows).await?;
        }
        let configuration = self.load_configuration().await?;
        self.remember(configuration.values.clone());
        self.remember_providers(self.load_providers().await?);
        Ok(configuration)
    }

    /// The effective values as this process last read them: at start, after its own
    /// PATCH, and on every change [`Self::watch_configuration`] hears of.
    pub fn current_values(&self) -> Arc<Values> {
        self.in_effect().values.clone()
    }

    fn in_effect(&self) -> std::sync::RwLockReadGuard<'_, InEffect> {
        self.configuration_values.read().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The provider lists in effect, read as [`Self::current_values`] are. The `Arc` is
    /// replaced only when they change, so a reader may rebuild what it derives from them
    /// when the pointer differs.
    pub fn current_providers(&self) -> Arc<CurrentProviders> {
        self.configuration_providers.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// What a device gets for each `use_default_*` that is on, now.
    pub fn client_defaults(&self) -> Arc<ClientDefaults> {
        self.in_effect().client_defaults.clone()
    }

    /// Reads the stored values again (what other processes changed).
    pub async fn reload_configuration(&self) -> Result<()> {
        let values = self.load_values().await?;
        let providers = self.load_providers().await?;
        self.remember(values);
        self.remember_providers(providers);
        self.load_imported_token_secret().await
    }

    /// Makes `values` the current ones. A new `vpn_session_duration` changes which devices
    /// are active, so it wakes the peer reconcile (here, in every process that reads it).
    /// A new `egress_default_action` wakes the table keeper, which reads it with the rules.
    fn remember(&self, values: Values) {
        let (duration, default_action) = (values.vpn_session_duration, values.egress_default_action);
        let previous = std::mem::replace(
            &mut *self.configuration_values.write().unwrap_or_else(std::sync::PoisonError::into_inner),
            InEffect::new(values),
        );
        if previous.values.vpn_session_duration != duration {
            tracing::info!(vpn_session_duration = duration, "the VPN session duration changed");
            self.peers_changed();
        }
        if previous.values.egress_default_action != default_action {
            tracing::info!(egress_default_action = default_action.as_str(), "the egress default action changed");
            self.rules_changed();
        }
    }

    pub(super) async fn load_values(&self) -> Result<Values> {
        let mut stored = BTreeMap::new();
        for key in KEYS {
            if let Some(bytes) = self.store().setting(&format!("{ROW_PREFIX}{key}")).await? {
                if let Ok(value) = serde_json::from_slice::<Value>(&bytes) {
                    stored.insert(key.to_owned(), value);
                }
            }
        }
        let settings = self.settings();
        Ok(Values::effective(&settings.configuration, &stored, &settings.fixed))
    }

    async fn load_configuration(&self) -> Result<Configuration> {
        let values = self.load_values().await?;
        let providers = self.load_providers().await?.lists;
        let id = self.store().init_setting(ID_ROW, Uuid::new_v4().to_string().as_bytes()).await?;
        let now = Timestamp::now().micros().to_string();
        let inserted_at = micros(&self.store().init_setting(INSERTED_AT_ROW, now.as_bytes()).await?)?;
        let updated_at = match self.store().setting(UPDATED_AT_ROW).await? {
            Some(bytes) => micros(&bytes)?,
            None => inserted_at,
        };
        let id = std::str::from_utf8(&id).ok().and_then(|s| s.parse().ok()).ok_or_else(|| corrupt(ID_ROW))?;
        Ok(Configuration { id, values, providers, inserted_at, updated_at })
    }
}

/// The providers in effect before anything is read: the environment's.
pub(super) fn start_up_providers(settings: &Settings) -> CurrentProviders {
    let providers = settings.providers.parse().unwrap_or_else(|e| {
        tracing::error!(error = %e, "the environment's provider lists do not parse; none are in effect");
        Providers::default()
    });
    CurrentProviders { lists: settings.providers.clone(), providers, stored: false }
}

fn micros(bytes: &[u8]) -> Result<Timestamp> {
    let text = std::str::from_utf8(bytes).map_err(|_| corrupt("configuration timestamp"))?;
    text.parse().map(Timestamp::from_micros).map_err(|_| corrupt("configuration timestamp"))
}

fn corrupt(what: &str) -> DomainError {
    DomainError::Internal(anyhow::anyhow!("the stored {what} is unreadable"))
}
