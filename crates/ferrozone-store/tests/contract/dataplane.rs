//! What the data plane reads (active peers) and writes (statistics).

use ferrozone_domain::model::{ActivePeer, Role, StatsReport};
use ferrozone_domain::Timestamp;

use crate::support::{add_user, cipher, db, new_device, pools, user};

#[tokio::test]
async fn active_peers_are_the_devices_of_users_who_are_not_disabled() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let mut bob = user("bob@example.com", Role::Unprivileged);
    bob.disabled_at = Some(Timestamp::now());
    db.store.insert_user(&bob).await.unwrap();
    let alices = db.store.insert_device(&new_device(alice.id), &pools(), 10).await.unwrap();
    db.store.insert_device(&new_device(bob.id), &pools(), 10).await.unwrap();

    let peers = db.store.active_peers().await.unwrap();
    let expected = ActivePeer {
        public_key: alices.public_key.clone(),
        preshared_key: alices.preshared_key.clone(),
        ipv4: alices.ipv4,
        ipv6: alices.ipv6,
    };
    assert_eq!(peers, vec![expected]);
    assert_eq!(cipher().open_str(&peers[0].preshared_key).unwrap(), "psk");
}

#[tokio::test]
async fn statistics_are_written_unless_a_newer_handshake_is_stored() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let device = db.store.insert_device(&new_device(alice.id), &pools(), 10).await.unwrap();
    let other = db.store.insert_device(&new_device(alice.id), &pools(), 10).await.unwrap();
    let t0 = Timestamp::now();
    let report = |at: Timestamp, rx: i64| StatsReport {
        public_key: device.public_key.clone(),
        latest_handshake: at,
        remote_ip: Some("192.0.2.7".into()),
        rx_bytes: rx,
        tx_bytes: rx * 2,
    };
    let unknown = StatsReport { public_key: "unknown".into(), ..report(t0, 1) };
    db.store.record_stats(&[report(t0.plus_secs(10), 100), unknown]).await.unwrap();

    let stored = db.store.device_by_id(device.id).await.unwrap().unwrap();
    assert_eq!(stored.stats.latest_handshake, Some(t0.plus_secs(10)));
    assert_eq!(stored.stats.remote_ip.as_deref(), Some("192.0.2.7"));
    assert_eq!((stored.stats.rx_bytes, stored.stats.tx_bytes), (Some(100), Some(200)));
    assert_eq!(stored.updated_at, device.updated_at, "statistics are not an edit");
    assert_eq!(db.store.device_by_id(other.id).await.unwrap().unwrap().stats, Default::default());

    // Another gateway's older handshake loses; a newer one wins.
    db.store.record_stats(&[report(t0, 5)]).await.unwrap();
    assert_eq!(db.store.device_by_id(device.id).await.unwrap().unwrap().stats.rx_bytes, Some(100));
    db.store.record_stats(&[report(t0.plus_secs(20), 7)]).await.unwrap();
    assert_eq!(db.store.device_by_id(device.id).await.unwrap().unwrap().stats.rx_bytes, Some(7));
    db.store.record_stats(&[]).await.unwrap();
}

#[tokio::test]
async fn another_process_committing_a_peer_change_is_noticed() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    // A second store on the same database stands for another process.
    let other = ferrozone_store::open(&db.url, &ferrozone_store::StoreOptions::default()).await.unwrap().into_store();
    let changed = std::sync::Arc::new(tokio::sync::Notify::new());
    let watcher = {
        let (store, changed) = (db.store.clone(), changed.clone());
        tokio::spawn(async move { store.watch_peer_changes(changed).await })
    };
    // The watcher may start listening after the first insert: keep committing until it
    // hears one (a deadline, not a timing assertion).
    let heard = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        loop {
            other.insert_device(&new_device(alice.id), &pools(), 100).await.unwrap();
            if tokio::time::timeout(std::time::Duration::from_millis(500), changed.notified()).await.is_ok() {
                break;
            }
        }
    });
    heard.await.expect("a change committed by another store was not noticed");
    watcher.abort();
}
