//! Builders and assertions shared by the contract tests.

use std::sync::OnceLock;

use ferrozone_domain::crypto::{generate_keypair, Cipher};
use ferrozone_domain::ipam::{Pool, Pools};
use ferrozone_domain::model::{AddressRequest, CustomConfig, DeviceInsert, Role, UseDefaults, User};
use ferrozone_domain::{DomainError, Timestamp};
use ferrozone_store::testing::{fresh, TestDb};
use uuid::Uuid;

/// A fresh database; panics with the cause when the backend is unreachable.
pub async fn db() -> TestDb {
    match fresh().await {
        Ok(db) => db,
        Err(err) => panic!("cannot create a test database: {err:#}"),
    }
}

pub fn cipher() -> &'static Cipher {
    static CIPHER: OnceLock<Cipher> = OnceLock::new();
    CIPHER.get_or_init(|| Cipher::from_base64(&Cipher::generate_key()).unwrap())
}

pub fn user(email: &str, role: Role) -> User {
    User::new(email.to_owned(), role, None, Timestamp::now())
}

/// Inserts a user and returns it.
pub async fn add_user(db: &TestDb, email: &str, role: Role) -> User {
    let user = user(email, role);
    db.store.insert_user(&user).await.unwrap();
    user
}

/// A device for `user_id` with a unique name and public key, addresses assigned.
pub fn new_device(user_id: Uuid) -> DeviceInsert {
    DeviceInsert {
        id: Uuid::now_v7(),
        user_id,
        name: format!("device-{}", Uuid::new_v4().simple()),
        description: None,
        public_key: generate_keypair().public_key,
        preshared_key: cipher().seal(b"psk"),
        ipv4: AddressRequest::Assign,
        ipv6: AddressRequest::Assign,
        use_default: UseDefaults::default(),
        custom: CustomConfig::default(),
        now: Timestamp::now(),
    }
}

pub fn pool(network: &str, gateway: &str) -> Pool {
    Pool::new(network.parse().unwrap(), gateway.parse().unwrap()).unwrap()
}

/// The default tunnel networks.
pub fn pools() -> Pools {
    Pools { v4: Some(pool("10.3.2.0/24", "10.3.2.1")), v6: Some(pool("fd00::3:2:0/120", "fd00::3:2:1")) }
}

/// Only an IPv4 network.
pub fn v4_only(network: &str, gateway: &str) -> Pools {
    Pools { v4: Some(pool(network, gateway)), v6: None }
}

#[track_caller]
pub fn assert_invalid<T: std::fmt::Debug>(result: Result<T, DomainError>, field: &str, message: &str) {
    match result {
        Err(DomainError::Invalid(errors)) => {
            assert_eq!(errors.get(field), Some(&[message.to_owned()][..]), "errors: {errors:?}")
        }
        other => panic!("expected {field}: {message}, got {other:?}"),
    }
}

#[track_caller]
pub fn assert_not_found<T: std::fmt::Debug>(result: Result<T, DomainError>) {
    assert!(matches!(result, Err(DomainError::NotFound)), "expected NotFound, got {result:?}");
}
