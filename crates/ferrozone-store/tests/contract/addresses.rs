//! Address assignment and the device limit: concurrency, exhaustion, reuse.

use std::collections::HashSet;
use std::net::IpAddr;

use ferrozone_domain::ipam::Pools;
use ferrozone_domain::model::{AddressRequest, DeviceUpdate, Role};
use ferrozone_domain::store::DeviceQuery;
use ferrozone_domain::{DomainError, Timestamp};

use crate::support::{add_user, assert_invalid, db, new_device, pool, pools, v4_only};

const LIMIT: &str = "Maximum device limit reached. Remove an existing device before creating a new one.";

/// Inserts `n` devices for `user_id` at once, from as many tasks sharing the store.
async fn insert_concurrently(
    db: &ferrozone_store::testing::TestDb,
    user_id: uuid::Uuid,
    n: usize,
    pools: &Pools,
    max: u32,
) -> Vec<Result<ferrozone_domain::Device, DomainError>> {
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let (store, new, pools) = (db.store.clone(), new_device(user_id), pools.clone());
            tokio::spawn(async move { store.insert_device(&new, &pools, max).await })
        })
        .collect();
    let mut results = Vec::new();
    for task in tasks {
        results.push(task.await.unwrap());
    }
    results
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_inserts_get_distinct_addresses() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let results = insert_concurrently(&db, alice.id, 50, &pools(), 50).await;
    let devices: Vec<_> = results.into_iter().map(Result::unwrap).collect();
    let v4: HashSet<_> = devices.iter().map(|d| d.ipv4.unwrap()).collect();
    let v6: HashSet<_> = devices.iter().map(|d| d.ipv6.unwrap()).collect();
    assert_eq!((v4.len(), v6.len()), (50, 50));
    let p4 = pool("10.3.2.0/24", "10.3.2.1");
    assert!(v4.iter().all(|a| p4.may_assign(IpAddr::V4(*a))), "{v4:?}");
    // The cursor hands out the first 50 assignable addresses.
    let expected: HashSet<_> = (2..52).map(|i| std::net::Ipv4Addr::new(10, 3, 2, i)).collect();
    assert_eq!(v4, expected);
    let expected: HashSet<_> = (2..52).map(|i| std::net::Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 3, 2, i)).collect();
    assert_eq!(v6, expected);
}

#[tokio::test]
async fn each_family_takes_its_own_cursors_next_address() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    // Three IPv4-only inserts put the IPv4 cursor three ahead of the IPv6 one.
    for _ in 0..3 {
        let mut new = new_device(alice.id);
        new.ipv6 = AddressRequest::None;
        db.store.insert_device(&new, &pools(), 100).await.unwrap();
    }
    let mut got = Vec::new();
    for _ in 0..3 {
        let device = db.store.insert_device(&new_device(alice.id), &pools(), 100).await.unwrap();
        got.push((device.ipv4.unwrap().to_string(), device.ipv6.unwrap().to_string()));
    }
    let expected = [("10.3.2.5", "fd00::3:2:2"), ("10.3.2.6", "fd00::3:2:3"), ("10.3.2.7", "fd00::3:2:4")];
    assert_eq!(got, expected.map(|(a, b)| (a.to_owned(), b.to_owned())));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_inserts_of_many_users_get_distinct_addresses() {
    let db = db().await;
    let mut tasks = Vec::new();
    // Different owners do not serialize on a user row: only the pool lock orders them.
    for i in 0..8 {
        let owner = add_user(&db, &format!("user{i}@example.com"), Role::Unprivileged).await;
        for _ in 0..5 {
            let (store, new) = (db.store.clone(), new_device(owner.id));
            tasks.push(tokio::spawn(async move { store.insert_device(&new, &pools(), 10).await }));
        }
    }
    let mut v4 = HashSet::new();
    let mut v6 = HashSet::new();
    for task in tasks {
        let device = task.await.unwrap().unwrap();
        assert!(v4.insert(device.ipv4.unwrap()) && v6.insert(device.ipv6.unwrap()), "duplicate address");
    }
    assert_eq!((v4.len(), v6.len()), (40, 40));
}

