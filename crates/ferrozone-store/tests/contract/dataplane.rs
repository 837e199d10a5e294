//! What the data plane reads (active peers, egress rules) and writes (statistics), and
//! the change signal between processes.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use ferrozone_domain::egress::{Rule, RuleAction, RuleSource};
use ferrozone_domain::input::{Patch, RuleChanges};
use ferrozone_domain::ipam::Pools;
use ferrozone_domain::model::{
    ActivePeer, DataPlaneChanges, DeviceInsert, DeviceUpdate, Role, StatsReport, UserUpdate,
};
use ferrozone_domain::store::DeviceQuery;
use ferrozone_domain::vpn_session::{VpnSession, ONCE};
use ferrozone_domain::{Store, Timestamp};
use uuid::Uuid;

use crate::rules::rule;
use crate::support::{add_user, cipher, db, new_device, pool, pools, user};

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
async fn statistics_are_written_and_the_newest_handshake_wins() {
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
    db.store.record_stats(vec![report(t0.plus_secs(10), 100), unknown]).await.unwrap();

    let stored = db.store.device_by_id(device.id).await.unwrap().unwrap();
    assert_eq!(stored.stats.latest_handshake, Some(t0.plus_secs(10)));
    assert_eq!(stored.stats.remote_ip.as_deref(), Some("192.0.2.7"));
    assert_eq!((stored.stats.rx_bytes, stored.stats.tx_bytes), (Some(100), Some(200)));
    assert_eq!(stored.updated_at, device.updated_at, "statistics are not an edit");
    assert_eq!(db.store.device_by_id(other.id).await.unwrap().unwrap().stats, Default::default());

    // Another gateway's older handshake loses (its traffic counts: see below); a newer one wins.
    let other_gateway = uuid::Uuid::from_u128(7);
    let elsewhere = StatsReport { remote_ip: Some("198.51.100.1".into()), ..report(t0, 5) };
    db.store.record_stats_from(other_gateway, vec![elsewhere.clone()]).await.unwrap();
    let stats = db.store.device_by_id(device.id).await.unwrap().unwrap().stats;
    assert_eq!((stats.latest_handshake, stats.remote_ip.as_deref()), (Some(t0.plus_secs(10)), Some("192.0.2.7")));
    let newer = StatsReport { latest_handshake: t0.plus_secs(20), ..elsewhere };
    db.store.record_stats_from(other_gateway, vec![newer]).await.unwrap();
    let stats = db.store.device_by_id(device.id).await.unwrap().unwrap().stats;
    assert_eq!((stats.latest_handshake, stats.remote_ip.as_deref()), (Some(t0.plus_secs(20)), Some("198.51.100.1")));
    db.store.record_stats(vec![]).await.unwrap();
}

/// Traffic is summed per gateway from its counters: each report adds its increase over the
/// same gateway's previous one, or the whole counter when it went down (the interface was
/// recreated), so the totals never go backwards, with one gateway or several.
#[tokio::test]
async fn traffic_is_summed_per_gateway_and_never_goes_backwards() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let device = db.store.insert_device(&new_device(alice.id), &pools(), 10).await.unwrap();
    let t0 = Timestamp::now();
    let report = |rx: i64, tx: i64| StatsReport {
        public_key: device.public_key.clone(),
        latest_handshake: t0,
        remote_ip: None,
        rx_bytes: rx,
        tx_bytes: tx,
    };
    let totals = || async {
        let stats = db.store.device_by_id(device.id).await.unwrap().unwrap().stats;
        (stats.rx_bytes.unwrap(), stats.tx_bytes.unwrap())
    };
    let (embedded, remote) = (uuid::Uuid::nil(), uuid::Uuid::from_u128(9));
    db.store.record_stats_from(embedded, vec![report(100, 10)]).await.unwrap();
    db.store.record_stats_from(embedded, vec![report(150, 15)]).await.unwrap();
    assert_eq!(totals().await, (150, 15));
    // A second gateway carries the same peer: its traffic adds up.
    db.store.record_stats_from(remote, vec![report(40, 4)]).await.unwrap();
    db.store.record_stats_from(remote, vec![report(60, 6)]).await.unwrap();
    assert_eq!(totals().await, (210, 21));
    // The first gateway's interface was recreated: its counters start again, totals do not.
    db.store.record_stats_from(embedded, vec![report(20, 2)]).await.unwrap();
    assert_eq!(totals().await, (230, 23));
    db.store.record_stats_from(embedded, vec![report(25, 2)]).await.unwrap();
    assert_eq!(totals().await, (235, 23));
    // A batch naming a key twice counts it once, as its last report.
    db.store.record_stats_from(remote, vec![report(61, 6), report(70, 7)]).await.unwrap();
    assert_eq!(totals().await, (245, 24));
}

