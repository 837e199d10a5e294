//! docs/api.md section 5: `/v0/devices`. What a new device looks like; the rules are in
//! `devices/*.rs`.

mod addresses;
mod authorization;
mod concurrency;
pub mod config;
mod instances;
mod keys;
mod list;
mod pause;
mod switches;
mod update;
mod validation;

use std::collections::HashSet;
use std::net::{Ipv4Addr, Ipv6Addr};

use axum::http::StatusCode;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde_json::{json, Value};

use crate::helpers::{assert_timestamp, expect_not_found_everywhere, key, keys, sorted, TestApp};

pub const DEVICE_FIELDS: &[&str] = &[
    "id",
    "user_id",
    "name",
    "description",
    "public_key",
    "preshared_key",
    "server_public_key",
    "ipv4",
    "ipv6",
    "allowed_ips",
    "dns",
    "endpoint",
    "mtu",
    "persistent_keepalive",
    "use_default_allowed_ips",
    "use_default_dns",
    "use_default_endpoint",
    "use_default_mtu",
    "use_default_persistent_keepalive",
    "latest_handshake",
    "remote_ip",
    "rx_bytes",
    "tx_bytes",
    "inserted_at",
    "updated_at",
];

/// The device id of a device's JSON.
pub fn id_of(device: &Value) -> String {
    device["id"].as_str().expect("an id").to_owned()
}

/// Asserts `text` is standard base64 of exactly 32 bytes (44 characters).
#[track_caller]
pub fn assert_key(text: &Value) {
    let text = text.as_str().unwrap_or_else(|| panic!("not a string: {text}"));
    assert_eq!(text.len(), 44, "{text}");
    assert_eq!(STANDARD.decode(text).map(|b| b.len()).ok(), Some(32), "{text}");
}

/// Asserts the address is assignable in the default networks: 10.3.2.0/24 and
/// fd00::3:2:0/120, not the network, gateway (.1) or broadcast address.
#[track_caller]
pub fn assert_assigned(device: &Value) {
    let v4: Ipv4Addr = device["ipv4"].as_str().expect("ipv4").parse().expect("an IPv4 address");
    let [a, b, c, d] = v4.octets();
    assert!([a, b, c] == [10, 3, 2] && ![0, 1, 255].contains(&d), "{v4}");
    let v6: Ipv6Addr = device["ipv6"].as_str().expect("ipv6").parse().expect("an IPv6 address");
    let bits = u128::from(v6);
    let network = u128::from("fd00::3:2:0".parse::<Ipv6Addr>().unwrap());
    assert!(bits & !0xff == network && ![0, 1, 255].contains(&(bits & 0xff)), "{v6}");
    assert_eq!(device["ipv6"], v6.to_string(), "canonical form");
}

#[tokio::test]
async fn a_minimal_device_gets_every_field_with_defaults() {
    let app = TestApp::new().await;
    let public_key = key();
    let res = app.create_device(json!({"user_id": app.admin_id, "public_key": public_key})).await;
    let d = res.expect_status(StatusCode::CREATED).data().clone();
    assert_eq!(keys(&d), sorted(DEVICE_FIELDS));
    assert_eq!(res.header("location"), Some(format!("/v0/devices/{}", id_of(&d)).as_str()));
    let expected = json!({
        "user_id": app.admin_id, "description": null, "public_key": public_key,
        "server_public_key": app.domain.server_public_key(),
        "allowed_ips": ["0.0.0.0/0", "::/0"], "dns": ["1.1.1.1", "1.0.0.1"], "endpoint": "localhost:51820",
        "mtu": 1280, "persistent_keepalive": 25,
        "use_default_allowed_ips": true, "use_default_dns": true, "use_default_endpoint": true,
        "use_default_mtu": true, "use_default_persistent_keepalive": true,
        "latest_handshake": null, "remote_ip": null, "rx_bytes": null, "tx_bytes": null,
    });
    for (field, value) in expected.as_object().unwrap() {
        assert_eq!(&d[field], value, "{field}");
    }
    assert!(uuid::Uuid::parse_str(&id_of(&d)).is_ok());
    assert_key(&d["preshared_key"]);
    assert_key(&d["server_public_key"]);
    assert_assigned(&d);
    assert_timestamp(&d["inserted_at"]);
    assert_eq!(d["inserted_at"], d["updated_at"]);
    assert_eq!(app.show_device(&id_of(&d)).await, d, "read back the same");
}