/// Two stores on one database (two processes), creating at once in a network large
/// enough for PostgreSQL's processes to claim its offsets in blocks (docs/design/devices.md).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_processes_creating_at_once_in_a_large_network_never_share_an_address() {
    let db = db().await;
    let other = ferrozone_store::open(&db.url, &ferrozone_store::testing::test_options()).await.unwrap().into_store();
    let owner = add_user(&db, "owner@example.com", Role::Admin).await;
    let large = v4_only("10.0.0.0/16", "10.0.0.1");
    let mut tasks = Vec::new();
    for store in [db.store.clone(), other.clone()].into_iter().cycle().take(40) {
        let (mut new, large) = (new_device(owner.id), large.clone());
        new.ipv6 = AddressRequest::None;
        tasks.push(tokio::spawn(async move { store.insert_device(&new, &large, 100).await }));
    }
    let mut v4 = HashSet::new();
    for task in tasks {
        let address = task.await.unwrap().unwrap().ipv4.unwrap();
        assert!(address.octets()[..2] == [10, 0] && address.octets()[2..] != [0, 1], "{address}");
        assert!(v4.insert(address), "{address} twice");
    }
    assert_eq!(v4.len(), 40);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn explicit_claims_racing_assignment_never_share_an_address() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    // Two explicit claims of addresses the cursor is about to hand out, among ten
    // assignments: an assignment that loses a race retries, so every one succeeds.
    let mut tasks = Vec::new();
    for i in 0..12 {
        let mut new = new_device(alice.id);
        if i % 6 == 0 {
            new.ipv4 = AddressRequest::Given(std::net::Ipv4Addr::new(10, 3, 2, 3 + i / 6));
        }
        let (store, given) = (db.store.clone(), i % 6 == 0);
        tasks.push(tokio::spawn(async move { (given, store.insert_device(&new, &pools(), 100).await) }));
    }
    let mut addresses = HashSet::new();
    for task in tasks {
        match task.await.unwrap() {
            (_, Ok(device)) => assert!(addresses.insert(device.ipv4.unwrap()), "duplicate {:?}", device.ipv4),
            (true, result) => assert_invalid(result, "ipv4", "has already been taken"),
            (false, result) => panic!("assignment failed: {result:?}"),
        }
    }
    assert!(addresses.len() >= 10, "{addresses:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_device_limit_holds_under_concurrency() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let results = insert_concurrently(&db, alice.id, 60, &pools(), 50).await;
    let (ok, failed): (Vec<_>, Vec<_>) = results.into_iter().partition(Result::is_ok);
    assert_eq!((ok.len(), failed.len()), (50, 10));
    for result in failed {
        assert_invalid(result, "base", LIMIT);
    }
    let query = DeviceQuery { user_id: Some(alice.id), ..DeviceQuery::default() };
    assert_eq!(db.store.list_devices(&query).await.unwrap().len(), 50);
}

#[tokio::test]
async fn the_limit_counts_only_the_owners_devices() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let bob = add_user(&db, "bob@example.com", Role::Unprivileged).await;
    db.store.insert_device(&new_device(alice.id), &pools(), 1).await.unwrap();
    db.store.insert_device(&new_device(bob.id), &pools(), 1).await.unwrap();
    assert_invalid(db.store.insert_device(&new_device(bob.id), &pools(), 1).await, "base", LIMIT);
    assert_invalid(db.store.insert_device(&new_device(bob.id), &pools(), 0).await, "base", LIMIT);
}

