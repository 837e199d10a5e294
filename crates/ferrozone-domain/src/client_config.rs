//! What a device's WireGuard client uses: the effective tunnel settings (docs/api.md
//! section 5) and the wg-quick configuration file built from them.

use std::fmt::Write;

use crate::error::DomainError;
use crate::model::Device;
use crate::settings::ClientDefaults;

/// Stands in for the device's private key, which the server never stores: the client
/// replaces it with its own.
pub const PRIVATE_KEY_PLACEHOLDER: &str = "<PRIVATE_KEY>";

/// The five tunnel settings as the device uses them: the server default where the
/// device's `use_default_*` is on, the device's own value otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effective {
    pub allowed_ips: Vec<String>,
    pub dns: Vec<String>,
    pub endpoint: Option<String>,
    pub mtu: Option<i32>,
    pub persistent_keepalive: Option<i32>,
}

impl Device {
    /// The settings this device uses, given the server's `defaults`.
    pub fn effective(&self, defaults: &ClientDefaults) -> Effective {
        let (u, c) = (&self.use_default, &self.custom);
        Effective {
            allowed_ips: if u.allowed_ips { defaults.allowed_ips.clone() } else { c.allowed_ips.clone() },
            dns: if u.dns { defaults.dns.clone() } else { c.dns.clone() },
            endpoint: if u.endpoint { Some(defaults.endpoint.clone()) } else { c.endpoint.clone() },
            mtu: if u.mtu { defaults.mtu } else { c.mtu },
            persistent_keepalive: if u.persistent_keepalive {
                defaults.persistent_keepalive
            } else {
                c.persistent_keepalive
            },
        }
    }
}

/// Everything a configuration file holds besides the device record itself.
pub struct ConfigKeys<'a> {
    /// The device's private key, or [`PRIVATE_KEY_PLACEHOLDER`].
    pub private_key: &'a str,
    pub preshared_key: &'a str,
    pub server_public_key: &'a str,
}

/// What a line of the configuration file may not hold: wg-quick reads a new line as a new
/// setting (`PostUp = …` runs as root), so a stored value with a line break, which no API
/// accepts, is refused rather than written.
pub const HOLDS_LINE_BREAK: &str =
    "holds a line break, which would start another line of the configuration file: set it again";

/// The device's wg-quick configuration. Lines without a value (no DNS servers, a
/// keepalive of 0, an address family the device has no address in) are left out. A value
/// holding CR or LF is an error naming its attribute ([`HOLDS_LINE_BREAK`]).
pub fn render(device: &Device, settings: &Effective, keys: &ConfigKeys<'_>) -> Result<String, DomainError> {
    let mut addresses = Vec::new();
    if let Some(v4) = device.ipv4 {
        addresses.push(format!("{v4}/32"));
    }
    if let Some(v6) = device.ipv6 {
        addresses.push(format!("{v6}/128"));
    }
    let mut out = String::from("[Interface]\n");
    line(&mut out, ("PrivateKey", "private_key"), keys.private_key)?;
    line(&mut out, ("Address", "address"), &addresses.join(", "))?;
    line(&mut out, ("DNS", "dns"), &settings.dns.join(", "))?;
    if let Some(mtu) = settings.mtu {
        line(&mut out, ("MTU", "mtu"), &mtu.to_string())?;
    }
    out.push_str("\n[Peer]\n");
    line(&mut out, ("PublicKey", "server_public_key"), keys.server_public_key)?;
    line(&mut out, ("PresharedKey", "preshared_key"), keys.preshared_key)?;
    line(&mut out, ("AllowedIPs", "allowed_ips"), &settings.allowed_ips.join(", "))?;
    line(&mut out, ("Endpoint", "endpoint"), settings.endpoint.as_deref().unwrap_or_default())?;
    if let Some(keepalive) = settings.persistent_keepalive.filter(|k| *k > 0) {
        line(&mut out, ("PersistentKeepalive", "persistent_keepalive"), &keepalive.to_string())?;
    }
    Ok(out)
}

