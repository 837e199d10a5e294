//! The process's memory after start-up.
//!
//! Starting `serve` allocates and frees a few megabytes on the main thread (the database's
//! migrations, the OpenAPI document, the configuration); what is allocated after them and
//! lives on (the router, the stores' caches) sits above that freed space, so glibc cannot
//! give it back by shrinking its heap and keeps it resident: about 4 MB of an idle server's
//! 25 (docs/benchmarks.md, "Idle RSS"). `malloc_trim` hands every arena's free pages back.
//!
//! Start-up also runs code that never runs again (the command line, the migrations, the
//! OpenAPI document, the routers' assembly), scattered over the binary: the kernel maps each
//! page it faults in with its neighbours, so three quarters of the program's code stayed
//! mapped in an idle server. [`release_start_up_code`] unmaps it, when start-up is done and
//! again once the tasks' first passes are over ([`FIRST_PASSES`]); what runs later is mapped
//! again from the page cache on its first use.

use crate::supervisor::Supervisor;

/// How long after start-up the background tasks' first passes (the data plane's first
/// reconcile, the janitors' first sweeps) are over, and their code with them.
const FIRST_PASSES: std::time::Duration = std::time::Duration::from_secs(5);

/// Gives back the heap start-up freed and unmaps the code it ran: now, when start-up is
/// done, and once more under `tasks` after [`FIRST_PASSES`].
pub fn release_start_up(tasks: &mut Supervisor) {
    release();
    tasks.spawn("start-up memory release", async {
        tokio::time::sleep(FIRST_PASSES).await;
        release();
        std::future::pending().await
    });
}

fn release() {
    let released = release_freed_heap();
    let code_bytes = release_start_up_code();
    tracing::debug!(released, code_bytes, "start-up's freed heap given back, its code unmapped");
}

/// Gives the system back the heap pages the allocator holds free, in every arena; whether
/// any were. Only at [`release_start_up`]'s two moments: it locks each arena in turn, which
/// a busy server should not pay on every request. A no-op where the C library is not glibc.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code, reason = "malloc_trim: the one call into the C library's allocator")]
fn release_freed_heap() -> bool {
    // SAFETY: malloc_trim takes no pointer and no state of the caller's; glibc serialises it
    // with every other call to its allocator.
    unsafe { libc::malloc_trim(0) == 1 }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn release_freed_heap() -> bool {
    false
}

/// Unmaps the pages of this program's code (its executable mappings: read-only, private,
/// backed by the binary's file); the bytes unmapped. The pages stay in the page cache, so
/// code that runs again is mapped back by a minor fault.
#[cfg(target_os = "linux")]
fn release_start_up_code() -> usize {
    let Ok(exe) = std::env::current_exe() else { return 0 };
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else { return 0 };
    let exe = exe.to_string_lossy();
    code_mappings(&maps, &exe).map(|(start, end)| if unmap_pages(start, end) { end - start } else { 0 }).sum()
}

#[cfg(not(target_os = "linux"))]
fn release_start_up_code() -> usize {
    0
}

/// The address ranges of `exe`'s code in `maps` (the format of `/proc/self/maps`): mapped
/// `r-xp`, never written. The writable and relocated mappings are left alone: their pages
/// hold what the program and the loader wrote, which the file does not.
fn code_mappings<'m>(maps: &'m str, exe: &'m str) -> impl Iterator<Item = (usize, usize)> + 'm {
    maps.lines().filter_map(move |line| {
        let mut fields = line.splitn(6, ' ');
        let (range, perms) = (fields.next()?, fields.next()?);
        let path = fields.nth(3)?.trim_start();
        if perms != "r-xp" || path != exe {
            return None;
        }
        let (start, end) = range.split_once('-')?;
        Some((usize::from_str_radix(start, 16).ok()?, usize::from_str_radix(end, 16).ok()?))
    })
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code, reason = "madvise: dropping the page mappings of the program's own code")]
fn unmap_pages(start: usize, end: usize) -> bool {
    // SAFETY: [start, end) is a whole mapping of the program's executable file, read-only
    // and private, which nothing writes: MADV_DONTNEED drops its page table entries only,
    // and every later access finds the same bytes in the file. No Rust value lives there.
    unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED) == 0 }
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

    #[test]
    fn only_the_programs_own_code_is_unmapped() {
        let maps = "\
55d0a000-55d0b000 r--p 00000000 fe:01 42 /usr/bin/ferrozone
55d0b000-55d0f000 r-xp 00001000 fe:01 42 /usr/bin/ferrozone
55d0f000-55d10000 r--p 00005000 fe:01 42 /usr/bin/ferrozone
55d10000-55d11000 rw-p 00006000 fe:01 42 /usr/bin/ferrozone
7f00a000-7f00b000 r-xp 00001000 fe:01 77 /usr/lib/x86_64-linux-gnu/libc.so.6
7f00c000-7f00d000 r-xp 00000000 00:00 0 
7f00e000-7f00f000 r-xp 00001000 fe:01 43 /usr/bin/ferrozone-other
";
        let found: Vec<_> = code_mappings(maps, "/usr/bin/ferrozone").collect();
        assert_eq!(found, [(0x55d0_b000, 0x55d0_f000)]);
        let replaced = "56000000-56004000 r-xp 00001000 fe:01 42 /usr/bin/ferrozone (deleted)\n";
        assert_eq!(code_mappings(replaced, "/usr/bin/ferrozone (deleted)").count(), 1);
    }

    /// The code keeps running after its pages are dropped: they come back from the file.
    #[test]
    fn code_runs_on_after_its_pages_are_released() {
        assert!(release_start_up_code() > 0, "this test's own code is mapped r-xp");
        let text: String = (0..1000).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
        assert_eq!(serde_json::to_string(&text).map(|s| s.len()).ok(), Some(1002));
    }
}
