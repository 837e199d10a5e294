//! Uniqueness, tunnel addresses, the device limit and pool exhaustion.

use std::collections::BTreeSet;

use axum::http::StatusCode;
use ferrozone_domain::ipam::Pool;
use ferrozone_domain::Settings;
use serde_json::{json, Value};

use super::{assert_assigned, id_of};
use crate::helpers::{key, merge, TestApp};

const TAKEN: &str = "has already been taken";
const LIMIT: &str = "Maximum device limit reached. Remove an existing device before creating a new one.";

#[tokio::test]
async fn public_keys_are_unique_across_all_devices() {
    let app = TestApp::new().await;
    let (other, _) = app.user("other@example.com", "unprivileged").await;
    let taken = app.device(&app.admin_id).await["public_key"].clone();
    for owner in [&app.admin_id, &other] {
        for public_key in [taken.clone(), json!(format!(" {} ", taken.as_str().unwrap()))] {
            let res = app.create_device(json!({"user_id": owner, "public_key": public_key})).await;
            res.expect_errors(json!({"public_key": [TAKEN]}));
        }
    }
    assert_eq!(app.list("/v0/devices").await.len(), 1);
}

#[tokio::test]
async fn names_are_unique_per_user() {
    let app = TestApp::new().await;
    let (other, _) = app.user("other@example.com", "unprivileged").await;
    app.device_with(&app.admin_id, json!({"name": "laptop"})).await;
    for name in ["laptop", "  laptop  "] {
        let res = app.create_device(json!({"user_id": app.admin_id, "public_key": key(), "name": name})).await;
        res.expect_errors(json!({"name": [TAKEN]}));
    }
    let d = app.device_with(&other, json!({"name": "laptop"})).await;
    assert_eq!(d["name"], "laptop", "another user may use the same name");
    assert_eq!(app.list("/v0/devices").await.len(), 2);
}

#[tokio::test]
async fn explicit_addresses_must_be_free_usable_and_inside_the_network() {
    let app = TestApp::new().await;
    let first = app.device_with(&app.admin_id, json!({"ipv4": "10.3.2.50", "ipv6": "fd00::3:2:50"})).await;
    let cases = [
        (json!({"ipv4": "10.3.2.50"}), json!({"ipv4": [TAKEN]})),
        (json!({"ipv6": "fd00::3:2:50"}), json!({"ipv6": [TAKEN]})),
        (json!({"ipv6": "FD00::3:2:50"}), json!({"ipv6": [TAKEN]})),
        (json!({"ipv4": "10.3.2.0"}), json!({"ipv4": ["is reserved"]})),
        (json!({"ipv4": "10.3.2.1"}), json!({"ipv4": ["is reserved"]})),
        (json!({"ipv4": "10.3.2.255"}), json!({"ipv4": ["is reserved"]})),
        (json!({"ipv6": "fd00::3:2:0"}), json!({"ipv6": ["is reserved"]})),
        (json!({"ipv6": "fd00::3:2:1"}), json!({"ipv6": ["is reserved"]})),
        (json!({"ipv6": "fd00::3:2:ff"}), json!({"ipv6": ["is reserved"]})),
        (json!({"ipv4": "10.3.3.5"}), json!({"ipv4": ["is not in the CIDR 10.3.2.0/24"]})),
        (json!({"ipv4": "192.168.0.1"}), json!({"ipv4": ["is not in the CIDR 10.3.2.0/24"]})),
        (json!({"ipv6": "fd00::3:3:5"}), json!({"ipv6": ["is not in the CIDR fd00::3:2:0/120"]})),
        (json!({"ipv4": "fd00::3:2:5"}), json!({"ipv4": ["is invalid"]})),
        (json!({"ipv6": "10.3.2.5"}), json!({"ipv6": ["is invalid"]})),
        (json!({"ipv4": "10.3.2.5/32"}), json!({"ipv4": ["is invalid"]})),
        (json!({"ipv4": "10.3.2.256"}), json!({"ipv4": ["is invalid"]})),
        (json!({"ipv4": 167_969_285}), json!({"ipv4": ["is invalid"]})),
        (
            json!({"ipv4": "10.3.2.0", "ipv6": "fd00::3:3:1"}),
            json!({"ipv4": ["is reserved"], "ipv6": ["is not in the CIDR fd00::3:2:0/120"]}),
        ),
    ];
    for (attrs, errors) in cases {
        let body = merge(json!({"user_id": app.admin_id, "public_key": key()}), attrs);
        app.create_device(body).await.expect_errors(errors);
    }
    assert_eq!(app.list("/v0/devices").await, std::slice::from_ref(&first));
    // Assignment skips the explicitly taken address; a deleted device's address is free again.
    let auto = app.device(&app.admin_id).await;
    assert_ne!(auto["ipv4"], first["ipv4"]);
    app.delete(&format!("/v0/devices/{}", id_of(&first)), &app.admin).await.expect_status(StatusCode::NO_CONTENT);
    let again = app.device_with(&app.admin_id, json!({"ipv4": "10.3.2.50", "ipv6": "fd00::3:2:50"})).await;
    assert_eq!((&again["ipv4"], &again["ipv6"]), (&first["ipv4"], &first["ipv6"]));
}

