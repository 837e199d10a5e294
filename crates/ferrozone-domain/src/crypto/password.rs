//! Password hashing with argon2id. Hashing is deliberately slow: call these from the
//! password threads ([`crate::service::password_gate`]), never on the async runtime.
//!
//! A verification reuses its thread's argon2 memory (19 MiB) instead of allocating it
//! afresh: glibc keeps freed blocks of that size in the thread's arena, so fresh
//! allocations let the resident memory grow with every thread and arena that ever verified.

use std::cell::RefCell;
use std::sync::OnceLock;

use argon2::password_hash::{rand_core::OsRng, PasswordHash, PasswordHasher, SaltString};
use argon2::{Algorithm, Argon2, Block, Params, Version};
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

/// OWASP's argon2id recommendation: 19 MiB, 2 iterations, 1 lane.
const MEMORY_KIB: u32 = 19 * 1024;

fn params() -> Params {
    Params::new(MEMORY_KIB, 2, 1, None).unwrap_or_else(|_| unreachable!("constant argon2 parameters are valid"))
}

fn argon2() -> Argon2<'static> {
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params())
}

thread_local! {
    /// This thread's argon2 memory, kept between verifications.
    static MEMORY: RefCell<Vec<Block>> = const { RefCell::new(Vec::new()) };
}

#[cfg(test)]
thread_local! {
    /// The verifications this thread computed, for the tests to see what was not.
    static RUNS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

pub fn hash_password(password: &str) -> anyhow::Result<String> {
    let salt = SaltString::generate(&mut OsRng);
    argon2()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| anyhow::anyhow!("hashing a password failed: {e}"))
}

/// The most memory a stored hash may ask a verification for: Firezone 0.7's own hashes
/// (128 MiB), the costliest Ferrozone imports.
pub const MAX_MEMORY_KIB: u32 = 128 * 1024;
/// The most work (memory × passes) a stored hash may ask for: Firezone's 128 MiB × 8.
const MAX_WORK_KIB: u64 = 128 * 1024 * 8;
const MAX_LANES: u32 = 16;
const MAX_OUTPUT: usize = 64;

/// Why a stored hash is not verified: it asks for more than [`MAX_MEMORY_KIB`] or more
/// work than Firezone's own hashes, so that one password attempt could take seconds and
/// gigabytes. Such a hash is refused without computing; its user must get a new password.
/// `None` for a hash within the bounds, and for what is not an argon2 hash at all.
pub fn excessive_cost(phc: &str) -> Option<String> {
    let hash = PasswordHash::new(phc).ok()?;
    let params = Params::try_from(&hash).ok()?;
    let within = params.m_cost() <= MAX_MEMORY_KIB
        && u64::from(params.m_cost()) * u64::from(params.t_cost()) <= MAX_WORK_KIB
        && params.p_cost() <= MAX_LANES
        && hash.hash.is_some_and(|h| h.len() <= MAX_OUTPUT);
    (!within).then(|| {
        format!(
            "its argon2 hash asks for more than Ferrozone verifies (m={} KiB, t={}, p={}; at most m={MAX_MEMORY_KIB} \
             and m×t={MAX_WORK_KIB})",
            params.m_cost(),
            params.t_cost(),
            params.p_cost()
        )
    })
}

/// Whether `password` matches `phc`. A hash over the bounds of [`excessive_cost`] never
/// matches, and is not computed.
pub fn verify_password(password: &str, phc: &str) -> bool {
    excessive_cost(phc).is_none()
        && PasswordHash::new(phc).is_ok_and(|hash| matches(password.as_bytes(), &hash).unwrap_or(false))
}

