//! Turning the source's rows into Ferrozone's model: secrets opened with the source's key
//! and sealed with this installation's, Firezone's forms turned into Ferrozone's, and every
//! row that cannot be kept as it was skipped or flagged in the report, never a crash.

mod configuration;
mod totp;

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ferrozone_domain::crypto::{excessive_cost, is_valid_key, Cipher};
use ferrozone_domain::egress::{PortType, Ports, Rule, RuleAction};
use ferrozone_domain::import::{ImportBatch, ImportedToken, LEGACY_TOKEN_SECRET_SETTING};
use ferrozone_domain::input::{NewDevice, Patch, TunnelSettings};
use ferrozone_domain::ipam::Pools;
use ferrozone_domain::model::{email_key, CustomConfig, Device, OidcConnection, PeerStats, UseDefaults, User};
use ferrozone_domain::service::SERVER_KEY_SETTING;
use ferrozone_domain::validate::device::check_create;
use ferrozone_domain::{DomainError, Role, Settings, Timestamp};
use uuid::Uuid;
use zeroize::Zeroizing;

use super::cloak::{CloakKey, OpenError};
use super::networks::TunnelNetworks;
use super::read::{FzApiToken, FzDevice, FzOidcConnection, FzRule, FzUser, Source};
use super::report::Report;
use super::secrets::ServerKey;

/// What WireGuard uses when a peer has no preshared key: 32 zero bytes. A device Firezone
/// kept without one gets it, so that its client, which has none, keeps working.
pub const ZERO_PSK: &str = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";

/// The keys an import opens and seals with.
pub struct Keys<'a> {
    /// The source's `DATABASE_ENCRYPTION_KEY`.
    pub cloak: &'a CloakKey,
    /// This installation's secret key.
    pub cipher: &'a Cipher,
    /// The source's `GUARDIAN_SECRET_KEY`: without it, its API tokens cannot be kept.
    pub guardian_secret_key: Option<&'a str>,
    /// The source server's WireGuard key: without it, every client must be set up again.
    pub server_key: Option<&'a ServerKey>,
}

/// The batch to import and the report of what it holds, or an error when the source
/// cannot be imported at all (the encryption key is wrong).
pub fn convert(
    source: &Source,
    keys: &Keys<'_>,
    networks: &TunnelNetworks,
    target: &Pools,
    now: Timestamp,
) -> anyhow::Result<(ImportBatch, Report)> {
    let mut c = Converter {
        keys,
        networks,
        now,
        batch: ImportBatch::default(),
        report: Report::default(),
        users: HashSet::new(),
        opened: 0,
        mismatched: 0,
        api_settings: Settings::standard(),
    };
    c.users(&source.users);
    c.batch.devices = source.devices.iter().filter_map(|d| c.device(d)).collect();
    c.tokens(&source.api_tokens);
    c.batch.rules = source.rules.iter().filter_map(|r| c.rule(r)).collect();
    c.batch.oidc_connections = source.oidc_connections.iter().filter_map(|o| c.oidc_connection(o)).collect();
    c.totp(&source.mfa_methods);
    if c.opened == 0 && c.mismatched > 0 {
        anyhow::bail!(
            "wrong DATABASE_ENCRYPTION_KEY: none of the source's {} encrypted values decrypts with it",
            c.mismatched
        );
    }
    c.configuration(&source.configurations);
    c.secrets();
    for warning in &networks.warnings {
        c.report.warn("network", "-", warning.clone());
    }
    c.report.settings_to_set = networks.settings_for(target);
    let read = [
        source.users.len(),
        source.devices.len(),
        source.api_tokens.len(),
        source.rules.len(),
        source.oidc_connections.len(),
        source.mfa_methods.len(),
    ];
    c.report.set_counts(read, &c.batch);
    Ok((c.batch, c.report))
}