/// Statistics live in a table of their own (migration 0020), keyed by the public key.
#[tokio::test]
async fn statistics_follow_a_new_key_and_go_with_their_device() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let device = db.store.insert_device(&new_device(alice.id), &pools(), 10).await.unwrap();
    let t0 = Timestamp::now();
    let report = |key: &str, rx: i64| StatsReport {
        public_key: key.to_owned(),
        latest_handshake: t0,
        remote_ip: None,
        rx_bytes: rx,
        tx_bytes: rx,
    };
    db.store.record_stats(vec![report(&device.public_key, 100)]).await.unwrap();

    let new_key = ferrozone_domain::crypto::generate_keypair().public_key;
    let update = DeviceUpdate {
        name: device.name.clone(),
        description: None,
        public_key: new_key.clone(),
        preshared_key: None,
        ipv4: device.ipv4,
        ipv6: device.ipv6,
        use_default: device.use_default,
        custom: device.custom.clone(),
    };
    db.store.update_device(device.id, &update, t0).await.unwrap();
    let stored = db.store.device_by_id(device.id).await.unwrap().unwrap();
    assert_eq!(stored.stats.rx_bytes, Some(100), "the figures stay with the device");
    db.store.record_stats(vec![report(&new_key, 200)]).await.unwrap();
    let listed = db.store.list_devices(&DeviceQuery::default()).await.unwrap();
    assert_eq!(listed.iter().map(|d| d.stats.rx_bytes).collect::<Vec<_>>(), [Some(200)]);

    assert!(db.store.delete_device(device.id).await.unwrap());
    let again = DeviceInsert { public_key: new_key.clone(), ..new_device(alice.id) };
    let again = db.store.insert_device(&again, &pools(), 10).await.unwrap();
    let stored = db.store.device_by_id(again.id).await.unwrap().unwrap();
    assert_eq!(stored.stats, Default::default(), "a deleted device's figures went with it");
}

/// Alice (an admin), Bob and Carol, each with a device; Alice's device.
struct Three {
    db: ferrozone_store::testing::TestDb,
    alice: ferrozone_domain::model::User,
    bob: ferrozone_domain::model::User,
    carol: ferrozone_domain::model::User,
    alices: ferrozone_domain::model::Device,
}

async fn three_users() -> Three {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let bob = add_user(&db, "bob@example.com", Role::Unprivileged).await;
    let carol = add_user(&db, "carol@example.com", Role::Unprivileged).await;
    let alices = db.store.insert_device(&new_device(alice.id), &pools(), 10).await.unwrap();
    db.store.insert_device(&new_device(bob.id), &pools(), 10).await.unwrap();
    db.store.insert_device(&new_device(carol.id), &pools(), 10).await.unwrap();
    Three { db, alice, bob, carol, alices }
}