#[tokio::test]
async fn deleted_devices_free_their_place_under_the_limit() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let bob = add_user(&db, "bob@example.com", Role::Unprivileged).await;
    let first = db.store.insert_device(&new_device(bob.id), &pools(), 2).await.unwrap();
    db.store.insert_device(&new_device(bob.id), &pools(), 2).await.unwrap();
    assert_invalid(db.store.insert_device(&new_device(bob.id), &pools(), 2).await, "base", LIMIT);
    assert!(db.store.delete_device(first.id).await.unwrap());
    db.store.insert_device(&new_device(bob.id), &pools(), 2).await.expect("a place was freed");
    assert_invalid(db.store.insert_device(&new_device(bob.id), &pools(), 2).await, "base", LIMIT);

    // A user deleted with its devices leaves no count behind for a user of the same email.
    db.store.delete_user(bob.id).await.unwrap();
    let bob = add_user(&db, "bob@example.com", Role::Unprivileged).await;
    for _ in 0..2 {
        db.store.insert_device(&new_device(bob.id), &pools(), 2).await.unwrap();
    }
    assert_invalid(db.store.insert_device(&new_device(bob.id), &pools(), 2).await, "base", LIMIT);
    db.store.insert_device(&new_device(alice.id), &pools(), 1).await.expect("others are not affected");
}

#[tokio::test]
async fn a_small_pool_is_exhausted_then_reused() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let pools = v4_only("10.0.0.0/29", "10.0.0.1");
    let mut devices = Vec::new();
    for _ in 0..5 {
        let mut new = new_device(alice.id);
        new.ipv6 = AddressRequest::None;
        devices.push(db.store.insert_device(&new, &pools, 100).await.unwrap());
    }
    let got: Vec<String> = devices.iter().map(|d| d.ipv4.unwrap().to_string()).collect();
    assert_eq!(got, ["10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6"]);

    let mut sixth = new_device(alice.id);
    sixth.ipv6 = AddressRequest::None;
    assert_invalid(db.store.insert_device(&sixth, &pools, 100).await, "base", "CIDR 10.0.0.0/29 is exhausted");

    assert!(db.store.delete_device(devices[2].id).await.unwrap());
    let reused = db.store.insert_device(&sixth, &pools, 100).await.unwrap();
    assert_eq!(reused.ipv4, devices[2].ipv4);
    assert_invalid(
        db.store.insert_device(&new_device(alice.id), &pools, 100).await,
        "base",
        "CIDR 10.0.0.0/29 is exhausted",
    );
}

#[tokio::test]
async fn failed_inserts_lose_no_address() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let pools = v4_only("10.0.0.0/29", "10.0.0.1");
    let v4_device = || {
        let mut new = new_device(alice.id);
        new.ipv6 = AddressRequest::None;
        new
    };
    let first = db.store.insert_device(&v4_device(), &pools, 100).await.unwrap();
    // Fails at the insert, after an address was assigned: the same public key again.
    for _ in 0..3 {
        let mut clash = v4_device();
        clash.public_key.clone_from(&first.public_key);
        assert_invalid(db.store.insert_device(&clash, &pools, 100).await, "public_key", "has already been taken");
    }
    let mut got: Vec<String> = vec![first.ipv4.unwrap().to_string()];
    for _ in 0..4 {
        got.push(db.store.insert_device(&v4_device(), &pools, 100).await.unwrap().ipv4.unwrap().to_string());
    }
    got.sort();
    assert_eq!(got, ["10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6"], "every address is handed out");
    assert_invalid(db.store.insert_device(&v4_device(), &pools, 100).await, "base", "CIDR 10.0.0.0/29 is exhausted");
}

#[tokio::test]
async fn deleting_a_user_releases_its_addresses() {
    let db = db().await;
    add_user(&db, "admin@example.com", Role::Admin).await;
    let bob = add_user(&db, "bob@example.com", Role::Unprivileged).await;
    let carol = add_user(&db, "carol@example.com", Role::Unprivileged).await;
    let pools = v4_only("10.0.0.0/29", "10.0.0.1");
    let mut bobs = HashSet::new();
    for _ in 0..5 {
        let mut new = new_device(bob.id);
        new.ipv6 = AddressRequest::None;
        bobs.insert(db.store.insert_device(&new, &pools, 100).await.unwrap().ipv4.unwrap());
    }
    db.store.delete_user(bob.id).await.unwrap();
    let mut carols = HashSet::new();
    for _ in 0..5 {
        let mut new = new_device(carol.id);
        new.ipv6 = AddressRequest::None;
        carols.insert(db.store.insert_device(&new, &pools, 100).await.unwrap().ipv4.unwrap());
    }
    assert_eq!(carols, bobs);
}

