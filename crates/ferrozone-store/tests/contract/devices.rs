//! Devices: round trip, list order and paging, uniqueness, owner, updates, deletes.

use std::net::Ipv4Addr;

use ferrozone_domain::model::{AddressRequest, CustomConfig, Device, DeviceUpdate, Role, UseDefaults};
use ferrozone_domain::store::DeviceQuery;
use ferrozone_domain::Timestamp;
use uuid::Uuid;

use crate::support::{add_user, assert_invalid, assert_not_found, cipher, db, new_device, pools};

const TAKEN: &str = "has already been taken";

fn update_of(device: &Device) -> DeviceUpdate {
    DeviceUpdate {
        name: device.name.clone(),
        description: device.description.clone(),
        public_key: device.public_key.clone(),
        preshared_key: None,
        ipv4: device.ipv4,
        ipv6: device.ipv6,
        use_default: device.use_default,
        custom: device.custom.clone(),
    }
}

#[tokio::test]
async fn a_device_round_trips_with_every_field() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let mut new = new_device(alice.id);
    new.description = Some("laptop".into());
    new.use_default =
        UseDefaults { allowed_ips: false, dns: false, endpoint: false, mtu: false, persistent_keepalive: false };
    new.custom = CustomConfig {
        allowed_ips: vec!["10.0.0.0/8".into(), "::/0".into()],
        dns: vec!["9.9.9.9".into(), "dns.example.com".into()],
        endpoint: Some("vpn.example.com:51820".into()),
        mtu: Some(1420),
        persistent_keepalive: Some(0),
    };
    new.ipv4 = AddressRequest::Given("10.3.2.77".parse().unwrap());
    new.ipv6 = AddressRequest::None;
    let device = db.store.insert_device(&new, &pools(), 10).await.unwrap();

    assert_eq!(device.ipv4, Some(Ipv4Addr::new(10, 3, 2, 77)));
    assert_eq!(device.ipv6, None);
    assert_eq!((device.inserted_at, device.updated_at), (new.now, new.now));
    assert_eq!(cipher().open_str(&device.preshared_key).unwrap(), "psk");
    assert_eq!(device.stats, Default::default());
    assert_eq!(db.store.device_by_id(device.id).await.unwrap(), Some(device.clone()));
    assert_eq!(db.store.device_by_id(Uuid::now_v7()).await.unwrap(), None);
    let listed = db.store.list_devices(&DeviceQuery::default()).await.unwrap();
    assert_eq!(listed, vec![device]);
}

#[tokio::test]
async fn lists_are_ordered_filtered_and_paged() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let bob = add_user(&db, "bob@example.com", Role::Unprivileged).await;
    let t0 = Timestamp::now();
    // Inserted out of order; two share an inserted_at and are ordered by id.
    let mut expected = Vec::new();
    for (owner, at) in [(bob.id, 3), (alice.id, 1), (alice.id, 2), (bob.id, 2), (alice.id, 0)] {
        let mut new = new_device(owner);
        new.now = t0.plus_secs(at);
        expected.push(db.store.insert_device(&new, &pools(), 10).await.unwrap());
    }
    expected.sort_by_key(|d| (d.inserted_at, d.id));

    let all = db.store.list_devices(&DeviceQuery::default()).await.unwrap();
    assert_eq!(all, expected);

    let alices =
        db.store.list_devices(&DeviceQuery { user_id: Some(alice.id), ..DeviceQuery::default() }).await.unwrap();
    let want: Vec<_> = expected.iter().filter(|d| d.user_id == alice.id).cloned().collect();
    assert_eq!(alices, want);

    let mut pages = Vec::new();
    let mut after = None;
    loop {
        let page =
            db.store.list_devices(&DeviceQuery { user_id: None, after, limit: Some(2), presence: None }).await.unwrap();
        assert!(page.len() <= 2);
        let Some(last) = page.last() else { break };
        after = Some((last.inserted_at, last.id));
        pages.extend(page);
    }
    assert_eq!(pages, expected);

    let bobs_after_first = DeviceQuery {
        user_id: Some(bob.id),
        after: Some((t0.plus_secs(2), Uuid::nil())),
        limit: Some(1),
        presence: None,
    };
    let page = db.store.list_devices(&bobs_after_first).await.unwrap();
    assert_eq!(page, expected.iter().filter(|d| d.user_id == bob.id).take(1).cloned().collect::<Vec<_>>());
}

