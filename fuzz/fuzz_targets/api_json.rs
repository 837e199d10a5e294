//! What a `/v0` POST, PUT or PATCH body of a user or a device goes through: the JSON
//! parser the API's body extractor uses, the API's reading of the attributes into the
//! domain's typed input, then the domain's validation of `{"device": …}` (create, for an
//! admin and for a user, and update of a stored device) and of `{"user": …}` (create and
//! update). Validation must answer, never panic; what it accepts must hold to the rules it
//! states (the server's own key is never a device's).
#![no_main]

use std::sync::LazyLock;

use ferrozone_api::wire::Attributes;
use ferrozone_domain::crypto::{is_valid_key, Cipher};
use ferrozone_domain::input::{DeviceChanges, NewDevice, NewUser, UserChanges};
use ferrozone_domain::model::{CustomConfig, Device, PeerStats, UseDefaults};
use ferrozone_domain::validate::{device, user};
use ferrozone_domain::{Settings, Timestamp};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};
use uuid::Uuid;

/// The server's WireGuard public key in this target.
const SERVER_KEY: &str = "OKKYJzQKxiRyVD2tUWdjkOJ1aEbmbEVG1g9J7QA1Jn4=";

struct Fixture {
    settings: Settings,
    cipher: Cipher,
    owner: Uuid,
    stored: Device,
}

static FIXTURE: LazyLock<Fixture> = LazyLock::new(|| {
    let cipher = Cipher::from_base64("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=").expect("a fixed secret key");
    let owner = Uuid::from_u128(0x0190_0000_0000_7000_8000_0000_0000_0001);
    let now = Timestamp::now();
    let stored = Device {
        id: Uuid::from_u128(0x0190_0000_0000_7000_8000_0000_0000_0002),
        user_id: owner,
        name: "laptop".into(),
        description: Some("the stored device".into()),
        public_key: "YLhRhqRkOfLJLbDxPv8PHzyAT0CFOiVXkaXK8VM8gSE=".into(),
        preshared_key: cipher.seal(b"mTb1E6kWBP0J7cA2cVxpjcHhD8vI/Cm2iHUgZd5cbh4="),
        ipv4: Some("10.3.2.2".parse().expect("an address")),
        ipv6: Some("fd00::3:2:2".parse().expect("an address")),
        use_default: UseDefaults::default(),
        custom: CustomConfig::default(),
        stats: PeerStats::default(),
        paused_at: None,
        inserted_at: now,
        updated_at: now,
    };
    Fixture { settings: Settings::standard(), cipher, owner, stored }
});

fuzz_target!(|data: &[u8]| {
    // As the body extractor parses a request body.
    let Ok(Value::Object(body)) = serde_json::from_slice::<Value>(data) else { return };
    if let Some(Value::Object(attrs)) = body.get("device") {
        devices(attrs);
    }
    if let Some(Value::Object(attrs)) = body.get("user") {
        let _ = user::create(&NewUser::parse(attrs.clone()));
        let _ = user::update(&UserChanges::parse(attrs.clone()));
    }
});

fn devices(attrs: &Map<String, Value>) {
    let f = &*FIXTURE;
    let input = NewDevice::parse(attrs.clone());
    for default_owner in [None, Some(f.owner)] {
        if let Ok(checked) = device::check_create(&input, &f.settings, SERVER_KEY, default_owner) {
            let created = device::complete(checked, &f.cipher);
            assert!(is_valid_key(&created.device.public_key), "an accepted public key is a key");
            assert_ne!(created.device.public_key, SERVER_KEY, "the server's key is refused");
            assert!(created.device.name.chars().count() <= 255, "an accepted name fits");
        }
    }
    let changes = DeviceChanges::parse(attrs.clone());
    if let Ok(checked) = device::check_update(&changes, &f.stored, &f.settings, SERVER_KEY) {
        let update = device::complete_update(checked, &f.stored, &f.cipher);
        assert!(is_valid_key(&update.public_key), "an updated public key is a key");
        assert_ne!(update.public_key, SERVER_KEY, "the server's key is refused");
        for address in update.ipv4.map(Into::into).into_iter().chain(update.ipv6.map(Into::into)) {
            let in_pool =
                [&f.settings.pools.v4, &f.settings.pools.v6].into_iter().flatten().any(|p| p.contains(address));
            assert!(in_pool, "an accepted address {address} is in a tunnel network");
        }
    }
}