#[tokio::test]
async fn the_egress_policy_is_every_rule_and_the_active_devices_of_their_users() {
    let Three { db, alice, bob, alices, .. } = three_users().await;
    let (global, alices_rule, bobs_rule) =
        (rule("10.0.0.0/8", None), rule("10.1.0.0/16", Some(alice.id)), rule("10.2.0.0/16", Some(bob.id)));
    for r in [&global, &alices_rule, &bobs_rule] {
        db.store.insert_rule(r).await.unwrap();
    }
    let disable = UserUpdate { disabled: Some(true), ..UserUpdate::default() };
    db.store.update_user(bob.id, &disable, Timestamp::now()).await.unwrap();

    let mut policy = db.store.egress_policy(never_expires()).await.unwrap();
    policy.rules.sort_by_key(|r| r.destination.clone());
    assert_eq!(policy.rules, vec![global, alices_rule, bobs_rule]);
    // Carol has no rule, Bob is disabled: only Alice's device is a source.
    let alices_source = RuleSource { user_id: alice.id, ipv4: alices.ipv4, ipv6: alices.ipv6 };
    assert_eq!(policy.sources, vec![alices_source]);
    assert!(alices.ipv4.is_some() && alices.ipv6.is_some());

    // Alice's VPN session ran out (signed in two hours ago, sessions of one hour): her
    // device leaves the sources as it leaves the peers.
    let now = Timestamp::now();
    db.store.record_sign_in(alice.id, "password", now.plus_secs(-7200)).await.unwrap();
    let hourly = VpnSession::new(3600, now);
    assert_eq!(db.store.egress_policy(hourly).await.unwrap().sources, vec![]);
    let daily = VpnSession::new(86_400, now);
    assert_eq!(db.store.egress_policy(daily).await.unwrap().sources.len(), 1, "still active for a day");
}

/// The watch on SQLite polls `change_counters` (PostgreSQL's triggers send NOTIFY instead,
/// for the same changes): a statistics cycle must move no counter, or every cycle would
/// wake the reconciler, the nftables keeper and the configuration reload of every process.
#[tokio::test]
async fn on_sqlite_statistics_move_no_change_counter_and_edits_do() {
    let db = db().await;
    let Some(path) = db.url.strip_prefix("sqlite://") else { return };
    let counters = rusqlite::Connection::open(path).unwrap();
    let generation = |topic: &str| -> i64 {
        counters.query_row("SELECT generation FROM change_counters WHERE topic = ?1", [topic], |r| r.get(0)).unwrap()
    };
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let device = db.store.insert_device(&new_device(alice.id), &pools(), 10).await.unwrap();
    let (peers, configuration) = (generation("peers"), generation("configuration"));
    let report = StatsReport {
        public_key: device.public_key.clone(),
        latest_handshake: Timestamp::now(),
        remote_ip: Some("192.0.2.7".into()),
        rx_bytes: 1,
        tx_bytes: 2,
    };
    db.store.record_stats(vec![report]).await.unwrap();
    db.store.record_sign_in(alice.id, "email", Timestamp::now()).await.unwrap();
    assert_eq!(generation("peers"), peers, "statistics and sign-ins change no peer");

    let rules = generation("rules");
    db.store.insert_rule(&fresh_rule()).await.unwrap();
    assert_eq!(
        (generation("peers"), generation("rules")),
        (peers, rules + 1),
        "a rule changes the rules, not the peers"
    );
    db.store.delete_device(device.id).await.unwrap();
    assert_eq!((generation("peers"), generation("rules")), (peers + 1, rules + 1), "a device changes the peers");
    let staff = crate::groups::group("Staff");
    db.store.insert_group(&staff).await.unwrap();
    db.store.add_group_member(staff.id, alice.id, "manual", Timestamp::now()).await.unwrap();
    assert_eq!((generation("peers"), generation("rules")), (peers + 1, rules + 2), "a membership changes the rules");
    db.store.put_settings(&[("configuration.default_client_mtu".to_owned(), b"1400".to_vec())]).await.unwrap();
    db.store.put_settings(&[("unrelated".to_owned(), b"x".to_vec())]).await.unwrap();
    assert_eq!(generation("configuration"), configuration + 1, "only configuration rows count");
}

/// Which wake-up of [`DataPlaneChanges`] a change is heard on.
#[derive(Clone, Copy)]
enum Heard {
    Peers,
    Rules,
}

