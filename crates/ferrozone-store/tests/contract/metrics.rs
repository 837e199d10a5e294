//! The store's sampled metrics: users by state, devices and the pool, as `serve` publishes
//! them, read back through a recorder of the test's own.

use ferrozone_domain::model::Role;
use ferrozone_domain::Timestamp;
use ferrozone_store::metrics::{publish, DEVICES, POOL_CONNECTIONS, POOL_MAX_CONNECTIONS, USERS};
use ferrozone_store::testing::test_options;
use metrics_util::debugging::{DebugValue, DebuggingRecorder};

use crate::support::{add_user, db, new_device, pools, user};

/// Every gauge the recorder holds, as `(name, state label or "", value)`.
fn gauges(recorder: &DebuggingRecorder) -> Vec<(String, String, f64)> {
    let snapshot = recorder.snapshotter().snapshot().into_vec().into_iter();
    snapshot
        .filter_map(|(key, _, _, value)| {
            let DebugValue::Gauge(value) = value else { return None };
            let state = key.key().labels().find(|l| l.key() == "state").map_or("", |l| l.value());
            Some((key.key().name().to_owned(), state.to_owned(), value.0))
        })
        .collect()
}

#[tokio::test]
async fn users_devices_and_the_pool_are_published() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let mut bob = user("bob@example.com", Role::Unprivileged);
    bob.disabled_at = Some(Timestamp::now());
    db.store.insert_user(&bob).await.unwrap();
    add_user(&db, "carol@example.com", Role::Unprivileged).await;
    for owner in [alice.id, alice.id, bob.id] {
        db.store.insert_device(&new_device(owner), &pools(), 10).await.unwrap();
    }
    let gone = db.store.insert_device(&new_device(alice.id), &pools(), 10).await.unwrap();
    db.store.delete_device(gone.id).await.unwrap();

    let database = ferrozone_store::open(&db.url, &test_options()).await.unwrap();
    // One read first, so that the pool has a connection to show.
    database.inventory().await.unwrap();
    let recorder = DebuggingRecorder::new();
    {
        let _recording = metrics::set_default_local_recorder(&recorder);
        publish(&database).await.unwrap();
    }
    database.close().await;

    let mut published = gauges(&recorder);
    published.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let [(idle, .., idle_n), (in_use, .., in_use_n), rest @ ..] = &published[..] else { panic!("{published:?}") };
    assert_eq!((idle.as_str(), in_use.as_str()), (POOL_CONNECTIONS, POOL_CONNECTIONS));
    // The one connection the read used; PostgreSQL's pool takes it back in a task of its
    // own, so it may still count as in use.
    assert_eq!(idle_n + in_use_n, 1.0, "{published:?}");
    let expected = [
        (POOL_MAX_CONNECTIONS, "", f64::from(test_options().max_connections)),
        (DEVICES, "", 3.0),
        (USERS, "disabled", 1.0),
        (USERS, "enabled", 2.0),
    ];
    let mut expected: Vec<_> = expected.iter().map(|(n, s, v)| (n.to_string(), s.to_string(), *v)).collect();
    expected.sort_by(|a, b| a.partial_cmp(b).unwrap());
    assert_eq!(rest, expected, "on {}", db.backend);
}
