//! What the data plane reads (active peers) and writes (statistics).

use std::collections::BTreeSet;

use ferrozone_domain::model::{ActivePeer, Role, StatsReport};
use ferrozone_domain::vpn_session::{VpnSession, ONCE};
use ferrozone_domain::Timestamp;
use uuid::Uuid;

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

    let peers = db.store.active_peers(VpnSession::new(0, Timestamp::now())).await.unwrap();
    let expected = ActivePeer {
        user_id: alice.id,
        public_key: alices.public_key.clone(),
        preshared_key: alices.preshared_key.clone(),
        ipv4: alices.ipv4,
        ipv6: alices.ipv6,
    };
    assert_eq!(peers, vec![expected]);
    assert_eq!(cipher().open_str(&peers[0].preshared_key).unwrap(), "psk");
}

/// The owners of the active devices with sessions of `duration` seconds, as of `now`.
async fn active_owners(db: &ferrozone_store::testing::TestDb, duration: i64, now: Timestamp) -> BTreeSet<Uuid> {
    let peers = db.store.active_peers(VpnSession::new(duration, now)).await.unwrap();
    peers.into_iter().map(|p| p.user_id).collect()
}

#[tokio::test]
async fn an_expired_vpn_session_leaves_the_devices_of_its_user_inactive() {
    let db = db().await;
    let now = Timestamp::now();
    let mut users = Vec::new();
    // Signed in a minute ago, two days ago, never; and one signed in recently but disabled.
    for (email, signed_in) in [
        ("recent@example.com", Some(now.plus_secs(-60))),
        ("long-ago@example.com", Some(now.plus_secs(-2 * 86_400))),
        ("never@example.com", None),
        ("disabled@example.com", Some(now.plus_secs(-60))),
    ] {
        let user = add_user(&db, email, Role::Unprivileged).await;
        if let Some(at) = signed_in {
            db.store.record_sign_in(user.id, "password", at).await.unwrap();
        }
        db.store.insert_device(&new_device(user.id), &pools(), 10).await.unwrap();
        users.push(user.id);
    }
    let disabled = ferrozone_domain::model::UserUpdate { disabled: Some(true), ..Default::default() };
    db.store.update_user(users[3], &disabled, now).await.unwrap();
    let [recent, long_ago, never, _] = users[..] else { unreachable!() };

    let hour = active_owners(&db, 3600, now).await;
    assert_eq!(hour, BTreeSet::from([recent, never]), "an hour: the old sign-in expired");
    let week = active_owners(&db, 7 * 86_400, now).await;
    assert_eq!(week, BTreeSet::from([recent, long_ago, never]), "a week: none expired");
    for unlimited in [0, ONCE] {
        let all = active_owners(&db, unlimited, now).await;
        assert_eq!(all, BTreeSet::from([recent, long_ago, never]), "{unlimited} never expires");
    }
    // The boundary: a session of exactly the time since the sign-in has just ended.
    assert_eq!(active_owners(&db, 60, now).await, BTreeSet::from([never]));
    assert_eq!(active_owners(&db, 61, now).await, BTreeSet::from([recent, never]));
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
