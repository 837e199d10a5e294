//! The Firezone configuration singleton (`/v0/configuration`, docs/design/configuration.md,
//! "Configuration"): the keys stored in the settings table, each effective value being the
//! environment's when the operator set it, else the stored one, else the built-in default.

pub mod patch;
pub mod provider_lists;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The prefix of the settings rows that hold the stored keys (`configuration.<key>`).
pub const ROW_PREFIX: &str = "configuration.";

/// The row holding the singleton's id, written once.
pub const ID_ROW: &str = "configuration_meta.id";
/// The row holding the singleton's creation time (microseconds, decimal), written once.
pub const INSERTED_AT_ROW: &str = "configuration_meta.inserted_at";
/// The row holding the time of the latest change (microseconds, decimal).
pub const UPDATED_AT_ROW: &str = "configuration_meta.updated_at";

/// The effective values of the scalar keys, named as in Firezone's API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ConfigurationValues))]
pub struct Values {
    pub local_auth_enabled: bool,
    pub allow_unprivileged_device_management: bool,
    pub allow_unprivileged_device_configuration: bool,
    pub disable_vpn_on_oidc_error: bool,
    /// Seconds; 0 never expires, 2147483647 is Firezone's "Once".
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 2147483647))]
    pub vpn_session_duration: i64,
    /// `null`: client configurations have no `PersistentKeepalive` line.
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 120, required))]
    pub default_client_persistent_keepalive: Option<i32>,
    /// `null`: client configurations have no `MTU` line.
    #[cfg_attr(feature = "openapi", schema(minimum = 576, maximum = 1500, required))]
    pub default_client_mtu: Option<i32>,
    pub default_client_endpoint: String,
    pub default_client_dns: Vec<String>,
    pub default_client_allowed_ips: Vec<String>,
    /// Who must sign in with an authenticator code after the password.
    #[serde(default)]
    pub require_totp: RequireTotp,
    /// What the gateway does with tunnel traffic no egress rule matches.
    #[serde(default)]
    pub egress_default_action: crate::egress::RuleAction,
}

/// Who must use two-factor (TOTP) sign-in with a password: nobody (`off`), administrators,
/// or everyone. A user it covers who has no authenticator sets one up while signing in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum RequireTotp {
    #[default]
    Off,
    Admins,
    Everyone,
}

impl RequireTotp {
    /// Each value with the name a client sends and reads.
    pub const NAMES: [(&'static str, Self); 3] =
        [("off", Self::Off), ("admins", Self::Admins), ("everyone", Self::Everyone)];

    /// The name a client sends and reads.
    pub fn name(self) -> &'static str {
        Self::NAMES.iter().find(|(_, value)| *value == self).map_or("off", |(name, _)| name)
    }

    /// Whether a user with `role` is covered.
    pub fn covers(self, role: crate::model::Role) -> bool {
        match self {
            Self::Off => false,
            Self::Admins => role == crate::model::Role::Admin,
            Self::Everyone => true,
        }
    }
}

/// The keys of [`Values`], the ones a PATCH may change.
pub const KEYS: [&str; 12] = [
    "local_auth_enabled",
    "allow_unprivileged_device_management",
    "allow_unprivileged_device_configuration",
    "disable_vpn_on_oidc_error",
    "vpn_session_duration",
    "default_client_persistent_keepalive",
    "default_client_mtu",
    "default_client_endpoint",
    "default_client_dns",
    "default_client_allowed_ips",
    "require_totp",
    "egress_default_action",
];

/// The keys the operator set at start-up, each with what set it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fixed(BTreeMap<String, Source>);

/// What set a key at start-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// An environment variable (or a config file key, named by its variable).
    Variable(String),
    /// A command-line flag such as `--default-client-mtu`.
    Flag(String),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Variable(name) => write!(f, "{name} environment variable"),
            Self::Flag(flag) => write!(f, "the {flag} command-line flag"),
        }
    }
}

impl Fixed {
    /// Keys set by environment variables: key → the variable the operator set.
    pub fn new(entries: impl IntoIterator<Item = (String, String)>) -> Self {
        Self(entries.into_iter().map(|(key, name)| (key, Source::Variable(name))).collect())
    }

    /// Adds keys set by command-line flags (key → the flag), which win over variables as
    /// their values do.
    #[must_use]
    pub fn with_flags(mut self, entries: impl IntoIterator<Item = (String, String)>) -> Self {
        self.0.extend(entries.into_iter().map(|(key, flag)| (key, Source::Flag(flag))));
        self
    }

    /// What fixes `key`, if anything does.
    pub fn source(&self, key: &str) -> Option<&Source> {
        self.0.get(key)
    }

    /// The variable or flag that fixes `key`, if one does.
    pub fn variable(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(|source| match source {
            Source::Variable(name) | Source::Flag(name) => name.as_str(),
        })
    }
}

impl Values {
    /// What a device gets for each `use_default_*` setting that is on.
    pub fn client_defaults(&self) -> crate::settings::ClientDefaults {
        crate::settings::ClientDefaults {
            allowed_ips: self.default_client_allowed_ips.clone(),
            dns: self.default_client_dns.clone(),
            endpoint: self.default_client_endpoint.clone(),
            mtu: self.default_client_mtu,
            persistent_keepalive: self.default_client_persistent_keepalive,
        }
    }

    /// `base` (the environment's values, or the built-in defaults where it sets nothing)
    /// with the `stored` JSON values laid over it, except for the keys in `fixed`. A stored
    /// value that no longer reads (a type changed by hand) is ignored.
    pub fn effective(base: &Self, stored: &BTreeMap<String, Value>, fixed: &Fixed) -> Self {
        let Ok(Value::Object(mut values)) = serde_json::to_value(base) else {
            return base.clone();
        };
        for (key, value) in stored {
            if fixed.source(key).is_some() || !values.contains_key(key) {
                continue;
            }
            let mut candidate: Map<String, Value> = values.clone();
            candidate.insert(key.clone(), value.clone());
            if serde_json::from_value::<Self>(Value::Object(candidate)).is_ok() {
                values.insert(key.clone(), value.clone());
            }
        }
        serde_json::from_value(Value::Object(values)).unwrap_or_else(|_| base.clone())
    }
}

#[cfg(test)]
mod tests;
