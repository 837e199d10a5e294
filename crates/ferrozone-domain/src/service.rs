//! Use cases. The HTTP API and the command line both call these, so both enforce
//! the same rules; handlers only translate.

pub mod access;
pub mod account;
pub mod adding_devices;
pub mod audit_log;
pub mod configuration;
pub mod console;
pub mod dataplane;
pub mod device_rights;
pub mod devices;
pub mod gateway_state;
pub mod gateways;
pub mod groups;
mod imported_tokens;
pub mod mail;
pub mod oidc;
pub mod password_gate;
pub mod personal_tokens;
pub mod providers;
pub mod refused_sign_ins;
pub mod rules;
pub mod scim;
mod scim_walks;
pub mod sessions;
pub mod sign_in_links;
pub mod throttle;
mod throttled;
pub mod tokens;
pub mod totp;
pub mod user_directory;
pub mod users;
pub mod webhooks;

use std::sync::Arc;

use anyhow::Context;
use tokio::sync::Notify;
use uuid::Uuid;
use zeroize::Zeroizing;

use crate::crypto::{generate_keypair, public_key_of, Cipher, FormTokenKey, Sealed, FORM_TOKEN_PURPOSE};
use crate::error::{DomainError, Result};
use crate::model::Role;
use crate::settings::Settings;
use crate::store::Store;

const KEY_CHECK_SETTING: &str = "secret_key_check";
const KEY_CHECK_PLAINTEXT: &[u8] = b"ferrozone secret key check v1";
pub const SERVER_KEY_SETTING: &str = "wireguard_private_key";

/// Who is acting: a token's (or session's) user, or the local operator using the CLI,
/// who has direct access to the database and so acts as an admin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub user_id: Option<Uuid>,
    pub role: Role,
    pub token_id: Option<Uuid>,
}

impl Principal {
    pub fn operator() -> Self {
        Self { user_id: None, role: Role::Admin, token_id: None }
    }

    pub fn is_admin(&self) -> bool {
        self.role == Role::Admin
    }

    pub fn require_admin(&self) -> Result<()> {
        if self.is_admin() {
            Ok(())
        } else {
            Err(DomainError::Forbidden)
        }
    }
}

/// Everything a use case needs: the store, the settings and the secrets.
pub struct Domain {
    store: Arc<dyn Store>,
    settings: Arc<Settings>,
    cipher: Cipher,
    server_public_key: String,
    server_private_key: Zeroizing<String>,
    /// Notified after every committed change that can change the WireGuard peers.
    data_plane_changes: crate::model::DataPlaneChanges,
    /// Sign-in flows started per client address, for their cap.
    flow_starts: providers::FlowStarts,
    /// The bound on password hashing and verification.
    passwords: password_gate::PasswordGate,
    /// Refused sign-ins of unknown accounts, counted until their summary is written.
    refused_unknown: refused_sign_ins::Tally,
    /// This process's counts of password and code attempts ([`throttle`]).
    throttle: throttle::Throttle,
    /// The key of the sign-in form's tokens, derived from the secret key.
    form_key: FormTokenKey,
    /// The effective configuration as last read ([`configuration`]).
    configuration_values: std::sync::RwLock<configuration::InEffect>,
    /// The provider lists in effect as last read ([`configuration`]).
    configuration_providers: std::sync::RwLock<Arc<crate::configuration::provider_lists::CurrentProviders>>,
    /// The signing secret of an imported Firezone installation ([`imported_tokens`]).
    imported_token_secret: imported_tokens::ImportedTokenSecret,
    /// Notified when this process queues an email, so that its mail worker sends it at once.
    mail_queued: Arc<Notify>,
    /// Where the walks through every SCIM user stand ([`scim_walks`]).
    scim_walks: scim_walks::Walks,
    /// The state gateways on other hosts poll ([`gateway_state`]).
    gateway_states: gateway_state::StateHub,
}

impl Domain {
    /// Checks the secret key against the database and loads (or, on first start,
    /// creates) the server's WireGuard keypair, which every instance shares.
    pub async fn open(store: Arc<dyn Store>, settings: Arc<Settings>, cipher: Cipher) -> anyhow::Result<Self> {
        let check = cipher.seal(KEY_CHECK_PLAINTEXT);
        let stored = store.init_setting(KEY_CHECK_SETTING, &check.0).await?;
        let opened = cipher.open(&Sealed(stored)).ok();
        if opened.as_deref().map(Vec::as_slice) != Some(KEY_CHECK_PLAINTEXT) {
            anyhow::bail!(
                "the secret key does not match the one this database was set up with; \
                 set FERROZONE_SECRET_KEY (or FERROZONE_SECRET_KEY_FILE) to that key"
            );
        }
        let fresh = generate_keypair();
        let sealed = cipher.seal(fresh.private_key.as_bytes());
        let stored = store.init_setting(SERVER_KEY_SETTING, &sealed.0).await?;
        let private_key =
            Zeroizing::new(cipher.open_str(&Sealed(stored)).context("reading the server's WireGuard key")?);
        let server_public_key = public_key_of(&private_key).context("the stored server WireGuard key is invalid")?;
        let flow_starts = providers::FlowStarts::default();
        let passwords = password_gate::PasswordGate::new(&settings.passwords);
        let throttle = throttle::Throttle::new(&settings.passwords);
        let form_key = FormTokenKey::new(cipher.derive_key(FORM_TOKEN_PURPOSE));
        let configuration_values = std::sync::RwLock::new(configuration::InEffect::new(settings.configuration.clone()));
        let configuration_providers = std::sync::RwLock::new(Arc::new(configuration::start_up_providers(&settings)));
        let domain = Self {
            store,
            settings,
            cipher,
            server_public_key,
            server_private_key: private_key,
            data_plane_changes: Default::default(),
            flow_starts,
            passwords,
            refused_unknown: Default::default(),
            throttle,
            form_key,
            configuration_values,
            configuration_providers,
            imported_token_secret: Default::default(),
            mail_queued: Arc::new(Notify::new()),
            scim_walks: Default::default(),
            gateway_states: Default::default(),
        };
        domain.reload_configuration().await?;
        Ok(domain)
    }

    /// The store, for the use cases. Outer layers call use cases, never the store.
    pub(crate) fn store(&self) -> &dyn Store {
        self.store.as_ref()
    }

    /// The store, shared, for work a use case leaves running after it returns.
    pub(crate) fn shared_store(&self) -> Arc<dyn Store> {
        Arc::clone(&self.store)
    }

    /// Checks that the database answers (for the health check).
    pub async fn check_storage(&self) -> Result<()> {
        self.store.ping().await
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    pub fn server_public_key(&self) -> &str {
        &self.server_public_key
    }

    /// Decrypts a stored secret (a preshared key) for a response.
    pub fn reveal(&self, sealed: &Sealed) -> Result<String> {
        Ok(self.cipher.open_str(sealed)?)
    }

    pub(crate) fn cipher(&self) -> &Cipher {
        &self.cipher
    }

    /// The bound on password hashing and verification.
    pub fn password_gate(&self) -> &password_gate::PasswordGate {
        &self.passwords
    }
}
