//! A `kill -9` during a stream of creates loses none that were answered 201.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use crate::harness::{Api, Server};

/// Settings that let one user hold many devices.
pub fn roomy_env(url: &str) -> Vec<(&'static str, String)> {
    vec![
        ("FERROZONE_DATABASE_URL", url.to_owned()),
        ("FERROZONE_MAX_DEVICES_PER_USER", "100000".into()),
        ("FERROZONE_WIREGUARD_IPV4_NETWORK", "10.0.0.0/16".into()),
        ("FERROZONE_WIREGUARD_IPV4_ADDRESS", "10.0.0.1".into()),
        ("FERROZONE_WIREGUARD_IPV6_NETWORK", "fd00::/112".into()),
        ("FERROZONE_WIREGUARD_IPV6_ADDRESS", "fd00::1".into()),
    ]
}

pub fn as_refs<'a>(env: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    env.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_loses_no_acknowledged_create() {
    let db = ferrozone_store::testing::fresh().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let env = roomy_env(&db.url);
    let server = Server::start(dir.path(), &as_refs(&env)).await;
    let api = Api::new(&server.base, &server.printed_token().unwrap());
    let admin = api.admin_id().await;

    let acked = Arc::new(Mutex::new(Vec::new()));
    let (count_tx, mut count_rx) = watch::channel(0usize);
    let mut writers = Vec::new();
    for _ in 0..4 {
        let (api, admin, acked, count_tx) = (api.clone(), admin.clone(), acked.clone(), count_tx.clone());
        writers.push(tokio::spawn(async move {
            // Until the server dies: every 201 is recorded before the next request.
            while let Ok(result) = api.create_device(&admin).await {
                let (id, _) = result.unwrap_or_else(|status| panic!("create answered {status}"));
                let mut ids = acked.lock().unwrap();
                ids.push(id);
                count_tx.send_replace(ids.len());
            }
        }));
    }
    count_rx.wait_for(|n| *n >= 150).await.unwrap();
    server.kill();
    for w in writers {
        w.await.unwrap();
    }

    let restarted = Server::start(dir.path(), &as_refs(&env)).await;
    let api = Api::new(&restarted.base, &api.token);
    let (status, body) = api.get("/v0/devices").await;
    assert_eq!(status, 200);
    let stored: HashSet<&str> = body["data"].as_array().unwrap().iter().map(|d| d["id"].as_str().unwrap()).collect();
    let acked = acked.lock().unwrap();
    assert!(acked.len() >= 150);
    let lost: Vec<_> = acked.iter().filter(|id| !stored.contains(id.as_str())).collect();
    assert!(lost.is_empty(), "{} acknowledged creates lost after kill -9: {lost:?}", lost.len());
}