#[tokio::test]
async fn generated_values_differ_per_device_but_the_server_key_does_not() {
    let app = TestApp::with_settings(|s| s.max_devices_per_user = 30).await;
    let devices: Vec<Value> = {
        let mut all = Vec::new();
        for _ in 0..25 {
            all.push(app.device(&app.admin_id).await);
        }
        all
    };
    for field in ["id", "name", "preshared_key", "ipv4", "ipv6", "public_key"] {
        let distinct: HashSet<&str> = devices.iter().map(|d| d[field].as_str().unwrap()).collect();
        assert_eq!(distinct.len(), devices.len(), "{field} repeats");
    }
    for d in &devices {
        assert_eq!(d["server_public_key"], app.domain.server_public_key());
        let name = d["name"].as_str().unwrap();
        let parts: Vec<&str> = name.split('-').collect();
        let words = parts.iter().take(2).all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_lowercase()));
        assert!((2..=3).contains(&parts.len()) && words && name.len() <= 32, "adjective-noun: {name}");
        assert_assigned(d);
    }
    let listed = app.list("/v0/devices").await;
    assert!(listed.iter().all(|d| d["server_public_key"] == app.domain.server_public_key()));
}

/// Firezone's `@params`: every `use_default_*` off and a value for each, echoed back.
#[tokio::test]
async fn firezones_params_are_echoed_for_any_owner() {
    let app = TestApp::new().await;
    let (unprivileged, _) = app.user("unprivileged@example.com", "unprivileged").await;
    let (other_admin, _) = app.user("other-admin@example.com", "admin").await;
    for (i, owner) in [unprivileged, app.admin_id.clone(), other_admin].iter().enumerate() {
        let shared_key = key();
        let params = json!({
            "user_id": owner, "name": format!("device-{i}"), "description": "a test device",
            "public_key": shared_key, "preshared_key": shared_key,
            "use_default_allowed_ips": false, "use_default_dns": false, "use_default_endpoint": false,
            "use_default_mtu": false, "use_default_persistent_keepalive": false,
            "endpoint": "9.9.9.9", "mtu": 999, "persistent_keepalive": 9,
            "allowed_ips": ["0.0.0.0/0", "::/0", "1.1.1.1"], "dns": ["9.9.9.8"],
            "ipv4": format!("10.3.2.{}", i + 2), "ipv6": format!("fd00::3:2:{}", i + 2),
        });
        let res = app.create_device(params.clone()).await;
        let data = res.expect_status(StatusCode::CREATED).data().clone();
        for (field, value) in params.as_object().unwrap() {
            assert_eq!(&data[field], value, "{field}");
        }
        assert_eq!(app.show_device(&id_of(&data)).await, data);
    }
}

#[tokio::test]
async fn responses_show_the_servers_configured_defaults() {
    let app = TestApp::with_settings(|s| {
        s.configuration.default_client_allowed_ips = vec!["10.0.0.0/8".into()];
        s.configuration.default_client_dns = vec!["dns.example.com".into()];
        s.configuration.default_client_endpoint = "vpn.example.com:443".into();
        s.configuration.default_client_mtu = Some(1420);
        s.configuration.default_client_persistent_keepalive = Some(0);
    })
    .await;
    let d = app.device(&app.admin_id).await;
    let shown = json!([d["allowed_ips"], d["dns"], d["endpoint"], d["mtu"], d["persistent_keepalive"]]);
    assert_eq!(shown, json!([["10.0.0.0/8"], ["dns.example.com"], "vpn.example.com:443", 1420, 0]));
}

