//! `{"device": {…}}`: the attributes of a device create or update.

use ferrozone_domain::input::{DeviceChanges, NewDevice, TunnelSettings};

use super::reader::{Attr, Reader};
use super::{Attributes, Described};

const USER_ID: Attr =
    Attr::new("user_id").doc("Required on create with an admin token; defaults to the caller otherwise.");
const NAME: Attr = Attr::new("name").doc("1–255 characters, unique per user; generated when omitted.");
const DESCRIPTION: Attr = Attr::new("description").doc("At most 2048 characters.");
const PUBLIC_KEY: Attr = Attr::new("public_key").doc(
    "Base64 of a 32-byte key (44 characters). Omitted (or `null`, `\"\"`) on create, the\n\
     server generates the key pair and returns the private key once, in the 201.",
);
const PRESHARED_KEY: Attr = Attr::new("preshared_key").doc("Base64 of a 32-byte key; generated when omitted.");
const IPV4: Attr = Attr::new("ipv4").doc("An address in the IPv4 tunnel network; assigned when omitted.");
const IPV6: Attr = Attr::new("ipv6").doc("An address in the IPv6 tunnel network; assigned when omitted.");
const ALLOWED_IPS: Attr = Attr::new("allowed_ips");
const DNS: Attr = Attr::new("dns");
const ENDPOINT: Attr = Attr::new("endpoint");
const MTU: Attr = Attr::new("mtu").doc("576–1500.");
const PERSISTENT_KEEPALIVE: Attr = Attr::new("persistent_keepalive").doc("0–120 seconds.");
const USE_DEFAULT_ALLOWED_IPS: Attr = Attr::new("use_default_allowed_ips");
const USE_DEFAULT_DNS: Attr = Attr::new("use_default_dns");
const USE_DEFAULT_ENDPOINT: Attr = Attr::new("use_default_endpoint");
const USE_DEFAULT_MTU: Attr = Attr::new("use_default_mtu");
const USE_DEFAULT_PERSISTENT_KEEPALIVE: Attr = Attr::new("use_default_persistent_keepalive");

impl Attributes for NewDevice {
    const KEY: &'static str = "device";

    fn read(r: &mut Reader) -> Self {
        NewDevice {
            user_id: r.uuid_text(&USER_ID).into_value(),
            name: r.text(&NAME).into_value(),
            description: r.text(&DESCRIPTION).into_value(),
            public_key: r.text(&PUBLIC_KEY).into_value(),
            preshared_key: r.text(&PRESHARED_KEY).into_value(),
            ipv4: r.text(&IPV4).into_value(),
            ipv6: r.text(&IPV6).into_value(),
            tunnel: tunnel(r),
            wrong_types: r.wrong_types(),
        }
    }
}

impl Attributes for DeviceChanges {
    const KEY: &'static str = "device";

    fn read(r: &mut Reader) -> Self {
        DeviceChanges {
            user_id: r.uuid_text(&USER_ID).into_value(),
            name: r.text(&NAME),
            description: r.text(&DESCRIPTION),
            public_key: r.text(&PUBLIC_KEY),
            preshared_key: r.text(&PRESHARED_KEY).into_value(),
            ipv4: r.text(&IPV4).into_value(),
            ipv6: r.text(&IPV6).into_value(),
            tunnel: tunnel(r),
            wrong_types: r.wrong_types(),
        }
    }
}

fn tunnel(r: &mut Reader) -> TunnelSettings {
    TunnelSettings {
        use_default_allowed_ips: r.flag(&USE_DEFAULT_ALLOWED_IPS),
        use_default_dns: r.flag(&USE_DEFAULT_DNS),
        use_default_endpoint: r.flag(&USE_DEFAULT_ENDPOINT),
        use_default_mtu: r.flag(&USE_DEFAULT_MTU),
        use_default_persistent_keepalive: r.flag(&USE_DEFAULT_PERSISTENT_KEEPALIVE),
        allowed_ips: r.list(&ALLOWED_IPS),
        dns: r.list(&DNS),
        endpoint: r.text(&ENDPOINT),
        mtu: r.integer(&MTU),
        persistent_keepalive: r.integer(&PERSISTENT_KEEPALIVE),
    }
}

const ATTRS_DOC: &str = "Device attributes a client may send. All are optional on update; `user_id` cannot change.";

impl Described for NewDevice {
    const NAME: &'static str = "Device";
    const DOC: &'static str = ATTRS_DOC;
}

#[cfg(test)]
mod tests {
    use ferrozone_domain::input::Patch;
    use serde_json::{json, Value};

    use super::*;

    fn parse<T: Attributes>(v: Value) -> T {
        T::parse(v.as_object().unwrap().clone())
    }

    #[test]
    fn creates_and_updates_read_the_same_attributes() {
        let create = serde_json::to_value(crate::wire::Envelope::<NewDevice>::attrs()).unwrap();
        let update = serde_json::to_value(Reader::describe(ATTRS_DOC, DeviceChanges::read)).unwrap();
        assert_eq!(create, update);
        assert_eq!(create["properties"].as_object().unwrap().len(), 17);
    }

    #[test]
    fn values_of_wrong_types_are_recorded_with_their_presence() {
        let d: NewDevice = parse(json!({
            "name": 5, "mtu": "1280", "persistent_keepalive": 1.5, "allowed_ips": "", "dns": [],
            "endpoint": {}, "use_default_mtu": null, "use_default_dns": "true", "user_id": 7
        }));
        for (attr, present) in [
            ("name", true),
            ("mtu", true),
            ("persistent_keepalive", true),
            ("allowed_ips", false),
            ("endpoint", true),
            ("use_default_mtu", false),
            ("use_default_dns", true),
            ("user_id", true),
        ] {
            assert!(d.wrong_types.has(attr), "{attr}");
            assert_eq!(d.wrong_types.present(attr), present, "{attr}");
        }
        assert_eq!((d.name, d.user_id, d.tunnel.mtu), (None, None, Patch::Absent));
        assert_eq!(d.tunnel.dns, Patch::Value(vec![]), "an empty list is a list");
        assert!(!d.wrong_types.has("dns"));
    }

    #[test]
    fn list_entries_that_are_not_strings_read_as_empty_ones() {
        let d: DeviceChanges = parse(json!({"allowed_ips": ["1.1.1.1", 5, null], "dns": null, "endpoint": " x "}));
        assert_eq!(d.tunnel.allowed_ips, Patch::Value(vec!["1.1.1.1".into(), String::new(), String::new()]));
        assert_eq!((d.tunnel.dns, d.tunnel.endpoint), (Patch::Null, Patch::Value(" x ".into())));
        assert_eq!((d.name, d.tunnel.mtu), (Patch::Absent, Patch::Absent));
        assert!(d.wrong_types.is_empty());
    }
}