/// Commits `change` through a second store on the same database (another process) until
/// the first store's watch hears one on `heard`: the watch may start listening after the
/// first commit (a deadline, not a timing assertion). `setup` commits before the watch
/// starts, so what it commits is never what the watch hears.
async fn heard_from_another_process<S, F, Fut>(
    heard: Heard,
    setup: impl AsyncFnOnce(&Arc<dyn Store>) -> S,
    mut change: F,
) where
    F: FnMut(Arc<dyn Store>, &mut S) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let db = db().await;
    let other = ferrozone_store::open(&db.url, &ferrozone_store::StoreOptions::default()).await.unwrap().into_store();
    let mut state = setup(&other).await;
    let changes = DataPlaneChanges::default();
    let changed = match heard {
        Heard::Peers => changes.peers.clone(),
        Heard::Rules => changes.rules.clone(),
    };
    let watcher = {
        let store = db.store.clone();
        tokio::spawn(async move { store.watch_data_plane(changes).await })
    };
    let heard = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            change(other.clone(), &mut state).await;
            if tokio::time::timeout(Duration::from_millis(500), changed.notified()).await.is_ok() {
                break;
            }
        }
    });
    heard.await.expect("a change committed by another store was not noticed");
    watcher.abort();
}

#[tokio::test]
async fn another_process_committing_a_peer_change_is_noticed() {
    let alice = async |store: &Arc<dyn Store>| {
        let alice = user("alice@example.com", Role::Admin);
        store.insert_user(&alice).await.unwrap();
        alice.id
    };
    heard_from_another_process(Heard::Peers, alice, |other, alice| {
        let alice = *alice;
        async move {
            other.insert_device(&new_device(alice), &pools(), 100).await.unwrap();
        }
    })
    .await;
}

/// A fresh global /32 each time: rules of one scope and action may not overlap.
fn fresh_rule() -> Rule {
    let n = Uuid::now_v7().as_u128();
    rule(&format!("10.{}.{}.{}", (n >> 16) as u8, (n >> 8) as u8, n as u8), None)
}

#[tokio::test]
async fn another_process_creating_a_rule_is_noticed() {
    heard_from_another_process(
        Heard::Rules,
        async |_| (),
        |other, ()| async move {
            other.insert_rule(&fresh_rule()).await.unwrap();
        },
    )
    .await;
}

#[tokio::test]
async fn another_process_updating_a_rule_is_noticed() {
    let stored = async |store: &Arc<dyn Store>| {
        let r = fresh_rule();
        store.insert_rule(&r).await.unwrap();
        r
    };
    heard_from_another_process(Heard::Rules, stored, |other, r| {
        r.action = if r.action == RuleAction::Drop { RuleAction::Accept } else { RuleAction::Drop };
        let flip = RuleChanges { action: Patch::Value(r.action.as_str().to_owned()), ..Default::default() };
        let id = r.id;
        async move { assert!(other.update_rule(id, &flip, Timestamp::now()).await.unwrap().is_some()) }
    })
    .await;
}

#[tokio::test]
async fn another_process_deleting_a_rule_is_noticed() {
    // More rules than attempts fit in the deadline: one deleted per attempt.
    let stored = async |store: &Arc<dyn Store>| {
        let mut rules = Vec::new();
        for _ in 0..70 {
            let r = fresh_rule();
            store.insert_rule(&r).await.unwrap();
            rules.push(r.id);
        }
        rules
    };
    heard_from_another_process(Heard::Rules, stored, |other, rules| {
        let id = rules.pop().expect("a rule left to delete");
        async move { assert!(other.delete_rule(id).await.unwrap()) }
    })
    .await;
}

