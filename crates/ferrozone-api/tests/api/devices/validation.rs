//! The validation table of docs/api.md section 5, on create.

use axum::http::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{key, merge, without, TestApp};

const KEY_FORMAT: &str = "must be a base64-encoded 32-byte key";
const BLANK: &str = "can't be blank";
const INVALID: &str = "is invalid";
const NOT_PRESENT: &str = "must not be present";
const DUPLICATES: &str = "should not contain duplicates";

/// A valid create body for the admin, with `attrs` on top.
fn body(app: &TestApp, attrs: &Value) -> Value {
    merge(json!({"user_id": app.admin_id, "public_key": key()}), attrs.clone())
}

/// Sends each case and expects exactly its errors; then checks nothing was created.
async fn expect_rejected(app: &TestApp, cases: &[(Value, Value)]) {
    for (attrs, errors) in cases {
        let res = app.create_device(body(app, attrs)).await;
        assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY, "{attrs}: {}", res.body);
        assert_eq!(sorted_messages(&res.body["errors"]), sorted_messages(errors), "{attrs}");
    }
    assert!(app.list("/v0/devices").await.is_empty(), "no partial write");
}

/// Sends each case and expects a 201 whose data has the given values.
async fn expect_accepted(app: &TestApp, cases: &[(Value, Value)]) {
    for (attrs, shown) in cases {
        let res = app.create_device(body(app, attrs)).await;
        assert_eq!(res.status, StatusCode::CREATED, "{attrs}: {}", res.body);
        for (field, value) in shown.as_object().unwrap() {
            assert_eq!(&res.data()[field], value, "{attrs}: {field}");
        }
        app.delete(&format!("/v0/devices/{}", res.id()), &app.admin).await.expect_status(StatusCode::NO_CONTENT);
    }
}

/// `errors` with each message list sorted: docs/api.md does not fix the order of messages.
fn sorted_messages(errors: &Value) -> Value {
    assert!(errors.is_object(), "no errors object: {errors}");
    let mut errors = errors.clone();
    for messages in errors.as_object_mut().unwrap().values_mut() {
        let list = messages.as_array_mut().expect("a list of messages");
        list.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
    }
    errors
}

fn e(field: &str, messages: &[&str]) -> Value {
    json!({ field: messages })
}

#[tokio::test]
async fn user_id_is_required_and_must_exist() {
    let app = TestApp::new().await;
    for body in [
        without(json!({"public_key": key()}), "user_id"),
        json!({"public_key": key(), "user_id": null}),
        json!({"public_key": key(), "user_id": " "}),
    ] {
        app.create_device(body).await.expect_errors(e("user_id", &[BLANK]));
    }
    for unknown in ["6f1c2b9e-3d4a-4c5b-9e8f-0a1b2c3d4e5f", "not-a-uuid"] {
        let res = app.create_device(json!({"public_key": key(), "user_id": unknown})).await;
        res.expect_errors(e("user_id", &["does not exist"]));
    }
    let res = app.create_device(json!({"public_key": key(), "user_id": 7})).await;
    res.expect_errors(e("user_id", &[INVALID]));
    assert!(app.list("/v0/devices").await.is_empty());
}

#[tokio::test]
async fn keys_must_be_base64_of_32_bytes() {
    let app = TestApp::new().await;
    let k = key();
    let bad_keys = [
        json!("short"),
        json!("!".repeat(44)),
        json!("A".repeat(44)),
        json!(k.trim_end_matches('=')),
        json!(format!("{k}{k}")),
        json!(k.replace('=', "A")),
        json!(format!("{}-_{}", &k[..2], &k[4..])),
    ];
    let mut cases = vec![];
    for field in ["public_key", "preshared_key"] {
        for bad in &bad_keys {
            cases.push((json!({ field: bad }), e(field, &[KEY_FORMAT])));
        }
        cases.push((json!({ field: 42 }), e(field, &[INVALID])));
        cases.push((json!({ field: [k] }), e(field, &[INVALID])));
    }
    expect_rejected(&app, &cases).await;
    let psk = key();
    let accepted = [
        (json!({"preshared_key": psk}), json!({"preshared_key": psk})),
        (json!({"preshared_key": null}), json!({})),
        (json!({"preshared_key": ""}), json!({})),
    ];
    expect_accepted(&app, &accepted).await;
}

