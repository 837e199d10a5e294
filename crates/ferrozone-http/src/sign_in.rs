//! The identity providers in effect: the start-up ones (the environment's) while the
//! configuration stores none, else those of the stored lists (docs/design/configuration.md,
//! "Configuration"), rebuilt when the domain reports that they changed.

use std::sync::{Arc, PoisonError, RwLock};

use ferrozone_domain::configuration::provider_lists::CurrentProviders;
use ferrozone_domain::providers::Providers;
use ferrozone_domain::Domain;
use ferrozone_oidc::Oidc;

use ferrozone_saml::signin::SamlSp;

/// The providers of one configuration, with their clients.
#[derive(Debug)]
pub struct SignIn {
    pub providers: Providers,
    /// The OpenID Connect client of those providers (the refresh job takes the current one).
    pub oidc: Arc<Oidc>,
    /// The SAML service provider with those IdPs.
    pub saml: Arc<SamlSp>,
}

/// The start-up set and the one last built from the stored lists.
#[derive(Debug)]
pub struct CurrentSignIn {
    external_url: String,
    start_up: Arc<SignIn>,
    /// What stored sets are built from: the entity id, key pair and limits.
    saml_base: Arc<SamlSp>,
    built: RwLock<Option<(Arc<CurrentProviders>, Arc<SignIn>)>>,
}

/// The prefix of the SAML SP's errors, which name the start-up variable.
const SAML_VARIABLE: &str = "FERROZONE_SAML_IDENTITY_PROVIDERS: ";

impl CurrentSignIn {
    pub fn new(external_url: &str, providers: Providers, saml: Arc<SamlSp>) -> Self {
        let oidc = Arc::new(Oidc::from_configs(&providers.oidc, external_url));
        let start_up = Arc::new(SignIn { providers, oidc, saml: saml.clone() });
        Self { external_url: external_url.to_owned(), start_up, saml_base: saml, built: RwLock::new(None) }
    }

    /// The set in effect for `domain`'s current provider lists.
    pub fn get(&self, domain: &Domain) -> Arc<SignIn> {
        let current = domain.current_providers();
        if !current.stored {
            return self.start_up.clone();
        }
        if let Some((source, set)) = &*self.built.read().unwrap_or_else(PoisonError::into_inner) {
            if Arc::ptr_eq(source, &current) {
                return set.clone();
            }
        }
        let set = Arc::new(self.build(&current.providers));
        *self.built.write().unwrap_or_else(PoisonError::into_inner) = Some((current, set.clone()));
        set
    }

    /// Checks new lists as start-up does beyond the parser (each IdP's metadata, the key
    /// pair `sign_requests` needs): the message, without the variable's name.
    pub fn check(&self, providers: &Providers) -> Result<(), String> {
        match self.saml_base.with_providers(&providers.saml) {
            Ok(_) => Ok(()),
            Err(e) => Err(e.strip_prefix(SAML_VARIABLE).map_or_else(|| e.clone(), str::to_owned)),
        }
    }

    /// A set of `providers`. SAML IdPs that no longer check (the key pair went away since
    /// they were stored) are left out, with an error in the log.
    fn build(&self, providers: &Providers) -> SignIn {
        let mut providers = providers.clone();
        let saml = self.saml_base.with_providers(&providers.saml).unwrap_or_else(|e| {
            tracing::error!(error = %e, "the stored SAML identity providers do not check; none are offered");
            providers.saml.clear();
            self.saml_base.with_providers(&[]).unwrap_or_default()
        });
        let oidc = Arc::new(Oidc::from_configs(&providers.oidc, &self.external_url));
        SignIn { providers, oidc, saml: Arc::new(saml) }
    }
}
