//! The identity providers people may sign in with, configured as Firezone 0.x configured
//! them: a JSON list of OpenID Connect providers and one of SAML identity providers.
//!
//! Each list may also be an object keyed by provider id (the older Firezone form). Every
//! error names the provider and the field, so a bad configuration stops start-up with a
//! message the operator can act on.

use std::collections::HashSet;
use std::fmt;

use serde_json::{Map, Value};
use zeroize::Zeroizing;

use crate::group_sync::GroupClaims;

/// An OpenID Connect provider (authorization-code flow).
#[derive(Clone)]
pub struct OidcProviderConfig {
    pub id: String,
    pub label: String,
    pub client_id: String,
    pub client_secret: Zeroizing<String>,
    pub discovery_document_uri: String,
    /// Space-separated scopes; `openid` is always among them.
    pub scope: String,
    /// Where the provider sends the browser back; `None`: `{external_url}/auth/oidc/{id}/callback/`.
    pub redirect_uri: Option<String>,
    /// Whether a sign-in of an unknown email creates an unprivileged user.
    pub auto_create_users: bool,
    /// Whether this provider may sign admins in (default true).
    pub allow_admins: bool,
    /// Whether the ID token or userinfo must say `email_verified: true` (default false:
    /// only an explicit `false` refuses).
    pub require_verified_email: bool,
    /// Whether `prompt=consent` goes with an `offline_access` scope (default true): strict
    /// providers issue a refresh token only then.
    pub consent_prompt: bool,
    /// Where its groups are read (`groups_claim`, default `groups`) and which are kept.
    pub groups: GroupClaims,
}

/// What a provider may do at sign-in, whatever its protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderPolicy {
    pub auto_create_users: bool,
    pub allow_admins: bool,
}

/// A SAML 2.0 identity provider.
#[derive(Clone, Debug)]
pub struct SamlProviderConfig {
    pub id: String,
    pub label: String,
    /// The identity provider's metadata XML.
    pub metadata: String,
    pub sign_requests: bool,
    pub sign_metadata: bool,
    pub signed_assertion_in_resp: bool,
    pub signed_envelopes_in_resp: bool,
    pub auto_create_users: bool,
    /// Whether this provider may sign admins in (default true).
    pub allow_admins: bool,
    /// The external URL the service provider's endpoints live under, if not the server's.
    pub base_url: Option<String>,
    /// Where its groups are read (`groups_attribute`, default `groups`) and which are kept.
    pub groups: GroupClaims,
}

/// Every configured provider.
#[derive(Clone, Debug, Default)]
pub struct Providers {
    pub oidc: Vec<OidcProviderConfig>,
    pub saml: Vec<SamlProviderConfig>,
}

impl fmt::Debug for OidcProviderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OidcProviderConfig")
            .field("id", &self.id)
            .field("label", &self.label)
            .field("client_id", &self.client_id)
            .field("client_secret", &"<redacted>")
            .field("discovery_document_uri", &self.discovery_document_uri)
            .field("scope", &self.scope)
            .field("redirect_uri", &self.redirect_uri)
            .field("auto_create_users", &self.auto_create_users)
            .field("allow_admins", &self.allow_admins)
            .field("require_verified_email", &self.require_verified_email)
            .field("consent_prompt", &self.consent_prompt)
            .field("groups", &self.groups)
            .finish()
    }
}

/// The claim (OpenID Connect) or attribute (SAML) a provider's groups are read from unless
/// configured otherwise: what Okta, Keycloak and Entra ID's own examples use.
pub const DEFAULT_GROUPS_CLAIM: &str = "groups";

/// The `last_signed_in_method` of password sign-ins, which no provider may take as its id.
const RESERVED_IDS: &[&str] = &["password", "email", "identity"];

impl Providers {
    /// Parses both lists (`None` or blank: no providers of that kind). `oidc_name` and
    /// `saml_name` are the variable names the errors cite.
    pub fn parse(oidc: Option<&str>, oidc_name: &str, saml: Option<&str>, saml_name: &str) -> Result<Self, String> {
        let oidc = entries(oidc, oidc_name)?
            .into_iter()
            .map(|(n, e)| oidc_provider(&e).map_err(|m| format!("{oidc_name}: {}: {m}", n)))
            .collect::<Result<Vec<_>, _>>()?;
        let saml = entries(saml, saml_name)?
            .into_iter()
            .map(|(n, e)| saml_provider(&e).map_err(|m| format!("{saml_name}: {}: {m}", n)))
            .collect::<Result<Vec<_>, _>>()?;
        let mut seen = HashSet::new();
        let ids = oidc.iter().map(|p| (&p.id, oidc_name)).chain(saml.iter().map(|p| (&p.id, saml_name)));
        for (id, name) in ids {
            if !seen.insert(id.as_str()) {
                return Err(format!("{name}: provider `{id}`: `id` is used by another provider"));
            }
        }
        Ok(Self { oidc, saml })
    }