#[tokio::test]
async fn the_cursor_skips_explicitly_taken_addresses() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let pools = v4_only("10.0.0.0/29", "10.0.0.1");
    let mut given = new_device(alice.id);
    given.ipv4 = AddressRequest::Given("10.0.0.3".parse().unwrap());
    given.ipv6 = AddressRequest::None;
    db.store.insert_device(&given, &pools, 100).await.unwrap();
    let mut got = Vec::new();
    for _ in 0..4 {
        let mut new = new_device(alice.id);
        new.ipv6 = AddressRequest::None;
        got.push(db.store.insert_device(&new, &pools, 100).await.unwrap().ipv4.unwrap().to_string());
    }
    assert_eq!(got, ["10.0.0.2", "10.0.0.4", "10.0.0.5", "10.0.0.6"]);
}

#[tokio::test]
async fn released_addresses_stay_with_their_family() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let first = db.store.insert_device(&new_device(alice.id), &pools(), 100).await.unwrap();
    db.store.delete_device(first.id).await.unwrap();

    // An IPv4-only insert must not consume (or discard) the released IPv6 address.
    let mut v4_only_device = new_device(alice.id);
    v4_only_device.ipv6 = AddressRequest::None;
    let second = db.store.insert_device(&v4_only_device, &pools(), 100).await.unwrap();
    assert_eq!((second.ipv4, second.ipv6), (first.ipv4, None));
    let third = db.store.insert_device(&new_device(alice.id), &pools(), 100).await.unwrap();
    assert_eq!(third.ipv6, first.ipv6);
    assert_ne!(third.ipv4, first.ipv4);
}

#[tokio::test]
async fn an_address_changed_by_an_update_is_released() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let pools = v4_only("10.0.0.0/29", "10.0.0.1");
    let mut new = new_device(alice.id);
    new.ipv6 = AddressRequest::None;
    let device = db.store.insert_device(&new, &pools, 100).await.unwrap();
    assert_eq!(device.ipv4.unwrap().to_string(), "10.0.0.2");
    let update = DeviceUpdate {
        name: device.name.clone(),
        description: None,
        public_key: device.public_key.clone(),
        preshared_key: None,
        ipv4: Some("10.0.0.6".parse().unwrap()),
        ipv6: None,
        use_default: device.use_default,
        custom: device.custom.clone(),
    };
    db.store.update_device(device.id, &update, Timestamp::now()).await.unwrap();

    let mut next = new_device(alice.id);
    next.ipv6 = AddressRequest::None;
    let got = db.store.insert_device(&next, &pools, 100).await.unwrap();
    assert_eq!(got.ipv4.unwrap().to_string(), "10.0.0.2", "the old address is reused first");
    let mut more = Vec::new();
    for _ in 0..3 {
        let mut next = new_device(alice.id);
        next.ipv6 = AddressRequest::None;
        more.push(db.store.insert_device(&next, &pools, 100).await.unwrap().ipv4.unwrap().to_string());
    }
    assert_eq!(more, ["10.0.0.3", "10.0.0.4", "10.0.0.5"], "10.0.0.6 is taken by the update");
}

#[tokio::test]
async fn released_addresses_outside_the_current_network_are_not_reused() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let old = v4_only("10.0.0.0/29", "10.0.0.1");
    let mut new = new_device(alice.id);
    new.ipv6 = AddressRequest::None;
    let device = db.store.insert_device(&new, &old, 100).await.unwrap();
    db.store.delete_device(device.id).await.unwrap();

    let current = v4_only("10.9.0.0/29", "10.9.0.1");
    let mut next = new_device(alice.id);
    next.ipv6 = AddressRequest::None;
    let got = db.store.insert_device(&next, &current, 100).await.unwrap();
    assert_eq!(got.ipv4.unwrap().to_string(), "10.9.0.2");
}

#[tokio::test]
async fn assignment_without_a_pool_is_a_bug() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let result = db.store.insert_device(&new_device(alice.id), &Pools::default(), 100).await;
    assert!(matches!(result, Err(DomainError::Internal(_))), "{result:?}");
}
