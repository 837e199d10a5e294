//! The singleton's provider lists, `openid_connect_providers` and `saml_identity_providers`
//! (docs/design/configuration.md, "Configuration"): JSON lists of provider objects, checked by the
//! start-up parser ([`Providers::parse`]), replaced whole by a PATCH.

use serde_json::Value;

use super::Fixed;
use crate::input::{ConfigurationChanges, Patch};
use crate::providers::Providers;
use crate::Errors;

/// The key of the OpenID Connect providers.
pub const OIDC_KEY: &str = "openid_connect_providers";
/// The key of the SAML identity providers.
pub const SAML_KEY: &str = "saml_identity_providers";

/// The two lists as the API shows them: arrays of provider objects.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderLists {
    pub oidc: Vec<Value>,
    pub saml: Vec<Value>,
}

/// The lists in effect, what they parse to, and whether any of them is stored (else they
/// are the start-up ones: the environment's, or none).
#[derive(Debug, Clone, Default)]
pub struct CurrentProviders {
    pub lists: ProviderLists,
    pub providers: Providers,
    pub stored: bool,
}

impl ProviderLists {
    /// The lists of the environment's texts (each a list, or an object keyed by id, or
    /// unset); errors name `oidc_name` or `saml_name`.
    pub fn from_texts(
        oidc: Option<&str>,
        oidc_name: &str,
        saml: Option<&str>,
        saml_name: &str,
    ) -> Result<Self, String> {
        Ok(Self {
            oidc: crate::providers::list_form(oidc, oidc_name)?,
            saml: crate::providers::list_form(saml, saml_name)?,
        })
    }

    pub fn get(&self, key: &str) -> &Vec<Value> {
        if key == OIDC_KEY {
            &self.oidc
        } else {
            &self.saml
        }
    }

    pub(crate) fn get_mut(&mut self, key: &str) -> &mut Vec<Value> {
        if key == OIDC_KEY {
            &mut self.oidc
        } else {
            &mut self.saml
        }
    }

    /// The providers, checked as at start-up; errors begin with the key.
    pub fn parse(&self) -> Result<Providers, String> {
        let oidc = Value::Array(self.oidc.clone()).to_string();
        let saml = Value::Array(self.saml.clone()).to_string();
        Providers::parse(Some(&oidc), OIDC_KEY, Some(&saml), SAML_KEY)
    }
}

/// The lists after the change `sent`, with the keys it changes, or nothing when it names
/// neither list; problems go to `errors` under the list's key, without the key's name.
pub fn check(
    sent: &ConfigurationChanges,
    current: &ProviderLists,
    fixed: &Fixed,
    errors: &mut Errors,
) -> Option<(ProviderLists, Providers, Vec<&'static str>)> {
    let mut lists = current.clone();
    let mut changed = Vec::new();
    for (key, list) in [(OIDC_KEY, &sent.openid_connect_providers), (SAML_KEY, &sent.saml_identity_providers)] {
        if list.is_absent() && !sent.wrong_types.has(key) {
            continue;
        }
        if let Some(source) = fixed.source(key) {
            errors.add(key, format!("cannot be changed; it is overridden by {source}"));
        } else if let Patch::Value(items) = list {
            *lists.get_mut(key) = items.clone();
            changed.push(key);
        } else {
            errors.add(key, "must be an array");
        }
    }
    if changed.is_empty() {
        return None;
    }
    match lists.parse() {
        Ok(providers) => Some((lists, providers, changed)),
        Err(message) => {
            let (key, rest) = split_key(&message);
            errors.add(key, rest);
            None
        }
    }
}

/// `"<key>: rest"` → (key, rest); a message naming neither key goes under the SAML one.
fn split_key(message: &str) -> (&'static str, &str) {
    for key in [OIDC_KEY, SAML_KEY] {
        if let Some(rest) = message.strip_prefix(key).and_then(|r| r.strip_prefix(": ")) {
            return (key, rest);
        }
    }
    (SAML_KEY, message)
}

// Its tests read JSON: crates/ferrozone-api/src/wire/configuration/tests.rs.