    pub fn oidc(&self, id: &str) -> Option<&OidcProviderConfig> {
        self.oidc.iter().find(|p| p.id == id)
    }

    pub fn saml(&self, id: &str) -> Option<&SamlProviderConfig> {
        self.saml.iter().find(|p| p.id == id)
    }

    /// The sign-in policy of the provider `id` (either kind); `None` when there is none.
    pub fn policy(&self, id: &str) -> Option<ProviderPolicy> {
        let oidc = self.oidc(id).map(|p| (p.auto_create_users, p.allow_admins));
        let (auto_create_users, allow_admins) =
            oidc.or_else(|| self.saml(id).map(|p| (p.auto_create_users, p.allow_admins)))?;
        Some(ProviderPolicy { auto_create_users, allow_admins })
    }

    pub fn is_empty(&self) -> bool {
        self.oidc.is_empty() && self.saml.is_empty()
    }
}

/// The providers of `text` (a JSON list, or an object keyed by id) as a list of objects,
/// each with its `id` (what `/v0/configuration` shows); `None` or blank: none.
pub fn list_form(text: Option<&str>, name: &str) -> Result<Vec<Value>, String> {
    Ok(entries(text, name)?.into_iter().map(|(_, fields)| Value::Object(fields)).collect())
}

/// A provider's fields, with how errors name it: "provider `google`", or its position.
type Entry = (String, Map<String, Value>);

/// The list's entries as objects, each with how errors name it. An object keyed by id
/// becomes a list whose entries carry that `id`.
fn entries(text: Option<&str>, name: &str) -> Result<Vec<Entry>, String> {
    let Some(text) = text.map(str::trim).filter(|t| !t.is_empty()) else {
        return Ok(Vec::new());
    };
    let value: Value = serde_json::from_str(text).map_err(|e| format!("{name}: not valid JSON: {e}"))?;
    let items: Vec<(usize, Value)> = match value {
        Value::Array(items) => items.into_iter().enumerate().collect(),
        Value::Object(by_id) => by_id
            .into_iter()
            .enumerate()
            .map(|(i, (id, mut entry))| {
                if let Value::Object(fields) = &mut entry {
                    fields.entry("id").or_insert(Value::String(id));
                }
                (i, entry)
            })
            .collect(),
        _ => return Err(format!("{name}: expected a JSON list of providers")),
    };
    items
        .into_iter()
        .map(|(i, item)| match item {
            Value::Object(fields) => {
                let who = match fields.get("id").and_then(Value::as_str) {
                    Some(id) => format!("provider `{id}`"),
                    None => format!("provider {}", i + 1),
                };
                Ok((who, fields))
            }
            _ => Err(format!("{name}: provider {}: expected a JSON object", i + 1)),
        })
        .collect()
}

fn oidc_provider(entry: &Map<String, Value>) -> Result<OidcProviderConfig, String> {
    let fields = Fields::new(
        entry,
        &[
            "id",
            "label",
            "client_id",
            "client_secret",
            "discovery_document_uri",
            "scope",
            "redirect_uri",
            "response_type",
            "auto_create_users",
            "allow_admins",
            "require_verified_email",
            "consent_prompt",
            "groups_claim",
            "groups_prefix",
            "groups_allowed",
        ],
    )?;
    let id = fields.id()?;
    let response_type = fields.optional_string("response_type")?.unwrap_or_else(|| "code".to_owned());
    if response_type != "code" {
        return Err(format!("`response_type` is `{response_type}`; only `code` is supported"));
    }
    let scope = fields.optional_string("scope")?.unwrap_or_else(|| "openid email profile".to_owned());
    if !scope.split_whitespace().any(|s| s == "openid") {
        return Err("`scope` must include `openid`".to_owned());
    }
    let redirect_uri = fields.optional_string("redirect_uri")?;
    if let Some(uri) = &redirect_uri {
        http_url(uri).map_err(|e| format!("`redirect_uri` {e}"))?;
    }
    let discovery_document_uri = fields.string("discovery_document_uri")?;
    http_url(&discovery_document_uri).map_err(|e| format!("`discovery_document_uri` {e}"))?;
    Ok(OidcProviderConfig {
        label: fields.optional_string("label")?.unwrap_or_else(|| id.clone()),
        client_id: fields.string("client_id")?,
        client_secret: Zeroizing::new(fields.string("client_secret")?),
        discovery_document_uri,
        scope,
        redirect_uri,
        auto_create_users: fields.bool("auto_create_users")?,
        allow_admins: fields.optional_bool("allow_admins")?.unwrap_or(true),
        require_verified_email: fields.optional_bool("require_verified_email")?.unwrap_or(false),
        consent_prompt: fields.optional_bool("consent_prompt")?.unwrap_or(true),
        groups: fields.groups("groups_claim")?,
        id,
    })
}

