//! The singleton's provider lists, `openid_connect_providers` and `saml_identity_providers`
//! (docs/design/configuration.md, "Configuration"): JSON lists of provider objects, checked by the
//! start-up parser ([`Providers::parse`]), replaced whole by a PATCH.

use serde_json::{Map, Value};

use super::Fixed;
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

/// The lists after the PATCH `sent`, with the keys it changes, or nothing when it names
/// neither list; problems go to `errors` under the list's key, without the key's name.
pub fn check(
    sent: &Map<String, Value>,
    current: &ProviderLists,
    fixed: &Fixed,
    errors: &mut Errors,
) -> Option<(ProviderLists, Providers, Vec<&'static str>)> {
    let mut lists = current.clone();
    let mut changed = Vec::new();
    for key in [OIDC_KEY, SAML_KEY] {
        let Some(value) = sent.get(key) else { continue };
        if let Some(source) = fixed.source(key) {
            errors.add(key, format!("cannot be changed; it is overridden by {source}"));
        } else if let Value::Array(items) = value {
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn oidc(id: &str) -> Value {
        json!({"id": id, "client_id": "c", "client_secret": "s", "auto_create_users": false,
            "discovery_document_uri": "https://idp.example/.well-known/openid-configuration"})
    }

    fn run(sent: Value, current: &ProviderLists, fixed: &Fixed) -> (Option<ProviderLists>, Errors) {
        let mut errors = Errors::new();
        let out = check(sent.as_object().unwrap(), current, fixed, &mut errors);
        (out.map(|(lists, _, _)| lists), errors)
    }

    #[test]
    fn a_list_replaces_the_whole_list_and_the_other_stays() {
        let current = ProviderLists { oidc: vec![oidc("a")], saml: vec![] };
        let (lists, errors) = run(json!({OIDC_KEY: [oidc("b")]}), &current, &Fixed::default());
        assert!(errors.is_empty());
        assert_eq!(lists.unwrap().oidc, [oidc("b")]);
        assert_eq!(run(json!({"other": 1}), &current, &Fixed::default()).0, None);
    }

    #[test]
    fn the_start_up_parser_s_messages_under_the_key() {
        let mut bad = oidc("a");
        bad["scope"] = json!("email");
        let (_, errors) = run(json!({OIDC_KEY: [bad]}), &ProviderLists::default(), &Fixed::default());
        assert_eq!(errors.get(OIDC_KEY).unwrap(), ["provider `a`: `scope` must include `openid`"]);
        let (_, errors) = run(json!({SAML_KEY: {}}), &ProviderLists::default(), &Fixed::default());
        assert_eq!(errors.get(SAML_KEY).unwrap(), ["must be an array"]);
    }

    #[test]
    fn the_environment_fixes_a_list() {
        let fixed = Fixed::new([(OIDC_KEY.to_owned(), "OPENID_CONNECT_PROVIDERS".to_owned())]);
        let (_, errors) = run(json!({OIDC_KEY: []}), &ProviderLists::default(), &fixed);
        assert_eq!(
            errors.get(OIDC_KEY).unwrap(),
            ["cannot be changed; it is overridden by OPENID_CONNECT_PROVIDERS environment variable"]
        );
    }
}