#[tokio::test]
async fn name_and_description_lengths() {
    let app = TestApp::new().await;
    let cases = [
        (json!({"name": "n".repeat(256)}), e("name", &["should be at most 255 character(s)"])),
        (json!({"name": "é".repeat(256)}), e("name", &["should be at most 255 character(s)"])),
        (json!({"name": 5}), e("name", &[INVALID])),
        (json!({"description": "d".repeat(2049)}), e("description", &["should be at most 2048 character(s)"])),
        (json!({"description": ["x"]}), e("description", &[INVALID])),
    ];
    expect_rejected(&app, &cases).await;
    let accepted = [
        (json!({"name": "n".repeat(255)}), json!({"name": "n".repeat(255)})),
        (json!({"name": "é".repeat(255)}), json!({"name": "é".repeat(255)})),
        (json!({"name": "x"}), json!({"name": "x"})),
        (json!({"description": "d".repeat(2048)}), json!({"description": "d".repeat(2048)})),
        (json!({"description": "   "}), json!({"description": null})),
        (json!({"description": null}), json!({"description": null})),
    ];
    expect_accepted(&app, &accepted).await;
    for blank in [json!(null), json!(""), json!("   ")] {
        let d = app.device_with(&app.admin_id, json!({ "name": blank })).await;
        assert!(d["name"].as_str().is_some_and(|n| n.contains('-')), "generated: {}", d["name"]);
    }
}

#[tokio::test]
async fn use_default_switches_are_strict_booleans() {
    let app = TestApp::new().await;
    let mut cases = vec![];
    for setting in ["allowed_ips", "dns", "endpoint", "mtu", "persistent_keepalive"] {
        let switch = format!("use_default_{setting}");
        for bad in [json!(null), json!("true"), json!(1), json!(0), json!([]), json!({})] {
            cases.push((json!({ switch.clone(): bad }), e(&switch, &[INVALID])));
        }
    }
    expect_rejected(&app, &cases).await;
}

#[tokio::test]
async fn settings_must_not_be_present_while_their_default_is_used() {
    let app = TestApp::new().await;
    let values = json!({"allowed_ips": ["10.0.0.0/8"], "dns": ["1.1.1.1"], "endpoint": "vpn:1", "mtu": 1400,
        "persistent_keepalive": 5});
    let mut cases = vec![];
    for (setting, value) in values.as_object().unwrap() {
        cases.push((json!({ setting.clone(): value }), e(setting, &[NOT_PRESENT])));
        cases.push((
            json!({ setting.clone(): value, format!("use_default_{setting}"): true }),
            e(setting, &[NOT_PRESENT]),
        ));
    }
    cases.push((json!({"mtu": 0}), e("mtu", &[NOT_PRESENT, "must be greater than or equal to 576"])));
    cases.push((json!({"dns": ["1.1.1.1", "1.1.1.1"]}), e("dns", &[NOT_PRESENT, DUPLICATES])));
    let all: serde_json::Map<String, Value> =
        values.as_object().unwrap().keys().map(|k| (k.clone(), json!([NOT_PRESENT]))).collect();
    cases.push((values.clone(), Value::Object(all)));
    expect_rejected(&app, &cases).await;
    // Empty values are not "present"; the defaults are shown.
    let empty = json!({"allowed_ips": [], "dns": [], "endpoint": "", "mtu": null, "persistent_keepalive": null});
    let shown = json!({"allowed_ips": ["0.0.0.0/0", "::/0"], "dns": ["1.1.1.1", "1.0.0.1"],
        "endpoint": "localhost:51820", "mtu": 1280, "persistent_keepalive": 25});
    expect_accepted(&app, &[(empty, shown)]).await;
}

/// `attrs` with the matching `use_default_*` switched off.
fn custom(setting: &str, value: Value) -> Value {
    json!({ format!("use_default_{setting}"): false, setting: value })
}

#[tokio::test]
async fn custom_endpoints() {
    let app = TestApp::new().await;
    let mut cases = vec![(json!({"use_default_endpoint": false}), e("endpoint", &[BLANK]))];
    for blank in [json!(null), json!(""), json!("  ")] {
        cases.push((custom("endpoint", blank), e("endpoint", &[BLANK])));
    }
    for bad in [
        "bad host",
        "host:0",
        "host:65536",
        "host:",
        ":80",
        "http://vpn.example.com",
        "[zz]:80",
        "[fd00::1]:0",
        "vpn:8o",
        "1.2.3.4:99999",
    ] {
        cases.push((custom("endpoint", json!(bad)), e("endpoint", &[INVALID])));
    }
    cases.push((custom("endpoint", json!(51820)), e("endpoint", &[INVALID])));
    expect_rejected(&app, &cases).await;
    let good = [
        "9.9.9.9",
        "1.2.3.4:51820",
        "[fd00::1]:8080",
        "fd00::1",
        "vpn.example.com",
        "vpn.example.com:1",
        "localhost:65535",
        "under_score-host",
    ];
    let accepted: Vec<_> = good
        .iter()
        .map(|g| (custom("endpoint", json!(g)), json!({"endpoint": g, "use_default_endpoint": false})))
        .collect();
    expect_accepted(&app, &accepted).await;
}