fn saml_provider(entry: &Map<String, Value>) -> Result<SamlProviderConfig, String> {
    let fields = Fields::new(
        entry,
        &[
            "id",
            "label",
            "metadata",
            "sign_requests",
            "sign_metadata",
            "signed_assertion_in_resp",
            "signed_envelopes_in_resp",
            "auto_create_users",
            "allow_admins",
            "base_url",
            "groups_attribute",
            "groups_prefix",
            "groups_allowed",
        ],
    )?;
    let id = fields.id()?;
    let base_url = fields.optional_string("base_url")?;
    if let Some(url) = &base_url {
        http_url(url).map_err(|e| format!("`base_url` {e}"))?;
    }
    Ok(SamlProviderConfig {
        label: fields.optional_string("label")?.unwrap_or_else(|| id.clone()),
        metadata: fields.string("metadata")?,
        sign_requests: fields.optional_bool("sign_requests")?.unwrap_or(true),
        sign_metadata: fields.optional_bool("sign_metadata")?.unwrap_or(true),
        signed_assertion_in_resp: fields.optional_bool("signed_assertion_in_resp")?.unwrap_or(true),
        signed_envelopes_in_resp: fields.optional_bool("signed_envelopes_in_resp")?.unwrap_or(true),
        auto_create_users: fields.bool("auto_create_users")?,
        allow_admins: fields.optional_bool("allow_admins")?.unwrap_or(true),
        base_url,
        groups: fields.groups("groups_attribute")?,
        id,
    })
}

/// One entry's fields, read with errors that name the field.
struct Fields<'a>(&'a Map<String, Value>);

impl<'a> Fields<'a> {
    fn new(entry: &'a Map<String, Value>, known: &[&str]) -> Result<Self, String> {
        if let Some(unknown) = entry.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(format!("`{unknown}` is not a known field (known: {})", known.join(", ")));
        }
        Ok(Self(entry))
    }

    fn id(&self) -> Result<String, String> {
        let id = self.string("id")?;
        let valid = id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !valid {
            return Err(format!("`id` `{id}` must be 1 to 64 letters, digits, `-` or `_` (it is part of URLs)"));
        }
        if RESERVED_IDS.contains(&id.to_ascii_lowercase().as_str()) {
            return Err(format!("`id` `{id}` is reserved for password sign-in"));
        }
        Ok(id)
    }

    fn string(&self, key: &str) -> Result<String, String> {
        self.optional_string(key)?.ok_or_else(|| format!("`{key}` is missing"))
    }

    fn optional_string(&self, key: &str) -> Result<Option<String>, String> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.trim().to_owned())),
            Some(_) => Err(format!("`{key}` must be a string")),
        }
    }

    /// The group fields: `claim_key` names the claim or attribute (default `groups`; `false`
    /// reads none), `groups_prefix` and `groups_allowed` (a list of names) filter.
    fn groups(&self, claim_key: &str) -> Result<GroupClaims, String> {
        let claim = match self.0.get(claim_key) {
            Some(Value::Bool(false)) => None,
            _ => Some(self.optional_string(claim_key)?.unwrap_or_else(|| DEFAULT_GROUPS_CLAIM.to_owned())),
        };
        let allowed = match self.0.get("groups_allowed") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(names)) => names
                .iter()
                .map(|name| name.as_str().map(str::to_owned).ok_or("`groups_allowed` must be a list of names"))
                .collect::<Result<_, _>>()?,
            Some(_) => return Err("`groups_allowed` must be a list of names".to_owned()),
        };
        Ok(GroupClaims { claim, prefix: self.optional_string("groups_prefix")?, allowed })
    }

    fn bool(&self, key: &str) -> Result<bool, String> {
        self.optional_bool(key)?.ok_or_else(|| format!("`{key}` is missing (true or false)"))
    }

    fn optional_bool(&self, key: &str) -> Result<Option<bool>, String> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            // Firezone's environment form carried booleans as strings too.
            Some(Value::String(s)) if s == "true" => Ok(Some(true)),
            Some(Value::String(s)) if s == "false" => Ok(Some(false)),
            Some(_) => Err(format!("`{key}` must be true or false")),
        }
    }
}