#[tokio::test]
async fn values_are_trimmed_and_addresses_canonical() {
    let app = TestApp::new().await;
    let public_key = key();
    let attrs = json!({
        "public_key": format!("  {public_key} "), "name": "  laptop\t", "description": "  mine  ",
        "ipv4": " 10.3.2.77 ", "ipv6": "FD00:0:0:0:0:3:2:4D",
        "use_default_endpoint": false, "endpoint": " vpn.example.com:1 ",
        "use_default_dns": false, "dns": [" 9.9.9.9 "],
    });
    let d = app.device_with(&app.admin_id, attrs).await;
    let shown = json!([d["public_key"], d["name"], d["description"], d["ipv4"], d["ipv6"], d["endpoint"], d["dns"]]);
    assert_eq!(
        shown,
        json!([public_key, "laptop", "mine", "10.3.2.77", "fd00::3:2:4d", "vpn.example.com:1", ["9.9.9.9"]])
    );
}

#[tokio::test]
async fn a_disabled_address_family_gives_null_addresses() {
    for (family, address) in [("ipv6", "fd00::3:2:5"), ("ipv4", "10.3.2.5")] {
        let app =
            TestApp::with_settings(|s| if family == "ipv4" { s.pools.v4 = None } else { s.pools.v6 = None }).await;
        let d = app.device(&app.admin_id).await;
        assert_eq!(d[family], Value::Null, "{family}");
        let other = if family == "ipv4" { "ipv6" } else { "ipv4" };
        assert!(d[other].is_string(), "{other} is still assigned");
        let res = app.create_device(json!({"user_id": app.admin_id, "public_key": key(), family: address})).await;
        res.expect_errors(json!({ family: ["is invalid"] }));
    }
    let app = TestApp::with_settings(|s| s.pools = Default::default()).await;
    let d = app.device(&app.admin_id).await;
    assert_eq!((&d["ipv4"], &d["ipv6"]), (&Value::Null, &Value::Null));
}

#[tokio::test]
async fn delete_answers_204_then_404() {
    let app = TestApp::new().await;
    let kept = app.device(&app.admin_id).await;
    let path = format!("/v0/devices/{}", id_of(&app.device(&app.admin_id).await));
    app.delete(&path, &app.admin).await.expect_status(StatusCode::NO_CONTENT);
    expect_not_found_everywhere(&app, &path, "device").await;
    assert_eq!(app.list("/v0/devices").await, [kept]);
}

#[tokio::test]
async fn unknown_and_malformed_ids_are_404() {
    let app = TestApp::new().await;
    let d = app.device(&app.admin_id).await;
    let id = id_of(&d);
    for bad in [
        "6f1c2b9e-3d4a-4c5b-9e8f-0a1b2c3d4e5f",
        "not-a-uuid",
        "123",
        &format!("{id}0"),
        &id[..35],
        "%00",
        "%FF",
        "admin@localhost",
    ] {
        expect_not_found_everywhere(&app, &format!("/v0/devices/{bad}"), "device").await;
    }
    assert_eq!(app.show_device(&id).await, d);
}

#[tokio::test]
async fn preshared_keys_are_stored_encrypted() {
    let app = TestApp::new().await;
    let psk = key();
    let device = app.device_with(&app.admin_id, json!({"preshared_key": psk})).await;
    let stored = app.store.device_by_id(id_of(&device).parse().unwrap()).await.unwrap().unwrap();
    let raw = STANDARD.decode(&psk).unwrap();
    let sealed = &stored.preshared_key.0;
    assert!(!sealed.windows(psk.len()).any(|w| w == psk.as_bytes()), "the base64 text is not stored");
    assert!(!sealed.windows(raw.len()).any(|w| w == raw.as_slice()), "the key bytes are not stored");
    assert_eq!(app.domain.reveal(&stored.preshared_key).unwrap(), psk);
}