#[tokio::test]
async fn custom_allowed_ips_and_dns() {
    let app = TestApp::new().await;
    let mut cases = vec![];
    for bad in [
        json!("0.0.0.0/0"),
        json!(["10.0.0.0/33"]),
        json!(["::/129"]),
        json!(["10.0.0.0/"]),
        json!(["x"]),
        json!([5]),
        json!([["1.1.1.1"]]),
        json!({"a": 1}),
        json!(["1.1.1.1:53"]),
    ] {
        cases.push((custom("allowed_ips", bad), e("allowed_ips", &[INVALID])));
    }
    for dup in [json!(["1.1.1.1", "1.1.1.1"]), json!(["10.0.0.0/8", " 10.0.0.0/8 "]), json!(["::/0", "0:0::/0"])] {
        cases.push((custom("allowed_ips", dup), e("allowed_ips", &[DUPLICATES])));
    }
    for bad in [
        json!("1.1.1.1"),
        json!(["1.1.1.1:53"]),
        json!(["a b"]),
        json!([1]),
        json!(["10.0.0.0/8"]),
        json!([null]),
        json!(["[::1]:53"]),
    ] {
        cases.push((custom("dns", bad), e("dns", &[INVALID])));
    }
    for dup in [json!(["1.1.1.1", "1.1.1.1"]), json!(["DNS.example.com", "dns.example.com"])] {
        cases.push((custom("dns", dup), e("dns", &[DUPLICATES])));
    }
    expect_rejected(&app, &cases).await;
    let accepted = [
        (
            custom("allowed_ips", json!(["1.1.1.1", "10.0.0.0/8", "::/0", "fd00::/64", "0.0.0.0/32"])),
            json!({"allowed_ips": ["1.1.1.1", "10.0.0.0/8", "::/0", "fd00::/64", "0.0.0.0/32"]}),
        ),
        (custom("allowed_ips", json!([])), json!({"allowed_ips": [], "use_default_allowed_ips": false})),
        (
            custom("dns", json!(["9.9.9.9", "2606:4700::1111", "dns.example.com"])),
            json!({"dns": ["9.9.9.9", "2606:4700::1111", "dns.example.com"]}),
        ),
        (custom("dns", json!([])), json!({"dns": [], "use_default_dns": false})),
    ];
    expect_accepted(&app, &accepted).await;
}

#[tokio::test]
async fn custom_mtu_and_keepalive_ranges() {
    let app = TestApp::new().await;
    let ge = |n: i32| format!("must be greater than or equal to {n}");
    let le = |n: i32| format!("must be less than or equal to {n}");
    let mut cases = vec![
        (custom("mtu", json!(575)), e("mtu", &[&ge(576)])),
        (custom("mtu", json!(-1)), e("mtu", &[&ge(576)])),
        (custom("mtu", json!(1501)), e("mtu", &[&le(1500)])),
        (custom("mtu", json!(i64::MAX)), e("mtu", &[&le(1500)])),
        (custom("persistent_keepalive", json!(-1)), e("persistent_keepalive", &[&ge(0)])),
        (custom("persistent_keepalive", json!(121)), e("persistent_keepalive", &[&le(120)])),
        (custom("persistent_keepalive", json!(i64::MIN)), e("persistent_keepalive", &[&ge(0)])),
    ];
    for setting in ["mtu", "persistent_keepalive"] {
        for bad in [json!("1280"), json!(1280.5), json!(1e300), json!(u64::MAX), json!(true), json!([1280]), json!({})]
        {
            cases.push((custom(setting, bad), e(setting, &[INVALID])));
        }
    }
    expect_rejected(&app, &cases).await;
    let accepted: Vec<_> = [("mtu", 576), ("mtu", 1500), ("persistent_keepalive", 0), ("persistent_keepalive", 120)]
        .into_iter()
        .map(|(setting, n)| (custom(setting, json!(n)), json!({ setting: n })))
        .collect();
    expect_accepted(&app, &accepted).await;
}

#[tokio::test]
async fn several_invalid_attributes_are_reported_together() {
    let app = TestApp::new().await;
    let attrs = json!({
        "public_key": "x", "dns": ["1.1.1.1", "1.1.1.1"], "mtu": 100, "ipv4": "1.2.3.4", "ipv6": "10.0.0.1",
        "use_default_endpoint": false, "name": "n".repeat(300),
    });
    let errors = json!({
        "public_key": [KEY_FORMAT], "dns": [NOT_PRESENT, DUPLICATES],
        "mtu": [NOT_PRESENT, "must be greater than or equal to 576"], "ipv4": ["is not in the CIDR 10.3.2.0/24"],
        "ipv6": [INVALID], "endpoint": [BLANK], "name": ["should be at most 255 character(s)"],
    });
    expect_rejected(&app, &[(attrs, errors)]).await;
}
