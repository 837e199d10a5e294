//! No restore under a running `serve`.
//!
//! Each `serve` holds a shared `flock` on `<database>.lock` for as long as it runs (several
//! may share one SQLite file); `restore` takes it exclusively for as long as it swaps files,
//! so it is refused while any `serve` runs, and a `serve` started during a restore is
//! refused. The kernel drops the lock when its holder exits, however it exits (`kill -9`
//! too), so a stale lock file blocks nobody. The lock is on a file of its own, never
//! replaced, because a restore replaces the database file itself. The CLI's other commands
//! take no lock: they may write while `serve` runs.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use rustix::fs::{flock, FlockOperation};

use crate::config::Config;

/// The held lock: released when dropped, or when the process ends.
#[derive(Debug)]
pub struct DatabaseLock {
    file: File,
}

impl Drop for DatabaseLock {
    /// Unlocks before the file closes: the lock belongs to the open file description, which
    /// a child process shares from its fork until its exec, so closing alone could leave it
    /// held a moment longer.
    fn drop(&mut self) {
        let _ = flock(&self.file, FlockOperation::Unlock);
    }
}

/// `serve`'s lock on the configured SQLite database file; none for PostgreSQL (several
/// processes may share one) or an in-memory database.
pub fn for_serve(config: &Config) -> anyhow::Result<Option<DatabaseLock>> {
    let url = config.database_url();
    if !url.to_ascii_lowercase().starts_with("sqlite:") {
        return Ok(None);
    }
    let Ok(database) = ferrozone_store::sqlite::backup::database_file(&url) else { return Ok(None) };
    let lock = acquire(&database, Mode::Shared)?.map_err(|holder| {
        anyhow::anyhow!(
            "the database {} is being restored by process {holder}: start when it is done",
            database.display()
        )
    })?;
    Ok(Some(lock))
}

/// How the lock is held: shared by the `serve`s, exclusive for a restore.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Shared,
    Exclusive,
}

/// Takes the lock on `database`, or says who holds it in the way that bars `mode`
/// (`Err(pid)` of a restore, as it wrote it into the lock file; `?` when none is written,
/// as for the `serve`s, which share it).
pub fn acquire(database: &Path, mode: Mode) -> anyhow::Result<Result<DatabaseLock, String>> {
    let path = lock_file(database);
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        crate::startup::create_private_dir(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&path).with_context(|| format!("opening the lock file {}", path.display()))?;
    let operation = match mode {
        Mode::Shared => FlockOperation::NonBlockingLockShared,
        Mode::Exclusive => FlockOperation::NonBlockingLockExclusive,
    };
    match flock(&file, operation) {
        Ok(()) => {}
        Err(rustix::io::Errno::WOULDBLOCK) => return Ok(Err(holder(&mut file))),
        Err(e) => bail!("locking {}: {e}", path.display()),
    }
    if mode == Mode::Shared {
        return Ok(Ok(DatabaseLock { file }));
    }
    file.set_len(0)?;
    file.rewind()?;
    write!(file, "{}", std::process::id())?;
    Ok(Ok(DatabaseLock { file }))
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
    fn serves_share_the_lock_and_a_restore_waits_for_all_of_them() {
        let dir = tempfile::tempdir().unwrap();
        let database = dir.path().join("ferrozone.db");
        let first = acquire(&database, Mode::Shared).unwrap().unwrap();
        let second = acquire(&database, Mode::Shared).unwrap().unwrap();
        assert!(acquire(&database, Mode::Exclusive).unwrap().is_err());
        drop(first);
        assert!(acquire(&database, Mode::Exclusive).unwrap().is_err());
        drop(second);
        let restore = acquire(&database, Mode::Exclusive).unwrap().unwrap();
        let holder = acquire(&database, Mode::Shared).unwrap().unwrap_err();
        assert_eq!(holder, std::process::id().to_string());
        drop(restore);
        assert!(acquire(&database, Mode::Shared).unwrap().is_ok());
        assert!(lock_file(&database).exists());
    }
}