/// Whether `password` hashes to `hash` with the algorithm, version, parameters and salt
/// `hash` names; `None` when `hash` is not a usable argon2 hash.
fn matches(password: &[u8], hash: &PasswordHash<'_>) -> Option<bool> {
    let algorithm = Algorithm::try_from(hash.algorithm).ok()?;
    let version = hash.version.map_or(Ok(Version::default()), Version::try_from).ok()?;
    let params = Params::try_from(hash).ok()?;
    let expected = hash.hash?;
    let mut salt = [0u8; 64];
    let salt = hash.salt?.decode_b64(&mut salt).ok()?;
    let mut out = Zeroizing::new(vec![0u8; expected.len()]);
    run(&Argon2::new(algorithm, version, params), password, salt, &mut out).ok()?;
    Some(bool::from(out.as_slice().ct_eq(expected.as_bytes())))
}

/// Runs argon2 in this thread's kept memory when the parameters fit in our own 19 MiB,
/// else (a hash made with more memory) in memory of its own, given back at once.
fn run(argon2: &Argon2<'_>, password: &[u8], salt: &[u8], out: &mut [u8]) -> argon2::Result<()> {
    #[cfg(test)]
    RUNS.with(|runs| runs.set(runs.get() + 1));
    let needed = argon2.params().block_count();
    if needed > params().block_count() {
        return argon2.hash_password_into(password, salt, out);
    }
    MEMORY.with_borrow_mut(|memory| {
        if memory.len() < needed {
            memory.resize(params().block_count(), Block::default());
        }
        argon2.hash_password_into_with_memory(password, salt, out, memory.as_mut_slice())
    })
}

/// Verifies against `phc`, or against a fixed dummy hash when there is none or it is over
/// the bounds of [`excessive_cost`], so that the time taken does not tell whether the
/// account exists or has a usable password.
pub fn verify_password_or_dummy(password: &str, phc: Option<&str>) -> bool {
    static DUMMY: OnceLock<String> = OnceLock::new();
    match phc.filter(|phc| excessive_cost(phc).is_none()) {
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
        assert!(!verify_password("x", "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0"), "no hash");
    }

    #[test]
    fn hashes_made_with_other_parameters_still_verify() {
        for (m, t, p, algorithm, version) in [
            (4096, 1, 1, Algorithm::Argon2id, Version::V0x13),
            (8192, 3, 2, Algorithm::Argon2i, Version::V0x10),
            (32 * 1024, 1, 1, Algorithm::Argon2id, Version::V0x13),
        ] {
            let argon2 = Argon2::new(algorithm, version, Params::new(m, t, p, None).unwrap());
            let salt = SaltString::generate(&mut OsRng);
            let phc = argon2.hash_password(b"old password", &salt).unwrap().to_string();
            assert!(verify_password("old password", &phc), "{phc}");
            assert!(!verify_password("old passwore", &phc), "{phc}");
        }
    }

    /// A hash asking for 4 GiB: one verification would take seconds and that memory.
    const HUGE: &str = "$argon2id$v=19$m=4194304,t=3,p=4$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g";

    #[test]
    fn a_hash_over_the_bounds_is_refused_without_computing() {
        let runs = || RUNS.with(std::cell::Cell::get);
        let before = runs();
        assert!(!verify_password("anything", HUGE));
        assert_eq!(runs(), before, "nothing was computed");
        assert!(excessive_cost(HUGE).unwrap().contains("m=4194304 KiB, t=3, p=4"));
        // In its place at sign-in, the dummy: the time does not tell this account apart.
        assert!(!verify_password_or_dummy("anything", Some(HUGE)));
        assert_eq!(runs(), before + 1, "one verification, of the dummy");
        for over in ["m=262144,t=1,p=1", "m=65536,t=17,p=1", "m=19456,t=2,p=17"] {
            let phc = format!("$argon2id$v=19${over}$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g");
            assert!(excessive_cost(&phc).is_some(), "{over}");
        }
        for within in ["m=131072,t=8,p=4", "m=65536,t=3,p=4", "m=19456,t=2,p=1"] {
            let phc = format!("$argon2id$v=19${within}$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g");
            assert_eq!(excessive_cost(&phc), None, "{within}");
        }
    }
}
