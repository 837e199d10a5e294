//! The data directory's files are its owner's alone, also in a directory that existed
//! (and was open to others) before the first start, which is warned about.

#![cfg(unix)]

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use crate::harness::{command, Server};

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// What `ferrozone user list` logs on standard error.
fn warnings(dir: &Path) -> String {
    let out = command(dir, &[]).args(["user", "list"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

const WARNING: &str = "the data directory is open to other users";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_are_private_in_an_existing_shared_data_directory() {
    let dir = tempfile::tempdir().unwrap();
    chmod(dir.path(), 0o755);
    let logged = warnings(dir.path());
    assert!(logged.contains(WARNING) && logged.contains("755"), "{logged}");

    // Serving: the write-ahead log and the shared-memory index exist too.
    let _server = Server::start(dir.path(), &[]).await;
    for name in ["ferrozone.db", "ferrozone.db-wal", "ferrozone.db-shm", "secret.key"] {
        let mode = std::fs::metadata(dir.path().join(name)).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600, "{name}: {mode:03o}");
    }

    chmod(dir.path(), 0o700);
    let logged = warnings(dir.path());
    assert!(!logged.contains(WARNING), "{logged}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_serve_makes_the_data_directory_its_owners_alone() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("data");
    let server = Server::start(&dir, &[]).await;
    let mode = std::fs::metadata(&dir).unwrap().mode() & 0o777;
    assert_eq!(mode, 0o700, "{mode:03o}");
    drop(server);
    let logged = warnings(&dir);
    assert!(!logged.contains(WARNING), "{logged}");
}