#[tokio::test]
async fn public_keys_are_unique_and_names_unique_per_user() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let bob = add_user(&db, "bob@example.com", Role::Unprivileged).await;
    let first = db.store.insert_device(&new_device(alice.id), &pools(), 10).await.unwrap();

    let mut same_key = new_device(bob.id);
    same_key.public_key = first.public_key.clone();
    assert_invalid(db.store.insert_device(&same_key, &pools(), 10).await, "public_key", TAKEN);

    let mut same_name = new_device(alice.id);
    same_name.name = first.name.clone();
    assert_invalid(db.store.insert_device(&same_name, &pools(), 10).await, "name", TAKEN);

    let mut other_user = new_device(bob.id);
    other_user.name = first.name.clone();
    db.store.insert_device(&other_user, &pools(), 10).await.unwrap();
    assert_eq!(db.store.list_devices(&DeviceQuery::default()).await.unwrap().len(), 2);
}

#[tokio::test]
async fn an_explicit_address_that_is_taken_is_an_error() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let mut first = new_device(alice.id);
    first.ipv4 = AddressRequest::Given("10.3.2.50".parse().unwrap());
    first.ipv6 = AddressRequest::Given("fd00::3:2:50".parse().unwrap());
    db.store.insert_device(&first, &pools(), 10).await.unwrap();

    let mut v4 = new_device(alice.id);
    v4.ipv4 = AddressRequest::Given("10.3.2.50".parse().unwrap());
    assert_invalid(db.store.insert_device(&v4, &pools(), 10).await, "ipv4", TAKEN);
    let mut v6 = new_device(alice.id);
    v6.ipv6 = AddressRequest::Given("fd00::3:2:50".parse().unwrap());
    assert_invalid(db.store.insert_device(&v6, &pools(), 10).await, "ipv6", TAKEN);
}

#[tokio::test]
async fn the_owner_must_exist() {
    let db = db().await;
    assert_invalid(
        db.store.insert_device(&new_device(Uuid::now_v7()), &pools(), 10).await,
        "user_id",
        "does not exist",
    );
}

#[tokio::test]
async fn update_writes_only_changes() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let device = db.store.insert_device(&new_device(alice.id), &pools(), 10).await.unwrap();
    let later = device.updated_at.plus_secs(60);

    // Same values, psk kept: nothing moves.
    assert_eq!(db.store.update_device(device.id, &update_of(&device), later).await.unwrap(), device);
    assert_eq!(db.store.device_by_id(device.id).await.unwrap(), Some(device.clone()));

    let mut update = update_of(&device);
    update.name = "renamed".into();
    update.description = Some("new".into());
    update.use_default.mtu = false;
    update.custom.mtu = Some(1400);
    update.ipv4 = Some("10.3.2.200".parse().unwrap());
    let updated = db.store.update_device(device.id, &update, later).await.unwrap();
    assert_eq!((updated.name.as_str(), updated.custom.mtu, updated.updated_at), ("renamed", Some(1400), later));
    assert_eq!(updated.ipv4, Some(Ipv4Addr::new(10, 3, 2, 200)));
    assert_eq!(updated.preshared_key, device.preshared_key, "psk kept");
    assert_eq!(updated.inserted_at, device.inserted_at);
    assert_eq!(db.store.device_by_id(device.id).await.unwrap(), Some(updated.clone()));

    let new_psk = cipher().seal(b"other");
    let update = DeviceUpdate { preshared_key: Some(new_psk.clone()), ..update_of(&updated) };
    let rekeyed = db.store.update_device(device.id, &update, later.plus_secs(1)).await.unwrap();
    assert_eq!((rekeyed.preshared_key, rekeyed.updated_at), (new_psk, later.plus_secs(1)));

    assert_not_found(db.store.update_device(Uuid::now_v7(), &update, later).await);
}

