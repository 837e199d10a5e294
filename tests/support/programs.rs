//! Programs from outside the Rust toolchain that some tests run: Debian's `pebble`, Prometheus
//! and `promtool`, Node.js for the test identity providers, PostgreSQL's programs.
//!
//! On a developer's machine without one, the test that needs it says so on the terminal and
//! is skipped (it returns before doing anything, and so passes): `cargo test --workspace`
//! passes on a fresh clone. In CI (`CI` set to anything but empty, `0` or `false`; `.ci/run`
//! installs every one of them) a missing program fails the test instead.
//!
//! Each test crate that needs it includes this file with `#[path]` (a test crate cannot
//! depend on another's test code).

#![allow(dead_code, reason = "each test crate uses a part of it")]

use std::io::Write as _;
use std::path::PathBuf;

/// `program` on the `PATH`; `None` when it is missing and the test is to be skipped (see
/// [`missing`]). `install` says how to get it, as in "apt-get install pebble".
pub fn find(program: &str, install: &str) -> Option<PathBuf> {
    let found = on_path(program);
    if found.is_none() {
        missing(program, install);
    }
    found
}

/// Whether every one of `programs` is on the `PATH` (each missing one reported as by
/// [`find`]).
pub fn all(programs: &[&str], install: &str) -> bool {
    programs.iter().filter(|program| find(program, install).is_none()).count() == 0
}

/// `program` on the `PATH`, quietly.
pub fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(program)).find(|candidate| candidate.is_file())
}

/// Reports `program` as missing: in CI the test fails here; elsewhere a note says the test
/// is skipped, and the caller returns.
pub fn missing(program: &str, install: &str) {
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    assert!(!in_ci(), "{test} needs `{program}`, which is missing, and CI must run it: {install}");
    // Straight to the terminal: the test harness shows what `eprintln!` prints only when a
    // test fails, and a skipped test passes.
    let _ = writeln!(std::io::stderr(), "skipped: {test} needs `{program}` ({install})");
}

/// Whether this is a CI run, where nothing may be skipped.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|value| !matches!(value.trim(), "" | "0" | "false"))
}
