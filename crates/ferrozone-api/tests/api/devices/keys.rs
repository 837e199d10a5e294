//! Server-generated key pairs: a create without `public_key` gets one, and its private key
//! is shown in that 201 alone.

use axum::http::StatusCode;
use ferrozone_domain::crypto::public_key_of;
use serde_json::{json, Value};

use super::{assert_key, id_of, DEVICE_FIELDS};
use crate::helpers::{key, keys, sorted, TestApp};

/// Creates a device for the admin with `attrs` (no `public_key` unless given); returns the
/// 201's `data`.
async fn create(app: &TestApp, attrs: Value) -> Value {
    let mut attrs = attrs;
    attrs["user_id"] = json!(app.admin_id);
    let res = app.create_device(attrs).await;
    res.expect_status(StatusCode::CREATED);
    res.data().clone()
}

#[tokio::test]
async fn a_device_without_a_public_key_gets_a_generated_pair() {
    let app = TestApp::new().await;
    for attrs in [json!({}), json!({"public_key": null}), json!({"public_key": ""}), json!({"public_key": "  "})] {
        let d = create(&app, attrs.clone()).await;
        let mut fields = DEVICE_FIELDS.to_vec();
        fields.push("private_key");
        assert_eq!(keys(&d), sorted(&fields), "{attrs}");
        assert_key(&d["private_key"]);
        assert_key(&d["public_key"]);
        let private_key = d["private_key"].as_str().unwrap();
        assert_eq!(public_key_of(private_key).as_deref(), d["public_key"].as_str(), "a matching pair");

        let stored = app.store.device_by_id(id_of(&d).parse().unwrap()).await.unwrap().unwrap();
        assert_eq!(stored.public_key, d["public_key"].as_str().unwrap(), "the public key is stored");
        let shown = app.show_device(&id_of(&d)).await;
        assert_eq!(shown.get("private_key"), None, "never shown again");
        let mut without_private = d.clone();
        without_private.as_object_mut().unwrap().remove("private_key");
        assert_eq!(shown, without_private);
    }
}

#[tokio::test]
async fn the_private_key_appears_nowhere_but_in_the_201() {
    let app = TestApp::new().await;
    let d = create(&app, json!({})).await;
    let private_key = d["private_key"].as_str().unwrap().to_owned();
    let path = format!("/v0/devices/{}", id_of(&d));
    let mut bodies = vec![
        app.get(&path, &app.admin).await,
        app.get("/v0/devices", &app.admin).await,
        app.get("/v0/devices?limit=10", &app.admin).await,
        app.patch(&path, &app.admin, json!({"device": {"name": "renamed"}})).await,
        app.put(&path, &app.admin, json!({"device": {"description": "mine"}})).await,
    ];
    bodies.push(app.get(&format!("{path}/config"), &app.admin).await);
    for res in &bodies {
        assert!(res.status.is_success(), "{}", res.status);
        let text = String::from_utf8_lossy(&res.raw);
        assert!(!text.contains("private_key") && !text.contains(&private_key), "{text}");
    }
    let config = String::from_utf8(bodies.pop().unwrap().raw).unwrap();
    assert!(config.contains("PrivateKey = <PRIVATE_KEY>\n"), "{config}");
    assert!(config.contains(&format!("PresharedKey = {}\n", d["preshared_key"].as_str().unwrap())), "{config}");
}

#[tokio::test]
async fn a_given_public_key_gets_no_private_key_and_bad_ones_are_still_invalid() {
    let app = TestApp::new().await;
    let given = key();
    let d = create(&app, json!({"public_key": given})).await;
    assert_eq!((d.get("private_key"), &d["public_key"]), (None, &json!(given)));
    for bad in [json!("short"), json!(7), json!(given)] {
        let res = app.create_device(json!({"user_id": app.admin_id, "public_key": bad})).await;
        let message = if bad == json!(given) {
            "has already been taken"
        } else if bad.is_string() {
            "must be a base64-encoded 32-byte key"
        } else {
            "is invalid"
        };
        res.expect_errors(json!({"public_key": [message]}));
    }
    // On update a blank key is still an error: the stored pair is not replaced.
    let path = format!("/v0/devices/{}", id_of(&d));
    for blank in [json!(null), json!("")] {
        let res = app.patch(&path, &app.admin, json!({"device": {"public_key": blank}})).await;
        res.expect_errors(json!({"public_key": ["can't be blank"]}));
    }
}

#[tokio::test]
async fn unprivileged_owners_get_generated_keys_too() {
    let app = TestApp::new().await;
    let (me, token) = app.user("me@example.com", "unprivileged").await;
    let res = app.post("/v0/devices", &token, json!({"device": {}})).await;
    let d = res.expect_status(StatusCode::CREATED).data().clone();
    assert_eq!(d["user_id"], json!(me));
    assert_eq!(public_key_of(d["private_key"].as_str().unwrap()).as_deref(), d["public_key"].as_str());
    let config = app.get(&format!("/v0/devices/{}/config", id_of(&d)), &token).await;
    config.expect_status(StatusCode::OK);
}

/// Issue 16: a device whose public key is the server's own would be a peer of the server
/// itself; it is refused on create and on update, for admins and users alike.
#[tokio::test]
async fn the_servers_own_public_key_is_refused() {
    let app = TestApp::new().await;
    let (me, token) = app.user("me@example.com", "unprivileged").await;
    let server_key = app.domain.server_public_key().to_owned();
    let refused = json!({"public_key": ["is the server's own public key"]});
    for (caller, owner) in [(&app.admin, &app.admin_id), (&token, &me)] {
        for given in [server_key.clone(), format!("  {server_key} ")] {
            let attrs = json!({"device": {"user_id": owner, "public_key": given}});
            app.post("/v0/devices", caller, attrs).await.expect_errors(refused.clone());
        }
        let device = app.device(owner).await;
        assert_eq!(device["server_public_key"], json!(server_key), "the key the API shows is the one refused");
        let path = format!("/v0/devices/{}", id_of(&device));
        for method in ["PATCH", "PUT"] {
            let body = json!({"device": {"public_key": server_key}});
            let res = app.request(method.parse().unwrap(), &path, Some(caller), Some(body)).await;
            res.expect_errors(refused.clone());
        }
        assert_eq!(app.show_device(&id_of(&device)).await, device, "unchanged");
    }
    assert_eq!(app.list("/v0/devices").await.len(), 2, "only the two devices with keys of their own");
}
