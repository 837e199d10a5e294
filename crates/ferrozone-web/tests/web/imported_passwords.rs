//! Users imported from Firezone sign in with their Firezone passwords: argon2id hashes
//! whose parameters (m=131072, t=8, p=4) are read from the hash itself.

use argon2::password_hash::{PasswordHasher, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use axum::http::StatusCode;
use ferrozone_domain::import::{ImportBatch, ImportMode};
use ferrozone_domain::model::Role;
use ferrozone_domain::{Timestamp, User};

use crate::helpers::TestApp;
use crate::signin::{set_cookies, Browser};

/// Firezone's default admin password was as short as 5 characters; Ferrozone's length
/// rules apply to new passwords only.
const FIREZONE_PASSWORD: &str = "short";

/// The hash Firezone 0.7 (argon2_elixir 2.4) stored for `password`.
fn firezone_hash(password: &str) -> String {
    let params = Params::new(131_072, 8, 4, Some(32)).unwrap();
    let salt = SaltString::from_b64("c2FsdHNhbHRzYWx0c2FsdA").unwrap();
    let hash = Argon2::new(Algorithm::Argon2id, Version::V0x13, params).hash_password(password.as_bytes(), &salt);
    hash.unwrap().to_string()
}

#[tokio::test]
async fn an_imported_user_signs_in_with_the_firezone_password() {
    let app = TestApp::new().await;
    let hash = firezone_hash(FIREZONE_PASSWORD);
    assert!(hash.starts_with("$argon2id$v=19$m=131072,t=8,p=4$"), "{hash}");
    let user = User::new("fz-user@example.com".into(), Role::Unprivileged, Some(hash), Timestamp::now());
    let batch = ImportBatch { users: vec![user], ..ImportBatch::default() };
    app.store.import(&batch, ImportMode::Merge).await.unwrap();

    let mut browser = Browser::new(&app);
    let res = browser.sign_in("fz-user@example.com", FIREZONE_PASSWORD, "/").await;
    res.expect_status(StatusCode::SEE_OTHER);
    assert!(set_cookies(&res).iter().any(|(name, _)| name == "ferrozone_session"), "signed in");

    let mut other = Browser::new(&app);
    let wrong = other.sign_in("fz-user@example.com", "shorT", "/").await;
    assert_ne!(wrong.status, StatusCode::SEE_OTHER, "a wrong password is refused");
}

/// A stored hash asking for more than Firezone's own (here 256 MiB, over the 128 MiB bound)
/// is never computed: even the right password is refused, as the wrong one is, and the
/// user must be given a new password (docs/operations.md).
#[tokio::test]
async fn a_hash_over_the_bounds_is_refused_even_with_the_right_password() {
    let app = TestApp::new().await;
    let params = Params::new(256 * 1024, 1, 1, Some(32)).unwrap();
    let salt = SaltString::from_b64("c2FsdHNhbHRzYWx0c2FsdA").unwrap();
    let hash =
        Argon2::new(Algorithm::Argon2id, Version::V0x13, params).hash_password(FIREZONE_PASSWORD.as_bytes(), &salt);
    let hash = hash.unwrap().to_string();
    assert!(ferrozone_domain::crypto::excessive_cost(&hash).is_some(), "{hash}");
    let user = User::new("costly@example.com".into(), Role::Unprivileged, Some(hash), Timestamp::now());
    let batch = ImportBatch { users: vec![user], ..ImportBatch::default() };
    app.store.import(&batch, ImportMode::Merge).await.unwrap();

    let mut browser = Browser::new(&app);
    let res = browser.sign_in("costly@example.com", FIREZONE_PASSWORD, "/").await;
    assert_ne!(res.status, StatusCode::SEE_OTHER, "not signed in");
    assert!(set_cookies(&res).iter().all(|(name, _)| name != "ferrozone_session"), "no session");
}
