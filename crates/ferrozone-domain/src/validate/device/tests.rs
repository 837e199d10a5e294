use serde_json::{json, Map, Value};

use super::*;
use crate::crypto::{generate_keypair, key_work, public_key_of};
use crate::error::Errors;
use crate::input::{Patch, TunnelSettings, WrongTypes};

/// The request attributes as typed input, read as the API's parser reads them: a value of
/// the wrong JSON type is left absent and recorded in `wrong_types`.
struct Attrs {
    map: Map<String, Value>,
    wrong: WrongTypes,
}

impl Attrs {
    fn new(v: Value) -> Self {
        Self { map: v.as_object().cloned().unwrap(), wrong: WrongTypes::default() }
    }

    fn wrong(&mut self, key: &str, v: &Value) {
        let blank = v.as_str().is_some_and(|s| s.trim().is_empty()) || v.as_array().is_some_and(Vec::is_empty);
        self.wrong.insert(key, !blank);
    }

    fn patch<T>(&mut self, key: &str, read: impl Fn(&Value) -> Option<T>) -> Patch<T> {
        match self.map.get(key).cloned() {
            None => Patch::Absent,
            Some(Value::Null) => Patch::Null,
            Some(v) => read(&v).map(Patch::Value).unwrap_or_else(|| {
                self.wrong(key, &v);
                Patch::Absent
            }),
        }
    }

    fn text(&mut self, key: &str) -> Patch<String> {
        self.patch(key, |v| v.as_str().map(str::to_owned))
    }

    fn flag(&mut self, key: &str) -> Option<bool> {
        match self.map.get(key).cloned() {
            Some(Value::Bool(b)) => Some(b),
            Some(v) => {
                self.wrong(key, &v);
                None
            }
            None => None,
        }
    }

    fn list(&mut self, key: &str) -> Patch<Vec<String>> {
        self.patch(key, |v| v.as_array().map(|a| a.iter().map(|i| i.as_str().unwrap_or_default().to_owned()).collect()))
    }

    fn tunnel(&mut self) -> TunnelSettings {
        TunnelSettings {
            use_default_allowed_ips: self.flag("use_default_allowed_ips"),
            use_default_dns: self.flag("use_default_dns"),
            use_default_endpoint: self.flag("use_default_endpoint"),
            use_default_mtu: self.flag("use_default_mtu"),
            use_default_persistent_keepalive: self.flag("use_default_persistent_keepalive"),
            allowed_ips: self.list("allowed_ips"),
            dns: self.list("dns"),
            endpoint: self.text("endpoint"),
            mtu: self.patch("mtu", Value::as_i64),
            persistent_keepalive: self.patch("persistent_keepalive", Value::as_i64),
        }
    }
}

fn new_device(v: Value) -> NewDevice {
    let mut a = Attrs::new(v);
    NewDevice {
        user_id: a.text("user_id").into_value(),
        name: a.text("name").into_value(),
        description: a.text("description").into_value(),
        public_key: a.text("public_key").into_value(),
        preshared_key: a.text("preshared_key").into_value(),
        ipv4: a.text("ipv4").into_value(),
        ipv6: a.text("ipv6").into_value(),
        tunnel: a.tunnel(),
        wrong_types: a.wrong,
    }
}

fn changes(v: Value) -> DeviceChanges {
    let mut a = Attrs::new(v);
    DeviceChanges {
        user_id: a.text("user_id").into_value(),
        name: a.text("name"),
        description: a.text("description"),
        public_key: a.text("public_key"),
        preshared_key: a.text("preshared_key").into_value(),
        ipv4: a.text("ipv4").into_value(),
        ipv6: a.text("ipv6").into_value(),
        tunnel: a.tunnel(),
        wrong_types: a.wrong,
    }
}

fn create(v: Value, settings: &Settings, cipher: &Cipher, owner: Option<Uuid>) -> Result<DeviceCreate, DomainError> {
    check_create(&new_device(v), settings, SERVER_KEY, owner).map(|checked| complete(checked, cipher))
}

/// The server's WireGuard public key in these tests.
const SERVER_KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

fn cipher() -> Cipher {
    Cipher::from_base64(&Cipher::generate_key()).unwrap()
}