/// The longest interface name Linux takes (`IFNAMSIZ` - 1): wg-quick names the
/// interface after the file, so a longer stem would not come up.
const FILE_STEM_MAX: usize = 15;

/// A safe file name for a device's configuration file: `<name>.conf` with only the
/// characters wg-quick accepts in an interface name (`[A-Za-z0-9_=+.-]`; any other run of
/// characters becomes one `-`), at most 15 of them, or `ferrozone.conf` when nothing of
/// the name is left. Also safe in a `Content-Disposition` header: no quote, no space.
pub fn file_name(device_name: &str) -> String {
    let stem = file_stem(device_name, |c| c.is_ascii_alphanumeric(), FILE_STEM_MAX);
    // A stem of dots alone would name the current or the parent directory.
    if stem.chars().all(|c| c == '.') {
        "ferrozone.conf".to_owned()
    } else {
        format!("{stem}.conf")
    }
}

/// `name` with the characters `keep` accepts and `_=+.-` kept, every other run of
/// characters one `-`, no `-` at either end, at most `max` characters.
pub fn file_stem(name: &str, keep: impl Fn(char) -> bool, max: usize) -> String {
    let mut stem = String::new();
    for c in name.chars() {
        let kept = if keep(c) || "_=+.-".contains(c) { c } else { '-' };
        if !(kept == '-' && stem.ends_with('-')) {
            stem.push(kept);
        }
    }
    let stem: String = stem.trim_matches('-').chars().take(max).collect();
    stem.trim_end_matches('-').to_owned()
}

