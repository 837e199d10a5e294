//! The configuration singleton: its scalar keys become Ferrozone's `configuration.<key>`
//! settings rows (checked as a PATCH of `/v0/configuration` would be), its provider lists
//! the sealed list rows, and its id and times the singleton's own rows.

use ferrozone_domain::configuration::provider_lists::{ProviderLists, OIDC_KEY, SAML_KEY};
use ferrozone_domain::configuration::{patch, Fixed, ID_ROW, INSERTED_AT_ROW, ROW_PREFIX, UPDATED_AT_ROW};
use ferrozone_domain::input::{ConfigurationChanges, Patch};
use ferrozone_domain::Errors;
use serde_json::Value;

use super::Converter;
use crate::firezone::read::FzConfiguration;

impl Converter<'_> {
    pub(super) fn configuration(&mut self, rows: &[FzConfiguration]) {
        let Some(c) = rows.first() else {
            self.report.warn("configuration", "-", "the source has no configuration row; Ferrozone's stays");
            return;
        };
        if rows.len() > 1 {
            self.report.warn(
                "configuration",
                c.id,
                format!("the source has {} configuration rows; the oldest is imported", rows.len()),
            );
        }
        let settings = &mut self.batch.settings;
        settings.push((ID_ROW.to_owned(), c.id.to_string().into_bytes()));
        settings.push((INSERTED_AT_ROW.to_owned(), c.inserted_at.to_string().into_bytes()));
        settings.push((UPDATED_AT_ROW.to_owned(), c.updated_at.to_string().into_bytes()));
        let mut errors = Errors::new();
        for (key, value) in patch::collect(&scalars(c), &Fixed::default(), &mut errors) {
            self.batch.settings.push((format!("{ROW_PREFIX}{key}"), value.to_string().into_bytes()));
        }
        for (key, messages) in errors.iter() {
            for message in messages {
                self.report.warn("configuration", key, format!("{message}; Ferrozone's value stays"));
            }
        }
        self.provider_lists(c);
    }

    fn provider_lists(&mut self, c: &FzConfiguration) {
        let lists = match (list(&c.openid_connect_providers), list(&c.saml_identity_providers)) {
            (Some(oidc), Some(saml)) => ProviderLists { oidc, saml },
            _ => {
                self.report.warn("configuration", "providers", "the provider lists are not JSON arrays; not imported");
                return;
            }
        };
        if let Err(message) = lists.parse() {
            self.report.warn("configuration", "providers", format!("{message}; the provider lists are not imported"));
            return;
        }
        for key in [OIDC_KEY, SAML_KEY] {
            let list = lists.get(key);
            // An empty list is "none configured": Ferrozone's own start-up lists stay.
            if !list.is_empty() {
                let sealed = self.keys.cipher.seal(Value::Array(list.clone()).to_string().as_bytes());
                self.batch.settings.push((format!("{ROW_PREFIX}{key}"), sealed.0));
            }
        }
    }
}

/// The scalar keys the source sets; a NULL column means "the default", so it is left out.
fn scalars(c: &FzConfiguration) -> ConfigurationChanges {
    ConfigurationChanges {
        local_auth_enabled: set(c.local_auth_enabled),
        allow_unprivileged_device_management: set(c.allow_unprivileged_device_management),
        allow_unprivileged_device_configuration: set(c.allow_unprivileged_device_configuration),
        disable_vpn_on_oidc_error: set(c.disable_vpn_on_oidc_error),
        vpn_session_duration: Patch::Value(i64::from(c.vpn_session_duration)),
        default_client_persistent_keepalive: set(c.default_client_persistent_keepalive.map(i64::from)),
        default_client_mtu: set(c.default_client_mtu.map(i64::from)),
        default_client_endpoint: set(c.default_client_endpoint.clone().filter(|e| !e.is_empty())),
        default_client_dns: Patch::Value(c.default_client_dns.clone()),
        default_client_allowed_ips: Patch::Value(c.default_client_allowed_ips.clone()),
        ..ConfigurationChanges::default()
    }
}

/// A column's value, absent when NULL.
fn set<T>(value: Option<T>) -> Patch<T> {
    value.map_or(Patch::Absent, Patch::Value)
}

/// A provider list's JSON text as a list (Firezone's column default is `{}`: none).
fn list(text: &str) -> Option<Vec<Value>> {
    match serde_json::from_str(text).ok()? {
        Value::Array(items) => Some(items),
        Value::Object(map) if map.is_empty() => Some(Vec::new()),
        _ => None,
    }
}