struct Converter<'a> {
    keys: &'a Keys<'a>,
    networks: &'a TunnelNetworks,
    now: Timestamp,
    batch: ImportBatch,
    report: Report,
    /// The users the batch holds: rows of other users are skipped with them.
    users: HashSet<Uuid>,
    /// Encrypted values that opened, and that failed their tag: all failing means a wrong key.
    opened: usize,
    mismatched: usize,
    /// What the API's device checks read (no address is checked, so only its defaults).
    api_settings: Settings,
}

fn at(micros: i64) -> Timestamp {
    Timestamp::from_micros(micros)
}

impl Converter<'_> {
    /// Opens a Cloak value, counting the outcome for the wrong-key check.
    fn open(&mut self, value: &[u8]) -> Result<Zeroizing<Vec<u8>>, OpenError> {
        let opened = self.keys.cloak.open(value);
        match &opened {
            Ok(_) => self.opened += 1,
            Err(OpenError::TagMismatch) => self.mismatched += 1,
            Err(OpenError::NotCloak) => {}
        }
        opened
    }

    fn has_user(&mut self, kind: &'static str, id: impl ToString, user_id: Uuid) -> bool {
        let kept = self.users.contains(&user_id);
        if !kept {
            self.report.skip(kind, id, format!("its user {user_id} is not imported"));
        }
        kept
    }

    fn users(&mut self, rows: &[FzUser]) {
        let mut emails: HashMap<String, Uuid> = HashMap::new();
        for u in rows {
            let Some(email) = u.email.as_deref().map(str::trim).filter(|e| !e.is_empty()) else {
                self.report.skip("user", u.id, "has no email");
                continue;
            };
            let Some(role) = Role::parse(&u.role) else {
                self.report.skip("user", email, format!("has an unknown role {:?}", u.role));
                continue;
            };
            match emails.entry(email_key(email)) {
                Entry::Occupied(first) => {
                    let reason = format!(
                        "its email differs only in case from user {}'s (Ferrozone's emails are unique regardless of case)",
                        first.get()
                    );
                    self.report.skip("user", email, reason);
                    continue;
                }
                Entry::Vacant(slot) => slot.insert(u.id),
            };
            let mut password_hash = u.password_hash.clone();
            if password_hash.as_deref().is_some_and(|h| !h.starts_with("$argon2")) {
                self.report.warn("user", email, "its password hash is not Argon2: the user must set a new password");
            } else if let Some(why) = password_hash.as_deref().and_then(excessive_cost) {
                let reason = format!("{why}: imported without a password; the user must set a new one");
                self.report.warn("user", email, reason);
                password_hash = None;
            }
            self.users.insert(u.id);
            self.batch.users.push(User {
                id: u.id,
                email: email.to_owned(),
                role,
                password_hash,
                disabled_at: u.disabled_at.map(at),
                // Firezone did not record who disabled a user.
                disabled_by: None,
                last_signed_in_at: u.last_signed_in_at.map(at),
                last_signed_in_method: u.last_signed_in_method.clone(),
                inserted_at: at(u.inserted_at),
                updated_at: at(u.updated_at),
            });
        }
    }

    fn device(&mut self, d: &FzDevice) -> Option<Device> {
        if !self.has_user("device", d.id, d.user_id) {
            return None;
        }
        if !is_valid_key(&d.public_key) {
            self.report.skip("device", d.id, "its public key is not a WireGuard key");
            return None;
        }
        let psk = self.preshared_key(d)?;
        let ipv4 = self.address::<Ipv4Addr>(d, d.ipv4.as_deref())?;
        let ipv6 = self.address::<Ipv6Addr>(d, d.ipv6.as_deref())?;
        if ipv4.is_none() && ipv6.is_none() {
            self.report.warn("device", d.id, "has no tunnel address");
        }
        let (use_default, custom) = self.api_checked(d)?;
        Some(Device {
            id: d.id,
            user_id: d.user_id,
            name: d.name.clone(),
            description: d.description.clone(),
            public_key: d.public_key.clone(),
            preshared_key: self.keys.cipher.seal(psk.as_bytes()),
            ipv4,
            ipv6,
            use_default,
            custom,
            stats: PeerStats {
                latest_handshake: d.latest_handshake.map(at),
                remote_ip: d.remote_ip.clone(),
                rx_bytes: d.rx_bytes,
                tx_bytes: d.tx_bytes,
            },
            paused_at: None,
            inserted_at: at(d.inserted_at),
            updated_at: at(d.updated_at),
        })
    }

    /// The device's name, description, public key and tunnel settings checked as a create
    /// request of the API is (docs/api.md section 5): the tunnel settings as the API would
    /// store them, or the device skipped with the API's messages. Its addresses are checked
    /// against the source's networks instead ([`Self::address`]).
    fn api_checked(&mut self, d: &FzDevice) -> Option<(UseDefaults, CustomConfig)> {
        let own = |follows_default: bool| !follows_default;
        // Ferrozone keeps a device's own values only where it does not follow the default.
        let tunnel = TunnelSettings {
            use_default_allowed_ips: Some(d.use_default_allowed_ips),
            use_default_dns: Some(d.use_default_dns),
            use_default_endpoint: Some(d.use_default_endpoint),
            use_default_mtu: Some(d.use_default_mtu),
            use_default_persistent_keepalive: Some(d.use_default_persistent_keepalive),
            allowed_ips: Patch::Value(if own(d.use_default_allowed_ips) { d.allowed_ips.clone() } else { vec![] }),
            dns: Patch::Value(if own(d.use_default_dns) { d.dns.clone() } else { vec![] }),
            endpoint: Patch::from(d.endpoint.clone().filter(|_| own(d.use_default_endpoint))),
            mtu: Patch::from(d.mtu.filter(|_| own(d.use_default_mtu)).map(i64::from)),
            persistent_keepalive: Patch::from(
                d.persistent_keepalive.filter(|_| own(d.use_default_persistent_keepalive)).map(i64::from),
            ),
        };
        let input = NewDevice {
            user_id: Some(d.user_id.to_string()),
            name: Some(d.name.clone()),
            description: d.description.clone(),
            public_key: Some(d.public_key.clone()),
            tunnel,
            ..NewDevice::default()
        };
        let server_key = self.keys.server_key.map_or("", |k| k.public_key.as_str());
        match check_create(&input, &self.api_settings, server_key, None) {
            Ok(checked) => Some(checked.tunnel()),
            Err(DomainError::Invalid(errors)) => {
                let messages: Vec<String> = errors
                    .iter()
                    .flat_map(|(attribute, messages)| messages.iter().map(move |m| format!("its {attribute} {m}")))
                    .collect();
                self.report.skip("device", d.id, format!("{} (as the API would refuse it)", messages.join("; ")));
                None
            }
            Err(other) => {
                self.report.skip("device", d.id, other.to_string());
                None
            }
        }
    }

    /// The device's PSK text: the decrypted one, or [`ZERO_PSK`] for a device without one.
    fn preshared_key(&mut self, d: &FzDevice) -> Option<Zeroizing<String>> {
        let Some(value) = &d.preshared_key else {
            self.report.warn(
                "device",
                d.id,
                "had no preshared key: imported with the all-zero key (what WireGuard uses without one) so that \
                 its client keeps working; give it a new key when convenient",
            );
            return Some(Zeroizing::new(ZERO_PSK.to_owned()));
        };
        let text = match self.open(value) {
            Ok(bytes) => String::from_utf8(bytes.to_vec()).ok().map(Zeroizing::new),
            Err(e) => {
                self.report.skip("device", d.id, format!("its preshared key {e}; its client must be set up again"));
                return None;
            }
        };
        match text {
            Some(text) if is_valid_key(&text) => Some(text),
            _ => {
                self.report.skip(
                    "device",
                    d.id,
                    "its preshared key is not a WireGuard key; its client must be set up again",
                );
                None
            }
        }
    }

    /// A tunnel address of `d`, checked against the source's networks. `None` inside the
    /// result: no address of that family; an outer `None`: the device is skipped.
    fn address<A>(&mut self, d: &FzDevice, text: Option<&str>) -> Option<Option<A>>
    where
        A: std::str::FromStr + Into<IpAddr> + Copy,
    {
        let Some(text) = text else { return Some(None) };
        let Ok(address) = text.parse::<A>() else {
            self.report.skip("device", d.id, format!("its address {text} is of the wrong family"));
            return None;
        };
        if !self.networks.contains(address.into()) {
            self.report.warn("device", d.id, format!("its address {text} is outside the source's tunnel networks"));
        }
        Some(Some(address))
    }

    fn tokens(&mut self, rows: &[FzApiToken]) {
        if self.keys.guardian_secret_key.is_none() {
            if !rows.is_empty() {
                let reason = "GUARDIAN_SECRET_KEY was not given: the source's API tokens cannot be checked";
                self.report.skip("token", format!("all {}", rows.len()), reason);
            }
            return;
        }
        for t in rows {
            if !self.has_user("token", t.id, t.user_id) {
                continue;
            }
            let expires_at = t.expires_at.map(at);
            if expires_at.is_some_and(|e| e <= self.now) {
                self.report.skip("token", t.id, "has expired");
                continue;
            }
            let token = ImportedToken { id: t.id, user_id: t.user_id, inserted_at: at(t.inserted_at), expires_at };
            self.batch.tokens.push(token);
        }
    }

    fn rule(&mut self, r: &FzRule) -> Option<Rule> {
        if let Some(user_id) = r.user_id {
            if !self.has_user("rule", r.id, user_id) {
                return None;
            }
        }
        let Some(action) = RuleAction::parse(&r.action) else {
            self.report.skip("rule", r.id, format!("has an unknown action {:?}", r.action));
            return None;
        };
        let ports = match (r.port_type.as_deref().map(PortType::parse), r.port_range) {
            (None, None) => None,
            (Some(Some(port_type)), Some((lo, hi))) => {
                let range = if lo == hi { lo.to_string() } else { format!("{lo} - {hi}") };
                Some(Ports { port_type, range })
            }
            _ => {
                self.report.skip("rule", r.id, "has a port type without a port range, or the reverse");
                return None;
            }
        };
        Some(Rule {
            id: r.id,
            user_id: r.user_id,
            group_id: None,
            destination: r.destination.clone(),
            action,
            ports,
            inserted_at: at(r.inserted_at),
            updated_at: at(r.updated_at),
        })
    }

    fn oidc_connection(&mut self, o: &FzOidcConnection) -> Option<OidcConnection> {
        let id = format!("{}/{}", o.user_id, o.provider);
        if !self.has_user("oidc_connection", &id, o.user_id) {
            return None;
        }
        let Some(token) = o.refresh_token.as_deref().filter(|t| !t.is_empty()) else {
            self.report.skip("oidc_connection", id, "has no refresh token");
            return None;
        };
        Some(OidcConnection {
            user_id: o.user_id,
            provider_id: o.provider.clone(),
            refresh_token: self.keys.cipher.seal(token.as_bytes()),
            refreshed_at: at(o.refreshed_at.unwrap_or(o.updated_at)),
            inserted_at: at(o.inserted_at),
            updated_at: at(o.updated_at),
        })
    }

    /// The server's key and the token-signing secret, sealed, as settings rows.
    fn secrets(&mut self) {
        match self.keys.server_key {
            Some(key) => {
                let sealed = self.keys.cipher.seal(key.private_key.as_bytes());
                self.batch.settings.push((SERVER_KEY_SETTING.to_owned(), sealed.0));
                self.report.server_public_key = Some(key.public_key.clone());
            }
            None => self.report.warn(
                "server_key",
                "-",
                "no private key file was given: Ferrozone keeps its own server key, so every client must be set up again",
            ),
        }
        if let Some(secret) = self.keys.guardian_secret_key {
            let sealed = self.keys.cipher.seal(secret.as_bytes());
            self.batch.settings.push((LEGACY_TOKEN_SECRET_SETTING.to_owned(), sealed.0));
        }
    }
}

#[cfg(test)]
mod tests;