/// `key = value`, unless `value` is empty; `attribute` names the value in an error.
fn line(out: &mut String, (key, attribute): (&str, &str), value: &str) -> Result<(), DomainError> {
    if value.contains(['\r', '\n']) {
        return Err(DomainError::invalid(attribute, HOLDS_LINE_BREAK));
    }
    if !value.is_empty() {
        let _ = writeln!(out, "{key} = {value}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::Sealed;
    use crate::model::{CustomConfig, PeerStats, UseDefaults};
    use crate::settings::Settings;
    use crate::time::Timestamp;

    fn device() -> Device {
        Device {
            id: uuid::Uuid::nil(),
            user_id: uuid::Uuid::nil(),
            name: "laptop".into(),
            description: None,
            public_key: "pub".into(),
            preshared_key: Sealed(Vec::new()),
            ipv4: Some("10.3.2.2".parse().unwrap()),
            ipv6: Some("fd00::3:2:2".parse().unwrap()),
            use_default: UseDefaults::default(),
            custom: CustomConfig::default(),
            stats: PeerStats::default(),
            paused_at: None,
            inserted_at: Timestamp::from_micros(0),
            updated_at: Timestamp::from_micros(0),
        }
    }

    const KEYS: ConfigKeys<'static> =
        ConfigKeys { private_key: PRIVATE_KEY_PLACEHOLDER, preshared_key: "psk", server_public_key: "server" };

    #[test]
    fn file_names_are_interface_names() {
        assert_eq!(file_name("laptop"), "laptop.conf");
        assert_eq!(file_name("Kate's phone (work)"), "Kate-s-phone-wo.conf");
        assert_eq!(file_name("  a//b  "), "a-b.conf");
        assert_eq!(file_name("x=1+y_z.v-2"), "x=1+y_z.v-2.conf");
        assert_eq!(file_name("téléphone"), "t-l-phone.conf");
        assert_eq!(file_name("abcdefghijklmn opq"), "abcdefghijklmn.conf");
        for nothing in ["", "   ", "ééé", "..", "\"/\r\n"] {
            assert_eq!(file_name(nothing), "ferrozone.conf", "{nothing:?}");
        }
    }

    #[test]
    fn defaults_give_the_full_file() {
        let d = device();
        let text = render(&d, &d.effective(&Settings::standard().configuration.client_defaults()), &KEYS).unwrap();
        let expected = "[Interface]\nPrivateKey = <PRIVATE_KEY>\nAddress = 10.3.2.2/32, fd00::3:2:2/128\n\
            DNS = 1.1.1.1, 1.0.0.1\nMTU = 1280\n\n[Peer]\nPublicKey = server\nPresharedKey = psk\n\
            AllowedIPs = 0.0.0.0/0, ::/0\nEndpoint = localhost:51820\nPersistentKeepalive = 25\n";
        assert_eq!(text, expected);
    }

    #[test]
    fn empty_values_leave_their_lines_out() {
        let mut d = device();
        d.ipv6 = None;
        d.use_default =
            UseDefaults { allowed_ips: true, dns: false, endpoint: true, mtu: false, persistent_keepalive: false };
        d.custom = CustomConfig { persistent_keepalive: Some(0), ..CustomConfig::default() };
        let text = render(&d, &d.effective(&Settings::standard().configuration.client_defaults()), &KEYS).unwrap();
        assert!(text.contains("Address = 10.3.2.2/32\n"), "{text}");
        for absent in ["DNS", "MTU", "PersistentKeepalive", "fd00"] {
            assert!(!text.contains(absent), "{absent}: {text}");
        }
    }

    #[test]
    fn a_null_default_leaves_its_line_out_for_devices_using_it() {
        let mut defaults = Settings::standard().configuration;
        (defaults.default_client_mtu, defaults.default_client_persistent_keepalive) = (None, None);
        let d = device();
        let text = render(&d, &d.effective(&defaults.client_defaults()), &KEYS).unwrap();
        assert!(!text.contains("MTU") && !text.contains("PersistentKeepalive"), "{text}");
        assert!(text.contains("Endpoint = localhost:51820\n"), "{text}");
        let mut own = device();
        own.use_default.mtu = false;
        own.custom.mtu = Some(1400);
        let text = render(&own, &own.effective(&defaults.client_defaults()), &KEYS).unwrap();
        assert!(text.contains("MTU = 1400\n") && !text.contains("PersistentKeepalive"), "{text}");
    }

    #[test]
    fn custom_values_win_over_defaults() {
        let mut d = device();
        d.use_default =
            UseDefaults { allowed_ips: false, dns: false, endpoint: false, mtu: false, persistent_keepalive: false };
        d.custom = CustomConfig {
            allowed_ips: vec!["10.0.0.0/8".into()],
            dns: vec!["9.9.9.9".into()],
            endpoint: Some("vpn.example.com:1".into()),
            mtu: Some(1420),
            persistent_keepalive: Some(5),
        };
        let effective = d.effective(&Settings::standard().configuration.client_defaults());
        assert_eq!(effective.allowed_ips, ["10.0.0.0/8"]);
        assert_eq!((effective.mtu, effective.persistent_keepalive), (Some(1420), Some(5)));
        let text = render(&d, &effective, &KEYS).unwrap();
        assert!(text.contains("Endpoint = vpn.example.com:1\nPersistentKeepalive = 5\n"), "{text}");
    }

    #[test]
    fn a_value_with_a_line_break_is_refused_naming_its_attribute() {
        let mut d = device();
        d.use_default.endpoint = false;
        for (endpoint, dns) in
            [("vpn.example.com\nPostUp = touch /tmp/pwn", "9.9.9.9"), ("vpn.example.com", "9.9.9.9\r")]
        {
            d.use_default.dns = false;
            d.custom =
                CustomConfig { endpoint: Some(endpoint.into()), dns: vec![dns.into()], ..CustomConfig::default() };
            let refused = render(&d, &d.effective(&Settings::standard().configuration.client_defaults()), &KEYS);
            let Err(DomainError::Invalid(errors)) = refused else { panic!("{endpoint:?} {dns:?}: {refused:?}") };
            let attribute = if endpoint.contains('\n') { "endpoint" } else { "dns" };
            assert_eq!(errors.get(attribute).unwrap(), [HOLDS_LINE_BREAK]);
        }
    }
}