fn errors_of<T: std::fmt::Debug>(r: Result<T, DomainError>) -> Errors {
    match r {
        Err(DomainError::Invalid(e)) => e,
        other => panic!("expected validation errors, got {other:?}"),
    }
}

fn create_ok(v: Value) -> DeviceCreate {
    create(v, &Settings::standard(), &cipher(), Some(Uuid::nil())).unwrap()
}

fn create_err(v: Value) -> Errors {
    errors_of(create(v, &Settings::standard(), &cipher(), Some(Uuid::nil())))
}

fn key() -> String {
    generate_keypair().public_key
}

#[test]
fn minimal_create_uses_defaults_and_assigns_addresses() {
    let c = create_ok(json!({"public_key": key()}));
    assert_eq!(c.device.user_id, Uuid::nil(), "the default owner");
    let e = errors_of(create(json!({"public_key": key()}), &Settings::standard(), &cipher(), None));
    assert_eq!(e.get("user_id").unwrap(), ["can't be blank"]);
    assert!(!c.name_given && !c.device.name.is_empty());
    assert_eq!(c.device.use_default, UseDefaults::default());
    assert_eq!(c.device.custom, CustomConfig::default());
    assert_eq!(c.device.ipv4, AddressRequest::Assign);
    assert_eq!(c.device.ipv6, AddressRequest::Assign);
}

#[test]
fn custom_values_are_kept_when_defaults_are_off() {
    let c = create_ok(json!({
        "public_key": key(), "name": " laptop ", "description": "  mine ",
        "use_default_allowed_ips": false, "allowed_ips": ["0.0.0.0/0", "::/0", "1.1.1.1"],
        "use_default_dns": false, "dns": ["9.9.9.8", "dns.example.com"],
        "use_default_endpoint": false, "endpoint": "9.9.9.9",
        "use_default_mtu": false, "mtu": 1400,
        "use_default_persistent_keepalive": false, "persistent_keepalive": 0,
        "ipv4": "10.3.2.9", "ipv6": "fd00::3:2:9",
        "user_id": "7a0b6a7e-8a6e-4a4e-9f57-1b2c3d4e5f60"
    }));
    let d = c.device;
    assert_eq!((d.name.as_str(), d.description.as_deref()), ("laptop", Some("mine")));
    assert_eq!(d.custom.allowed_ips, ["0.0.0.0/0", "::/0", "1.1.1.1"]);
    assert_eq!(d.custom.dns, ["9.9.9.8", "dns.example.com"]);
    assert_eq!(d.custom.endpoint.as_deref(), Some("9.9.9.9"));
    assert_eq!((d.custom.mtu, d.custom.persistent_keepalive), (Some(1400), Some(0)));
    assert_eq!(d.ipv4, AddressRequest::Given("10.3.2.9".parse().unwrap()));
    assert_eq!(d.ipv6, AddressRequest::Given("fd00::3:2:9".parse().unwrap()));
    assert_eq!(d.user_id.to_string(), "7a0b6a7e-8a6e-4a4e-9f57-1b2c3d4e5f60");
}

#[test]
fn values_with_defaults_on_must_not_be_present() {
    let e = create_err(json!({"public_key": key(), "mtu": 1400, "dns": ["1.1.1.1"], "endpoint": "x:1",
        "allowed_ips": ["10.0.0.0/8"], "persistent_keepalive": 5}));
    for f in ["mtu", "dns", "endpoint", "allowed_ips", "persistent_keepalive"] {
        assert_eq!(e.get(f).unwrap(), ["must not be present"], "{f}");
    }
    // Empty values are not "present".
    create_ok(json!({"public_key": key(), "mtu": null, "dns": [], "endpoint": "", "allowed_ips": []}));
}

