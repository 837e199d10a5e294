//! The device rules on the in-memory database of [`crate::rules::fake`].

use std::net::Ipv4Addr;

use super::*;
use crate::crypto::Sealed;
use crate::ipam::Pool;
use crate::model::{CustomConfig, Role, UseDefaults};
use crate::rules::fake::FakeDb;
use crate::rules::{LIMIT_REACHED, TAKEN};

/// A device of `user_id` with a name and key of its own, asking for `ipv4`.
pub(in crate::rules) fn new_device(user_id: Uuid, ipv4: AddressRequest<Ipv4Addr>) -> DeviceInsert {
    let id = Uuid::new_v4();
    DeviceInsert {
        id,
        user_id,
        name: id.to_string(),
        description: None,
        public_key: id.to_string(),
        preshared_key: Sealed(Vec::new()),
        ipv4,
        ipv6: AddressRequest::None,
        use_default: UseDefaults::default(),
        custom: CustomConfig::default(),
        now: Timestamp::from_micros(1),
    }
}

/// `10.0.0.0/29` with gateway `10.0.0.1`: `10.0.0.2` to `10.0.0.6` are assignable.
pub(in crate::rules) fn pools() -> Pools {
    let pool = Pool::new("10.0.0.0/29".parse().unwrap(), "10.0.0.1".parse().unwrap()).unwrap();
    Pools { v4: Some(pool), v6: None }
}

pub(in crate::rules) fn errors_on(err: DomainError, field: &str) -> Vec<String> {
    let DomainError::Invalid(errors) = err else { panic!("not Invalid: {err:?}") };
    errors.get(field).unwrap_or_else(|| panic!("no error on {field}: {errors:?}")).to_vec()
}

fn v4(last: u8) -> Ipv4Addr {
    Ipv4Addr::new(10, 0, 0, last)
}

#[tokio::test]
async fn the_device_limit_counts_the_owners_devices() {
    let db = FakeDb::default();
    let (user, other) = (db.add_user(Role::Unprivileged), db.add_user(Role::Unprivileged));
    for _ in 0..2 {
        insert_device(&db, &new_device(user, AddressRequest::None), &pools(), 2).await.unwrap();
    }
    let third = insert_device(&db, &new_device(user, AddressRequest::None), &pools(), 2).await;
    assert_eq!(errors_on(third.unwrap_err(), "base"), [LIMIT_REACHED]);
    insert_device(&db, &new_device(other, AddressRequest::None), &pools(), 2).await.unwrap();
    assert_eq!(db.state().devices.len(), 3);
}

#[tokio::test]
async fn the_owner_must_exist() {
    let db = FakeDb::default();
    let missing = insert_device(&db, &new_device(Uuid::new_v4(), AddressRequest::Assign), &pools(), 5).await;
    assert_eq!(errors_on(missing.unwrap_err(), "user_id"), ["does not exist"]);
}

#[tokio::test]
async fn an_assigned_address_lost_to_a_race_is_retried_looking_first() {
    let db = FakeDb::trusting();
    let user = db.add_user(Role::Unprivileged);
    // Given ahead of the cursor: the first attempt takes it unchecked and fails.
    insert_device(&db, &new_device(user, AddressRequest::Given(v4(2))), &pools(), 9).await.unwrap();
    let before = db.begun();
    let device = insert_device(&db, &new_device(user, AddressRequest::Assign), &pools(), 9).await.unwrap();
    assert_eq!((device.ipv4, db.begun() - before), (Some(v4(3)), 2));
}

#[tokio::test]
async fn a_given_address_that_is_taken_is_not_retried() {
    let db = FakeDb::trusting();
    let user = db.add_user(Role::Unprivileged);
    insert_device(&db, &new_device(user, AddressRequest::Given(v4(4))), &pools(), 9).await.unwrap();
    let before = db.begun();
    let again = insert_device(&db, &new_device(user, AddressRequest::Given(v4(4))), &pools(), 9).await;
    assert_eq!((errors_on(again.unwrap_err(), "ipv4"), db.begun() - before), (vec![TAKEN.to_owned()], 1));
}

#[tokio::test]
async fn a_failed_insert_changes_nothing() {
    let db = FakeDb::default();
    let user = db.add_user(Role::Unprivileged);
    db.state().released.insert((4, "10.0.0.5".into()));
    let first = insert_device(&db, &new_device(user, AddressRequest::None), &pools(), 9).await.unwrap();
    let clash = DeviceInsert { public_key: first.public_key, ..new_device(user, AddressRequest::Given(v4(5))) };
    let failed = insert_device(&db, &clash, &pools(), 9).await;
    assert_eq!(errors_on(failed.unwrap_err(), "public_key"), [TAKEN]);
    assert!(db.state().released.contains(&(4, "10.0.0.5".into())), "rolled back");
}

#[tokio::test]
async fn a_new_address_leaves_the_released_list_and_the_old_one_enters_it() {
    let db = FakeDb::default();
    let user = db.add_user(Role::Unprivileged);
    let device = insert_device(&db, &new_device(user, AddressRequest::Given(v4(2))), &pools(), 9).await.unwrap();
    db.state().released.insert((4, "10.0.0.6".into()));
    let update = DeviceUpdate {
        name: device.name.clone(),
        description: None,
        public_key: device.public_key.clone(),
        preshared_key: None,
        ipv4: Some(v4(6)),
        ipv6: None,
        use_default: device.use_default,
        custom: device.custom.clone(),
    };
    let now = Timestamp::from_micros(7);
    let changed = update_device(&db, device.id, &update, now).await.unwrap();
    assert_eq!((changed.ipv4, changed.updated_at), (Some(v4(6)), now));
    assert_eq!(db.state().released.iter().collect::<Vec<_>>(), [&(4, "10.0.0.2".to_owned())]);
    let unchanged = update_device(&db, device.id, &update, Timestamp::from_micros(8)).await.unwrap();
    assert_eq!(unchanged.updated_at, now, "nothing to write");
    assert!(matches!(update_device(&db, Uuid::nil(), &update, now).await, Err(DomainError::NotFound)));
}
