//! Secrets: encryption at rest, WireGuard keys, API tokens, session secrets and password hashes.

mod cipher;
mod form_token;
pub mod legacy_token;
mod password;
mod pending_sign_in;
mod session;
mod token;
pub mod totp;
mod wg;

pub use cipher::{Cipher, Sealed};
pub use form_token::{FormTokenKey, FORM_TOKEN_PURPOSE};
pub use password::{excessive_cost, hash_password, verify_password, verify_password_or_dummy};
pub use pending_sign_in::{PendingSignIn, PendingSignInKey, PENDING_SIGN_IN_PURPOSE};
pub use session::{csrf_token, hash_session_secret, random_secret};
pub use token::{hash_token, new_token, prefixed_secret, TOKEN_PREFIX};
pub use wg::{generate_keypair, generate_psk, is_valid_key, public_key_of, KeyPair, PrivateKey};

/// Key generations and sealings done by this thread, for tests that check a rejected request
/// costs no key work.
#[cfg(test)]
pub(crate) mod key_work {
    use std::cell::Cell;

    thread_local!(static DONE: Cell<usize> = const { Cell::new(0) });

    pub fn done() -> usize {
        DONE.with(Cell::get)
    }

    pub(super) fn count() {
        DONE.with(|d| d.set(d.get() + 1));
    }
}