#[test]
fn type_and_range_errors() {
    let e = create_err(json!({
        "public_key": "short", "preshared_key": 7, "name": "n".repeat(256), "description": "d".repeat(2049),
        "use_default_mtu": false, "mtu": 575, "use_default_persistent_keepalive": false, "persistent_keepalive": 121,
        "use_default_dns": null, "use_default_allowed_ips": false, "allowed_ips": ["10.0.0.0/33", "1.1.1.1", "1.1.1.1"],
        "use_default_endpoint": false, "endpoint": "bad host:99999",
        "ipv4": "fd00::1", "ipv6": "10.0.0.1", "user_id": "not-a-uuid"
    }));
    assert_eq!(e.get("public_key").unwrap(), [KEY_FORMAT]);
    assert_eq!(e.get("preshared_key").unwrap(), ["is invalid"]);
    assert_eq!(e.get("name").unwrap(), ["should be at most 255 character(s)"]);
    assert_eq!(e.get("description").unwrap(), ["should be at most 2048 character(s)"]);
    assert_eq!(e.get("mtu").unwrap(), ["must be greater than or equal to 576"]);
    assert_eq!(e.get("persistent_keepalive").unwrap(), ["must be less than or equal to 120"]);
    assert_eq!(e.get("use_default_dns").unwrap(), ["is invalid"]);
    assert_eq!(e.get("allowed_ips").unwrap(), ["is invalid", "should not contain duplicates"]);
    assert_eq!(e.get("endpoint").unwrap(), ["is invalid"]);
    assert_eq!(e.get("ipv4").unwrap(), ["is invalid"]);
    assert_eq!(e.get("ipv6").unwrap(), ["is invalid"]);
    assert_eq!(e.get("user_id").unwrap(), ["does not exist"]);
}

#[test]
fn a_missing_public_key_is_generated_with_its_private_key() {
    for missing in [json!({}), json!({"public_key": null}), json!({"public_key": " "})] {
        let c = create_ok(missing);
        let private_key = c.private_key.expect("a generated private key");
        assert_eq!(public_key_of(private_key.expose()).as_deref(), Some(c.device.public_key.as_str()));
    }
    let given = key();
    let c = create_ok(json!({ "public_key": given }));
    assert_eq!(c.device.public_key, given);
    assert!(c.private_key.is_none());
}

#[test]
fn missing_endpoint_is_blank() {
    let e = create_err(json!({"use_default_endpoint": false}));
    assert_eq!(e.get("public_key"), None);
    assert_eq!(e.get("endpoint").unwrap(), ["can't be blank"]);
    let e = create_err(json!({"public_key": key(), "use_default_mtu": false, "mtu": "1280"}));
    assert_eq!(e.get("mtu").unwrap(), ["is invalid"]);
}

#[test]
fn addresses_must_be_usable_in_the_network() {
    let e = create_err(json!({"public_key": key(), "ipv4": "10.3.3.5", "ipv6": "fd00::3:2:1"}));
    assert_eq!(e.get("ipv4").unwrap(), ["is not in the CIDR 10.3.2.0/24"]);
    assert_eq!(e.get("ipv6").unwrap(), ["is reserved"]);
    for reserved in ["10.3.2.0", "10.3.2.1", "10.3.2.255"] {
        assert_eq!(create_err(json!({"public_key": key(), "ipv4": reserved})).get("ipv4").unwrap(), ["is reserved"]);
    }
    let mut settings = Settings::standard();
    settings.pools.v6 = None;
    let c = create(json!({"public_key": key()}), &settings, &cipher(), Some(Uuid::nil())).unwrap();
    assert_eq!(c.device.ipv6, AddressRequest::None);
}

fn stored(custom_endpoint: bool) -> Device {
    let c = create_ok(if custom_endpoint {
        json!({"public_key": key(), "use_default_endpoint": false, "endpoint": "vpn:1"})
    } else {
        json!({"public_key": key()})
    });
    let d = c.device;
    Device {
        id: d.id,
        user_id: Uuid::now_v7(),
        name: d.name,
        description: d.description,
        public_key: d.public_key,
        preshared_key: d.preshared_key,
        ipv4: Some("10.3.2.2".parse().unwrap()),
        ipv6: None,
        use_default: d.use_default,
        custom: d.custom,
        stats: Default::default(),
        paused_at: None,
        inserted_at: d.now,
        updated_at: d.now,
    }
}

fn update_of(d: &Device, v: Value) -> Result<DeviceUpdate, DomainError> {
    check_update(&changes(v), d, &Settings::standard(), SERVER_KEY).map(|checked| complete_update(checked, d, &CIPHER))
}