/// Checks that `text` is an absolute `http` or `https` URL with a host.
fn http_url(text: &str) -> Result<(), String> {
    let (scheme, rest) = text.split_once("://").ok_or_else(|| format!("`{text}` is not an absolute URL"))?;
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if !matches!(scheme, "http" | "https") || host.is_empty() || text.chars().any(|c| c.is_whitespace()) {
        return Err(format!("`{text}` is not an http(s) URL"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const OIDC: &str = "FERROZONE_OPENID_CONNECT_PROVIDERS";
    const SAML: &str = "FERROZONE_SAML_IDENTITY_PROVIDERS";

    fn oidc(json: &str) -> Result<Providers, String> {
        Providers::parse(Some(json), OIDC, None, SAML)
    }

    fn saml(json: &str) -> Result<Providers, String> {
        Providers::parse(None, OIDC, Some(json), SAML)
    }

    const GOOGLE: &str = r#"{"id":"google","label":"Google","client_id":"cid","client_secret":"s3cret",
        "discovery_document_uri":"https://accounts.example/.well-known/openid-configuration",
        "auto_create_users":false}"#;

    #[test]
    fn reads_an_oidc_list_with_defaults() {
        let providers = oidc(&format!("[{GOOGLE}]")).unwrap();
        let google = providers.oidc("google").unwrap();
        assert_eq!(google.label, "Google");
        assert_eq!(google.scope, "openid email profile");
        assert_eq!(google.client_secret.as_str(), "s3cret");
        assert!(!google.auto_create_users);
        assert_eq!(google.redirect_uri, None);
        assert!(google.allow_admins && !google.require_verified_email && google.consent_prompt);
        assert!(!format!("{google:?}").contains("s3cret"));
    }

    #[test]
    fn reads_the_sign_in_options() {
        let json = r#"{"okta":{"client_id":"c","client_secret":"s","discovery_document_uri":"http://idp:8080/x",
            "auto_create_users":true,"allow_admins":false,"require_verified_email":true,"consent_prompt":"false"}}"#;
        let okta = oidc(json).unwrap().oidc("okta").unwrap().clone();
        assert!(!okta.allow_admins && okta.require_verified_email && !okta.consent_prompt);
    }

    #[test]
    fn reads_the_object_form_keyed_by_id() {
        let json = r#"{"okta":{"client_id":"c","client_secret":"s","discovery_document_uri":"http://idp:8080/x","auto_create_users":"true"}}"#;
        let providers = oidc(json).unwrap();
        let okta = providers.oidc("okta").unwrap();
        assert_eq!(okta.label, "okta");
        assert!(okta.auto_create_users);
    }

    #[test]
    fn errors_name_the_variable_the_provider_and_the_field() {
        let cases = [
            (r#"[{"id":"google","client_id":"c","client_secret":"s","discovery_document_uri":"https://a/b"}]"#,
             "FERROZONE_OPENID_CONNECT_PROVIDERS: provider `google`: `auto_create_users` is missing (true or false)"),
            (r#"[{"id":"g","client_secret":"s","discovery_document_uri":"https://a/b","auto_create_users":true}]"#,
             "FERROZONE_OPENID_CONNECT_PROVIDERS: provider `g`: `client_id` is missing"),
            (r#"[{"label":"x"}]"#, "FERROZONE_OPENID_CONNECT_PROVIDERS: provider 1: `id` is missing"),
            (r#"[{"id":"g","client_id":"c","client_secret":"s","discovery_document_uri":"ftp://a","auto_create_users":true}]"#,
             "FERROZONE_OPENID_CONNECT_PROVIDERS: provider `g`: `discovery_document_uri` `ftp://a` is not an http(s) URL"),
            (r#"[{"id":"g","client_id":"c","client_secret":"s","discovery_document_uri":"https://a","auto_create_users":1}]"#,
             "FERROZONE_OPENID_CONNECT_PROVIDERS: provider `g`: `auto_create_users` must be true or false"),
            (r#"[{"id":"g","client_id":"c","client_secret":"s","discovery_document_uri":"https://a","auto_create_users":true,"scope":"email"}]"#,
             "FERROZONE_OPENID_CONNECT_PROVIDERS: provider `g`: `scope` must include `openid`"),
            (r#"[{"id":"g","client_id":"c","client_secret":"s","discovery_document_uri":"https://a","auto_create_users":true,"auto_create_user":true}]"#,
             "FERROZONE_OPENID_CONNECT_PROVIDERS: provider `g`: `auto_create_user` is not a known field"),
            (r#"[{"id":"g/x","client_id":"c"}]"#, "FERROZONE_OPENID_CONNECT_PROVIDERS: provider `g/x`: `id` `g/x` must be"),
            (r#"[{"id":"password"}]"#, "`id` `password` is reserved"),
            ("[1]", "FERROZONE_OPENID_CONNECT_PROVIDERS: provider 1: expected a JSON object"),
            ("{oops", "FERROZONE_OPENID_CONNECT_PROVIDERS: not valid JSON"),
            ("3", "FERROZONE_OPENID_CONNECT_PROVIDERS: expected a JSON list of providers"),
        ];
        for (json, expected) in cases {
            let error = oidc(json).unwrap_err();
            assert!(error.contains(expected), "{json}\n  gave: {error}\n  want: {expected}");
        }
    }

    #[test]
    fn reads_saml_providers_with_firezone_defaults() {
        let providers =
            saml(r#"[{"id":"okta","label":"Okta","metadata":"<md/>","auto_create_users":true,"sign_requests":false}]"#)
                .unwrap();
        let okta = providers.saml("okta").unwrap();
        assert!(!okta.sign_requests);
        assert!(okta.sign_metadata && okta.signed_assertion_in_resp && okta.signed_envelopes_in_resp);
        assert!(okta.auto_create_users && okta.allow_admins);
        let strict =
            saml(r#"[{"id":"okta","metadata":"<md/>","auto_create_users":true,"allow_admins":false}]"#).unwrap();
        let policy = ProviderPolicy { auto_create_users: true, allow_admins: false };
        assert_eq!(strict.policy("okta"), Some(policy));
        let error = saml(r#"[{"id":"okta","auto_create_users":true}]"#).unwrap_err();
        assert_eq!(error, "FERROZONE_SAML_IDENTITY_PROVIDERS: provider `okta`: `metadata` is missing");
    }

    #[test]
    fn ids_are_unique_across_both_kinds() {
        let error = Providers::parse(
            Some(&format!("[{GOOGLE}]")),
            OIDC,
            Some(r#"[{"id":"google","metadata":"<m/>","auto_create_users":false}]"#),
            SAML,
        )
        .unwrap_err();
        assert_eq!(error, "FERROZONE_SAML_IDENTITY_PROVIDERS: provider `google`: `id` is used by another provider");
    }

    #[test]
    fn blank_means_none() {
        assert!(Providers::parse(Some("  "), OIDC, None, SAML).unwrap().is_empty());
        assert!(oidc("[]").unwrap().is_empty());
    }

    #[test]
    fn groups_are_read_from_a_claim_filtered_or_not_at_all() {
        let parse = |extra: &str| {
            let text = format!(
                r#"[{{"id":"corp","client_id":"c","client_secret":"s","discovery_document_uri":"https://idp.example/x","auto_create_users":true{extra}}}]"#
            );
            Providers::parse(Some(&text), OIDC, None, SAML).map(|p| p.oidc[0].groups.clone())
        };
        assert_eq!(parse("").unwrap(), GroupClaims::reading("groups"), "the default claim");
        let custom = parse(r#","groups_claim":"roles","groups_prefix":"vpn-","groups_allowed":["vpn-eng"]"#).unwrap();
        assert_eq!(
            custom,
            GroupClaims { claim: Some("roles".into()), prefix: Some("vpn-".into()), allowed: vec!["vpn-eng".into()] }
        );
        assert_eq!(parse(r#","groups_claim":false"#).unwrap().claim, None, "false reads no groups");
        let bad = parse(r#","groups_allowed":"vpn-eng""#).unwrap_err();
        assert!(bad.contains("`groups_allowed` must be a list of names"), "{bad}");
        let saml = r#"[{"id":"adfs","metadata":"<x/>","auto_create_users":false,"groups_attribute":"memberOf"}]"#;
        let parsed = Providers::parse(None, OIDC, Some(saml), SAML).unwrap();
        assert_eq!(parsed.saml[0].groups.claim.as_deref(), Some("memberOf"));
    }
}
