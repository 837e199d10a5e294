//! Streamed lists: the same devices as a list, in batches, with nothing held back.

use ferrozone_domain::model::{AddressRequest, Device, Role};
use ferrozone_domain::store::{DeviceBatches, DeviceQuery, STREAM_BATCH};
use ferrozone_store::testing::{test_options, TestDb};
use tokio::task::JoinSet;
use uuid::Uuid;

use crate::support::{add_user, db, new_device, pools};

/// Inserts `count` devices without addresses, owned by `owners` in turn, with fewer writers
/// at once than the store has connections: no insert ever waits for a pooled connection, so
/// the pool's acquire timeout is never raced, however slow the machine. (Hundreds of inserts
/// at once queue on PostgreSQL, whose audit chain head serializes the commits, for as long
/// as the machine takes to commit the ones ahead: past the timeout on a loaded machine.)
async fn insert_devices(db: &TestDb, owners: &[Uuid], count: usize) {
    let writers = test_options().max_connections.saturating_sub(1).max(1) as usize;
    let mut inserts = JoinSet::new();
    for writer in 0..writers {
        let (store, owners) = (db.store.clone(), owners.to_vec());
        inserts.spawn(async move {
            for n in (writer..count).step_by(writers) {
                let mut new = new_device(owners[n % owners.len()]);
                (new.ipv4, new.ipv6) = (AddressRequest::None, AddressRequest::None);
                store.insert_device(&new, &pools(), u32::MAX).await.unwrap();
            }
        });
    }
    inserts.join_all().await;
}

/// Every batch of `batches`, checking none is empty or over-full.
async fn drain(mut batches: DeviceBatches) -> Vec<Device> {
    let mut all = Vec::new();
    while let Some(batch) = batches.recv().await {
        let batch = batch.unwrap();
        assert!((1..=STREAM_BATCH).contains(&batch.len()), "a batch of {}", batch.len());
        all.extend(batch);
    }
    all
}

#[tokio::test]
async fn a_stream_returns_what_a_list_returns_across_batches() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    let bob = add_user(&db, "bob@example.com", Role::Unprivileged).await;
    insert_devices(&db, &[bob.id, alice.id, alice.id], 2 * STREAM_BATCH + 3).await;

    for query in [DeviceQuery::default(), DeviceQuery { user_id: Some(bob.id), ..DeviceQuery::default() }] {
        let listed = db.store.list_devices(&query).await.unwrap();
        let streamed = drain(db.store.stream_devices(&query).await.unwrap()).await;
        assert_eq!(streamed.len(), listed.len());
        assert!(streamed == listed, "the stream differs from the list for {query:?}");
    }
    let nobody = DeviceQuery { user_id: Some(uuid::Uuid::now_v7()), ..DeviceQuery::default() };
    assert!(drain(db.store.stream_devices(&nobody).await.unwrap()).await.is_empty());
}

#[tokio::test]
async fn a_reader_that_goes_away_releases_the_stream() {
    let db = db().await;
    let alice = add_user(&db, "alice@example.com", Role::Admin).await;
    insert_devices(&db, &[alice.id], STREAM_BATCH * 4).await;

    // Readers that stop after one batch, more of them than the store has connections.
    for _ in 0..16 {
        let mut batches = db.store.stream_devices(&DeviceQuery::default()).await.unwrap();
        assert_eq!(batches.recv().await.unwrap().unwrap().len(), STREAM_BATCH);
    }
    // Reads and writes still go through, and a full stream sees every device.
    db.store.insert_device(&new_device(alice.id), &pools(), u32::MAX).await.unwrap();
    let all = drain(db.store.stream_devices(&DeviceQuery::default()).await.unwrap()).await;
    assert_eq!(all.len(), STREAM_BATCH * 4 + 1);
}
