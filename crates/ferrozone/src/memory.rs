//! The process's memory after start-up.
//!
//! Starting `serve` allocates and frees a few megabytes on the main thread (the database's
//! migrations, the OpenAPI document, the configuration); what is allocated after them and
//! lives on (the router, the stores' caches) sits above that freed space, so glibc cannot
//! give it back by shrinking its heap and keeps it resident: about 4 MB of an idle server's
//! 25 (docs/benchmarks.md, "Idle RSS"). `malloc_trim` hands every arena's free pages back.

/// Gives the system back the heap pages the allocator holds free, in every arena; whether
/// any were. Called once when start-up is done: it locks each arena in turn, which a busy
/// server should not pay on every request. A no-op where the C library is not glibc.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code, reason = "malloc_trim: the one call into the C library's allocator")]
pub fn release_freed_heap() -> bool {
    // SAFETY: malloc_trim takes no pointer and no state of the caller's; glibc serialises it
    // with every other call to its allocator.
    unsafe { libc::malloc_trim(0) == 1 }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn release_freed_heap() -> bool {
    false
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    use super::*;

    /// Many small blocks freed below one that stays: glibc cannot shrink its heap past the
    /// one that stays, and keeps the freed pages until it is asked for them.
    #[test]
    fn freed_pages_below_a_live_block_are_given_back() {
        let freed: Vec<Box<[u8; 4000]>> = (0..2000).map(|i| Box::new([i as u8; 4000])).collect();
        let stays = Box::new([1u8; 4000]);
        drop(freed);
        assert!(release_freed_heap(), "8 MB freed below a live block, and nothing given back");
        assert_eq!(stays[0], 1);
    }
}
