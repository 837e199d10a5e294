//! The configuration's change watch: a commit of `configuration.` rows by another process
//! wakes the watcher (PostgreSQL: migration 0009's trigger; SQLite: the data version).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use crate::support::db;

/// Far longer than a notification takes; reaching it is a failure, not a measurement.
const DEADLINE: Duration = Duration::from_secs(10);

async fn heard(changed: &Notify, what: &str) {
    tokio::time::timeout(DEADLINE, changed.notified()).await.unwrap_or_else(|_| panic!("{what} was not heard"));
}

#[tokio::test]
async fn a_configuration_change_committed_by_another_process_is_heard() {
    let db = db().await;
    // A second store on the same database stands for another process.
    let other = ferrozone_store::open(&db.url, &ferrozone_store::StoreOptions::default()).await.unwrap().into_store();
    let changed = Arc::new(Notify::new());
    let watcher = {
        let (store, changed) = (db.store.clone(), changed.clone());
        tokio::spawn(async move { store.watch_configuration_changes(changed).await })
    };
    heard(&changed, "the start of the watch").await;
    let rows = [
        ("configuration.default_client_mtu".to_owned(), b"1400".to_vec()),
        ("configuration.local_auth_enabled".to_owned(), b"false".to_vec()),
    ];
    other.put_settings(&rows).await.unwrap();
    heard(&changed, "a PATCH's rows").await;
    other.put_settings(&[("configuration.default_client_mtu".to_owned(), b"1300".to_vec())]).await.unwrap();
    heard(&changed, "a change of an existing row").await;
    assert!(!watcher.is_finished(), "the watch runs until the store is closed");
    watcher.abort();
}