static CIPHER: std::sync::LazyLock<Cipher> = std::sync::LazyLock::new(cipher);

#[test]
fn resending_the_stored_preshared_key_is_no_change() {
    let mut d = stored(false);
    let psk = crate::crypto::generate_psk().to_string();
    d.preshared_key = CIPHER.seal(psk.as_bytes());
    assert!(update_of(&d, json!({"preshared_key": psk})).unwrap().preshared_key.is_none());
    let other = crate::crypto::generate_psk().to_string();
    let sealed = update_of(&d, json!({"preshared_key": other})).unwrap().preshared_key.unwrap();
    assert_eq!(CIPHER.open_str(&sealed).unwrap(), other);
}

#[test]
fn empty_update_keeps_everything() {
    let d = stored(true);
    let u = update_of(&d, json!({"user_id": d.user_id.to_string()})).unwrap();
    assert_eq!((u.name, u.public_key), (d.name.clone(), d.public_key.clone()));
    assert_eq!((u.ipv4, u.ipv6, u.use_default, u.custom), (d.ipv4, d.ipv6, d.use_default, d.custom.clone()));
    assert!(u.preshared_key.is_none());
}

#[test]
fn update_merges_switches_with_the_stored_record() {
    let d = stored(true);
    // The stored device has a custom endpoint: sending one is fine.
    let u = update_of(&d, json!({"endpoint": "other:2"})).unwrap();
    assert_eq!(u.custom.endpoint.as_deref(), Some("other:2"));
    // Turning the default on clears the custom value.
    let u = update_of(&d, json!({"use_default_endpoint": true})).unwrap();
    assert_eq!(u.custom.endpoint, None);
    // Turning it off needs a value.
    let plain = stored(false);
    let e = errors_of(update_of(&plain, json!({"use_default_endpoint": false})));
    assert_eq!(e.get("endpoint").unwrap(), ["can't be blank"]);
    let e = errors_of(update_of(&plain, json!({"mtu": 1300})));
    assert_eq!(e.get("mtu").unwrap(), ["must not be present"]);
}

#[test]
fn update_rejects_owner_change_and_blank_name() {
    let d = stored(false);
    let e = errors_of(update_of(&d, json!({"user_id": Uuid::now_v7().to_string(), "name": null, "public_key": ""})));
    assert_eq!(e.get("user_id").unwrap(), ["cannot be changed"]);
    assert_eq!(e.get("name").unwrap(), ["can't be blank"]);
    assert_eq!(e.get("public_key").unwrap(), ["can't be blank"]);
    let u = update_of(&d, json!({"ipv4": "10.3.2.77", "description": null})).unwrap();
    assert_eq!(u.ipv4, Some("10.3.2.77".parse().unwrap()));
    assert_eq!(u.description, None);
}

#[test]
fn the_servers_own_public_key_is_refused_on_create_and_update() {
    for given in [SERVER_KEY.to_owned(), format!(" {SERVER_KEY}\n")] {
        let e = create_err(json!({"public_key": given, "mtu": 1}));
        assert_eq!(e.get("public_key").unwrap(), [IS_SERVER_KEY], "with the other errors");
        let e = errors_of(update_of(&stored(false), json!({"public_key": given})));
        assert_eq!(e.get("public_key").unwrap(), [IS_SERVER_KEY]);
    }
    // A preshared key may be any 32 bytes, these included.
    assert!(create_err(json!({"preshared_key": SERVER_KEY, "mtu": 1})).get("preshared_key").is_none());
}

#[test]
fn a_rejected_request_costs_no_key_work() {
    let d = stored(false);
    let (psk, public_key) = (crate::crypto::generate_psk().to_string(), key());
    let before = key_work::done();
    create_err(json!({"mtu": 1}));
    create_err(json!({"public_key": SERVER_KEY, "preshared_key": psk}));
    errors_of(update_of(&d, json!({"preshared_key": psk, "mtu": 1})));
    assert_eq!(key_work::done(), before, "no key generated, no key sealed");
    // The counter counts: a request that passes does the work.
    create_ok(json!({"public_key": public_key}));
    assert_eq!(key_work::done(), before + 2, "a preshared key generated and sealed");
}