/// The benchmark size: 10,000 rules of 1,000 users (two devices each, one user in
/// ten disabled), read in one snapshot. Prints the time of a read; run with
/// `cargo test -p ferrozone-store --test contract egress_policy_at -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: ~20 s of setup"]
async fn egress_policy_at_the_benchmark_size() {
    let db = db().await;
    let pools = Pools { v4: Some(pool("10.64.0.0/16", "10.64.0.1")), v6: Some(pool("fd00::1:0:0/112", "fd00::1:0:1")) };
    let tasks: Vec<_> = (0..1000u32)
        .map(|i| {
            let (store, pools) = (db.store.clone(), pools.clone());
            tokio::spawn(async move {
                let mut u = user(&format!("u{i}@example.com"), Role::Unprivileged);
                u.disabled_at = (i % 10 == 0).then(Timestamp::now);
                store.insert_user(&u).await.unwrap();
                for _ in 0..2 {
                    store.insert_device(&new_device(u.id), &pools, 10).await.unwrap();
                }
                for j in 0..10u32 {
                    store.insert_rule(&rule(&format!("172.{}.{}.0/24", 16 + j, i % 256), Some(u.id))).await.unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let mut times = Vec::new();
    for _ in 0..5 {
        let started = std::time::Instant::now();
        let policy = db.store.egress_policy(never_expires()).await.unwrap();
        times.push(started.elapsed());
        assert_eq!((policy.rules.len(), policy.sources.len()), (10_000, 1_800));
    }
    times.sort();
    eprintln!("{}: egress_policy, 10,000 rules of 1,000 users: median {:?} (runs {times:?})", db.backend, times[2]);
}

/// Sessions that never expire (`vpn_session_duration` 0).
fn never_expires() -> VpnSession {
    VpnSession::new(0, Timestamp::now())
}

/// A group's rule decides the traffic of its members' active devices: the policy carries
/// the memberships of the groups that rules name and their devices' addresses; a group's
/// deletion takes its rules with it.
#[tokio::test]
async fn the_egress_policy_carries_the_members_of_the_groups_rules_name() {
    let Three { db, alice, bob, carol, alices } = three_users().await;
    let (staff, idle) = (crate::groups::group("Staff"), crate::groups::group("Idle"));
    db.store.insert_group(&staff).await.unwrap();
    db.store.insert_group(&idle).await.unwrap();
    for (group, user) in [(staff.id, alice.id), (staff.id, bob.id), (idle.id, carol.id)] {
        db.store.add_group_member(group, user, "manual", Timestamp::now()).await.unwrap();
    }
    let staffs = Rule { group_id: Some(staff.id), ..rule("10.0.0.0/8", None) };
    db.store.insert_rule(&staffs).await.unwrap();
    let disable = UserUpdate { disabled: Some(true), ..UserUpdate::default() };
    db.store.update_user(bob.id, &disable, Timestamp::now()).await.unwrap();

    let policy = db.store.egress_policy(never_expires()).await.unwrap();
    assert_eq!(policy.rules, vec![staffs.clone()], "group_id is stored and read back");
    let mut memberships: Vec<(Uuid, Uuid)> = policy.memberships.iter().map(|m| (m.group_id, m.user_id)).collect();
    memberships.sort();
    let mut expected = vec![(staff.id, alice.id), (staff.id, bob.id)];
    expected.sort();
    assert_eq!(memberships, expected, "the named group's members only, not the idle group's");
    let alices_source = RuleSource { user_id: alice.id, ipv4: alices.ipv4, ipv6: alices.ipv6 };
    assert_eq!(policy.sources, vec![alices_source], "bob is disabled, carol's group has no rule");
    let rules = db.store.egress_rules().await.unwrap();
    let mut alone: Vec<(Uuid, Uuid)> = rules.memberships.iter().map(|m| (m.group_id, m.user_id)).collect();
    alone.sort();
    assert_eq!(
        (rules.rules, alone),
        (policy.rules.clone(), memberships),
        "the rules alone: the same rules and members"
    );

    let both = Rule { group_id: Some(staff.id), ..rule("10.0.0.0/8", Some(alice.id)) };
    let refused = db.store.insert_rule(&both).await;
    assert!(refused.is_err(), "a rule naming a user and a group is refused by the database: {refused:?}");

    assert!(db.store.delete_group(staff.id).await.unwrap().is_some());
    let policy = db.store.egress_policy(never_expires()).await.unwrap();
    assert!(policy.rules.is_empty() && policy.memberships.is_empty() && policy.sources.is_empty(), "{policy:?}");
}

#[tokio::test]
async fn another_process_changing_a_membership_is_noticed() {
    let setup = async |store: &Arc<dyn Store>| {
        let alice = user("alice@example.com", Role::Admin);
        store.insert_user(&alice).await.unwrap();
        let staff = crate::groups::group("Staff");
        store.insert_group(&staff).await.unwrap();
        (staff.id, alice.id, false)
    };
    heard_from_another_process(Heard::Rules, setup, |other, (group, user, member)| {
        let (group, user, join) = (*group, *user, !*member);
        *member = join;
        async move {
            if join {
                other.add_group_member(group, user, "manual", Timestamp::now()).await.unwrap();
            } else {
                assert!(other.remove_group_member(group, user).await.unwrap());
            }
        }
    })
    .await;
}
