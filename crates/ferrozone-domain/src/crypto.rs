//! Secrets: encryption at rest, WireGuard keys, API tokens, session secrets and password hashes.

mod cipher;
mod form_token;
mod password;
mod session;
mod token;
mod wg;

pub use cipher::{Cipher, Sealed};
pub use form_token::{FormTokenKey, FORM_TOKEN_PURPOSE};
pub use password::{hash_password, verify_password, verify_password_or_dummy};
pub use session::{csrf_token, hash_session_secret, random_secret};
pub use token::{hash_token, new_token, TOKEN_PREFIX};
pub use wg::{generate_keypair, generate_psk, is_valid_key, public_key_of, KeyPair, PrivateKey};
