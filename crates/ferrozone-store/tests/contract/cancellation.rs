//! A write whose caller goes away (a client disconnect cancels the request) must not leave
//! the database unusable: every later write still works.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Waker};
use std::time::Duration;

use ferrozone_domain::Role;

use ferrozone_domain::model::DeviceUpdate;
use ferrozone_domain::Timestamp;

use crate::support::{add_user, db, new_device, pool};

/// Room for every write the test starts, all of which may complete.
fn pools() -> ferrozone_domain::ipam::Pools {
    ferrozone_domain::ipam::Pools { v4: Some(pool("10.0.0.0/16", "10.0.0.1")), v6: Some(pool("fd00::/112", "fd00::1")) }
}

/// Polls `work` once, then drops it: it is cancelled wherever its first step stopped.
fn poll_once_and_drop<F: Future>(work: F) {
    let mut work = pin!(work);
    let _ = work.as_mut().poll(&mut Context::from_waker(Waker::noop()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_writes_leave_the_store_writable() {
    let db = db().await;
    let owner = add_user(&db, "owner@example.com", Role::Admin).await;
    let target = db.store.insert_device(&new_device(owner.id), &pools(), 100_000).await.unwrap();
    for round in 0..30u64 {
        poll_once_and_drop(db.store.insert_device(&new_device(owner.id), &pools(), 100_000));
        // Many writers in flight, cancelled together at scattered points (waiting for the
        // writer, inside BEGIN, between statements, at COMMIT), as when clients disconnect.
        let writers: Vec<_> = (0..32u64)
            .map(|i| {
                let store = db.store.clone();
                let device = new_device(owner.id);
                let mut rename = DeviceUpdate {
                    name: format!("renamed-{round}-{i}"),
                    description: target.description.clone(),
                    public_key: target.public_key.clone(),
                    preshared_key: None,
                    ipv4: target.ipv4,
                    ipv6: target.ipv6,
                    use_default: target.use_default,
                    custom: target.custom.clone(),
                };
                rename.description = Some(format!("round {round}"));
                let id = target.id;
                tokio::spawn(async move {
                    let limit = Duration::from_micros(50 * ((round * 32 + i) % 40));
                    if i % 2 == 0 {
                        let _ = tokio::time::timeout(limit, store.insert_device(&device, &pools(), 100_000)).await;
                    } else {
                        let _ = tokio::time::timeout(limit, store.update_device(id, &rename, Timestamp::now())).await;
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.await.unwrap();
        }
    }
    let device = db.store.insert_device(&new_device(owner.id), &pools(), 100_000).await;
    assert!(device.is_ok(), "a write after cancelled ones failed: {device:?}");
    let count = db.store.list_devices(&Default::default()).await.unwrap().len();
    assert!(count >= 1, "the last insert is stored");
}