#[tokio::test]
async fn absent_null_and_blank_addresses_are_assigned() {
    let app = TestApp::new().await;
    for blank in [json!(null), json!(""), json!("  ")] {
        let d = app.device_with(&app.admin_id, json!({"ipv4": blank, "ipv6": blank})).await;
        assert_assigned(&d);
    }
}

#[tokio::test]
async fn the_device_limit_is_per_user() {
    let app = TestApp::with_settings(|s| s.max_devices_per_user = 2).await;
    let (other, _) = app.user("other@example.com", "unprivileged").await;
    let first = app.device(&app.admin_id).await;
    app.device(&app.admin_id).await;
    let res = app.create_device(json!({"user_id": app.admin_id, "public_key": key()})).await;
    res.expect_errors(json!({"base": [LIMIT]}));
    app.device(&other).await;
    app.device(&other).await;
    assert_eq!(app.list(&format!("/v0/devices?user_id={}", app.admin_id)).await.len(), 2);
    app.delete(&format!("/v0/devices/{}", id_of(&first)), &app.admin).await.expect_status(StatusCode::NO_CONTENT);
    app.device(&app.admin_id).await;

    let none = TestApp::with_settings(|s| s.max_devices_per_user = 0).await;
    let res = none.create_device(json!({"user_id": none.admin_id, "public_key": key()})).await;
    res.expect_errors(json!({"base": [LIMIT]}));
}

/// Settings whose only pool is `network` with gateway `gateway`.
fn only_pool(network: &str, gateway: &str, v4: bool) -> impl FnOnce(&mut Settings) {
    let pool = Pool::new(network.parse().unwrap(), gateway.parse().unwrap()).unwrap();
    move |s: &mut Settings| {
        s.pools.v4 = v4.then(|| pool.clone());
        s.pools.v6 = (!v4).then_some(pool);
    }
}

#[tokio::test]
async fn an_exhausted_network_is_reported_and_freed_addresses_are_reused() {
    let cases = [
        ("10.0.0.0/29", "10.0.0.1", true, &["10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6"]),
        ("fd00::/125", "fd00::1", false, &["fd00::2", "fd00::3", "fd00::4", "fd00::5", "fd00::6"]),
    ];
    for (network, gateway, v4, usable) in cases {
        let family = if v4 { "ipv4" } else { "ipv6" };
        let app = TestApp::with_settings(only_pool(network, gateway, v4)).await;
        let mut devices = Vec::new();
        for _ in 0..usable.len() {
            devices.push(app.device(&app.admin_id).await);
        }
        let got: BTreeSet<&str> = devices.iter().map(|d| d[family].as_str().unwrap()).collect();
        assert_eq!(got, usable.iter().copied().collect(), "{network}");
        let exhausted = json!({"base": [format!("CIDR {network} is exhausted")]});
        for _ in 0..2 {
            app.create_device(json!({"user_id": app.admin_id, "public_key": key()}))
                .await
                .expect_errors(exhausted.clone());
        }
        assert_eq!(app.list("/v0/devices").await.len(), usable.len(), "no partial write");

        let freed: &Value = &devices[2][family];
        app.delete(&format!("/v0/devices/{}", id_of(&devices[2])), &app.admin)
            .await
            .expect_status(StatusCode::NO_CONTENT);
        let reused = app.device(&app.admin_id).await;
        assert_eq!(&reused[family], freed, "{network}");
        app.create_device(json!({"user_id": app.admin_id, "public_key": key()})).await.expect_errors(exhausted);
    }
}
