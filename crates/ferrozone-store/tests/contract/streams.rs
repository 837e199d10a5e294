//! Streamed lists: the same devices as a list, in batches, with nothing held back.

use ferrozone_domain::model::{AddressRequest, Device, Role};
use ferrozone_domain::store::{DeviceBatches, DeviceQuery, STREAM_BATCH};
use tokio::task::JoinSet;

use crate::support::{add_user, db, new_device, pools};

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
    let mut inserts = JoinSet::new();
    for n in 0..2 * STREAM_BATCH + 3 {
        let store = db.store.clone();
        let mut new = new_device(if n % 3 == 0 { bob.id } else { alice.id });
        (new.ipv4, new.ipv6) = (AddressRequest::None, AddressRequest::None);
        inserts.spawn(async move { store.insert_device(&new, &pools(), u32::MAX).await.unwrap() });
    }
    inserts.join_all().await;

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
    // All at once, spread over owners: one owner's inserts take turns on its row (its
    // device limit), and a thousand of them would queue for connections longer than the
    // pool waits on a loaded machine; different owners' inserts commit side by side.
    let mut owners = vec![alice.id];
    for n in 1..16 {
        owners.push(add_user(&db, &format!("user{n}@example.com"), Role::Unprivileged).await.id);
    }
    let mut inserts = JoinSet::new();
    for i in 0..STREAM_BATCH * 4 {
        let store = db.store.clone();
        let mut new = new_device(owners[i % owners.len()]);
        (new.ipv4, new.ipv6) = (AddressRequest::None, AddressRequest::None);
        inserts.spawn(async move { store.insert_device(&new, &pools(), u32::MAX).await.unwrap() });
    }
    inserts.join_all().await;

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
