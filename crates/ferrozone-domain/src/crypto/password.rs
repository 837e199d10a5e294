//! Password hashing with argon2id. Hashing is deliberately slow: call these from a
//! blocking thread (`tokio::task::spawn_blocking`), never on the async runtime.

use std::sync::OnceLock;

use argon2::password_hash::{rand_core::OsRng, PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};

/// OWASP's argon2id recommendation: 19 MiB, 2 iterations, 1 lane.
fn argon2() -> Argon2<'static> {
    let params =
        Params::new(19 * 1024, 2, 1, None).unwrap_or_else(|_| unreachable!("constant argon2 parameters are valid"));
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

pub fn hash_password(password: &str) -> anyhow::Result<String> {
    let salt = SaltString::generate(&mut OsRng);
    argon2()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| anyhow::anyhow!("hashing a password failed: {e}"))
}

pub fn verify_password(password: &str, phc: &str) -> bool {
    PasswordHash::new(phc).is_ok_and(|hash| argon2().verify_password(password.as_bytes(), &hash).is_ok())
}

/// Verifies against `phc`, or against a fixed dummy hash when there is none, so that
/// the time taken does not tell whether the account exists or has a password.
pub fn verify_password_or_dummy(password: &str, phc: Option<&str>) -> bool {
    static DUMMY: OnceLock<String> = OnceLock::new();
    match phc {
        Some(phc) => verify_password(password, phc),
        None => {
            let dummy = DUMMY.get_or_init(|| {
                hash_password("ferrozone dummy password")
                    .expect("hashing a constant password cannot fail: the timing equalisation needs it")
            });
            let _ = verify_password(password, dummy);
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_verifies_only_the_right_password() {
        let h = hash_password("correct horse battery").unwrap();
        assert!(h.starts_with("$argon2id$"));
        assert!(verify_password("correct horse battery", &h));
        assert!(!verify_password("wrong horse battery", &h));
        assert!(!verify_password_or_dummy("anything", None));
        assert!(!verify_password("x", "not a phc string"));
    }
}