#[tokio::test]
async fn update_reports_taken_values_on_their_field() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let a = db.store.insert_device(&new_device(alice.id), &pools(), 10).await.unwrap();
    let b = db.store.insert_device(&new_device(alice.id), &pools(), 10).await.unwrap();
    let now = Timestamp::now();
    type Change = fn(&mut DeviceUpdate, &Device);
    let cases: [(&str, Change); 4] = [
        ("name", |u, a| u.name = a.name.clone()),
        ("public_key", |u, a| u.public_key = a.public_key.clone()),
        ("ipv4", |u, a| u.ipv4 = a.ipv4),
        ("ipv6", |u, a| u.ipv6 = a.ipv6),
    ];
    for (field, change) in cases {
        let mut update = update_of(&b);
        change(&mut update, &a);
        assert_invalid(db.store.update_device(b.id, &update, now).await, field, TAKEN);
    }
    assert_eq!(db.store.device_by_id(b.id).await.unwrap(), Some(b));
}

#[tokio::test]
async fn delete_says_whether_a_device_went() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let device = db.store.insert_device(&new_device(alice.id), &pools(), 10).await.unwrap();
    assert!(db.store.delete_device(device.id).await.unwrap());
    assert!(!db.store.delete_device(device.id).await.unwrap());
    assert_eq!(db.store.device_by_id(device.id).await.unwrap(), None);
}

#[tokio::test]
async fn deleting_a_user_deletes_its_devices() {
    let db = db().await;
    add_user(&db, "admin@example.com", Role::Admin).await;
    let bob = add_user(&db, "bob@example.com", Role::Unprivileged).await;
    let device = db.store.insert_device(&new_device(bob.id), &pools(), 10).await.unwrap();
    db.store.delete_user(bob.id).await.unwrap();
    assert_eq!(db.store.device_by_id(device.id).await.unwrap(), None);
}

#[tokio::test]
async fn lists_filter_by_presence_as_of_a_cutoff() {
    use ferrozone_domain::model::StatsReport;
    use ferrozone_domain::store::Presence;
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let mut devices = Vec::new();
    for _ in 0..3 {
        devices.push(db.store.insert_device(&new_device(alice.id), &pools(), 10).await.unwrap());
    }
    let cutoff = Timestamp::now();
    let report = |i: usize, at: Timestamp| StatsReport {
        public_key: devices[i].public_key.clone(),
        latest_handshake: at,
        remote_ip: None,
        rx_bytes: 1,
        tx_bytes: 1,
    };
    // One at the cutoff (online), one a second before it (offline), one never (offline).
    db.store.record_stats(vec![report(0, cutoff), report(1, cutoff.plus_secs(-1))]).await.unwrap();
    let ids = |list: Vec<Device>| list.into_iter().map(|d| d.id).collect::<Vec<_>>();
    let query = |presence| DeviceQuery { presence: Some(presence), ..DeviceQuery::default() };

    let online = db.store.list_devices(&query(Presence::OnlineSince(cutoff))).await.unwrap();
    assert_eq!(ids(online), [devices[0].id]);
    let offline = db.store.list_devices(&query(Presence::OfflineSince(cutoff))).await.unwrap();
    assert_eq!(ids(offline), [devices[1].id, devices[2].id]);
    let paged = DeviceQuery {
        user_id: Some(alice.id),
        presence: Some(Presence::OfflineSince(cutoff)),
        after: Some((devices[1].inserted_at, devices[1].id)),
        limit: Some(5),
    };
    assert_eq!(ids(db.store.list_devices(&paged).await.unwrap()), [devices[2].id]);
}
