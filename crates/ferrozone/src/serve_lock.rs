//! One `serve` per SQLite database, and no restore under a running one.
//!
//! `serve` holds an exclusive `flock` on `<database>.lock` for as long as it runs; `restore`
//! takes the same lock for as long as it swaps files. The kernel drops the lock when its
//! holder exits, however it exits (`kill -9` too), so a stale lock file blocks nobody. The
//! lock is on a file of its own, never replaced, because a restore replaces the database
//! file itself. The CLI's other commands take no lock: they may write while `serve` runs.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use rustix::fs::{flock, FlockOperation};

use crate::config::Config;

/// The held lock: released when dropped, or when the process ends.
#[derive(Debug)]
pub struct DatabaseLock {
    _file: File,
}

/// `serve`'s lock on the configured SQLite database file; none for PostgreSQL (several
/// processes may share one) or an in-memory database.
pub fn for_serve(config: &Config) -> anyhow::Result<Option<DatabaseLock>> {
    let url = config.database_url();
    if !url.to_ascii_lowercase().starts_with("sqlite:") {
        return Ok(None);
    }
    let Ok(database) = ferrozone_store::sqlite::backup::database_file(&url) else { return Ok(None) };
    let lock = acquire(&database)?.map_err(|holder| {
        anyhow::anyhow!(
            "the database {} is in use by process {holder} (another `ferrozone serve`, or a `ferrozone restore`): \
             one `serve` per SQLite database",
            database.display()
        )
    })?;
    Ok(Some(lock))
}

/// Takes the lock on `database`, or says which process holds it (`Err(pid)`, as that process
/// wrote it into the lock file; `?` if unreadable).
pub fn acquire(database: &Path) -> anyhow::Result<Result<DatabaseLock, String>> {
    let path = lock_file(database);
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&path).with_context(|| format!("opening the lock file {}", path.display()))?;
    match flock(&file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => {}
        Err(rustix::io::Errno::WOULDBLOCK) => return Ok(Err(holder(&mut file))),
        Err(e) => bail!("locking {}: {e}", path.display()),
    }
    file.set_len(0)?;
    file.rewind()?;
    write!(file, "{}", std::process::id())?;
    Ok(Ok(DatabaseLock { _file: file }))
}

/// The process id the lock's holder wrote into the lock file.
fn holder(file: &mut File) -> String {
    let mut text = String::new();
    match file.read_to_string(&mut text) {
        Ok(_) if !text.trim().is_empty() => text.trim().to_owned(),
        _ => "?".to_owned(),
    }
}

/// `<database>.lock`, beside the database.
pub fn lock_file(database: &Path) -> PathBuf {
    let mut name = database.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_and_told_who_holds_it_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let database = dir.path().join("ferrozone.db");
        let first = acquire(&database).unwrap().unwrap();
        let holder = acquire(&database).unwrap().unwrap_err();
        assert_eq!(holder, std::process::id().to_string());
        drop(first);
        assert!(acquire(&database).unwrap().is_ok());
        assert!(lock_file(&database).exists());
    }
}
