//! Stamps the binary with the commit it was built from, for `ferrozone --version` and the
//! console's server report.
//!
//! `FERROZONE_COMMIT` in the build's environment wins (a build from a tarball has no git
//! to ask); otherwise `git rev-parse --short HEAD`; outside git the commit is unknown.
//! The script reruns only when HEAD moves (the HEAD file, the branch's ref, packed refs),
//! not on every source change. Its outputs are `BUILD_COMMIT` and `BUILD_VERSION_LINE`:
//! not `FERROZONE_*` names, which `cargo run` would pass on to the binary as settings.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=FERROZONE_COMMIT");
    let given = std::env::var("FERROZONE_COMMIT").ok().filter(|c| !c.trim().is_empty());
    let commit = given.map(|c| c.trim().to_owned()).or_else(|| {
        watch_git_head();
        git(&["rev-parse", "--short", "HEAD"])
    });
    if let Some(commit) = &commit {
        println!("cargo:rustc-env=BUILD_COMMIT={commit}");
    }
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let commit = commit.as_deref().unwrap_or("unknown");
    println!("cargo:rustc-env=BUILD_VERSION_LINE={version} (commit {commit})");
}

/// Asks for a rerun when HEAD points elsewhere or its branch gets a new commit.
fn watch_git_head() {
    let (Some(git_dir), Some(common_dir)) = (git(&["rev-parse", "--git-dir"]), git(&["rev-parse", "--git-common-dir"]))
    else {
        return;
    };
    let (git_dir, common_dir) = (PathBuf::from(git_dir), PathBuf::from(common_dir));
    let head = git_dir.join("HEAD");
    let branch = std::fs::read_to_string(&head).ok().and_then(|h| h.strip_prefix("ref: ").map(|b| b.trim().to_owned()));
    let mut watched = vec![head, common_dir.join("packed-refs")];
    watched.extend(branch.map(|b| common_dir.join(b)));
    // A missing file would make cargo rerun the script on every build.
    for path in watched.iter().filter(|p| p.exists()) {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

/// The trimmed output of a successful `git` command run in this crate's directory.
fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    (output.status.success() && !text.trim().is_empty()).then(|| text.trim().to_owned())
}
