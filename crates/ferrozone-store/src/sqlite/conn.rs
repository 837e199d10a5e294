//! Where an SQLite database lives (its URL) and how its connections are opened.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use rusqlite::{Connection, OpenFlags};
use uuid::Uuid;

use crate::Synchronous;

/// How long a statement waits for another process's write lock before `SQLITE_BUSY`.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Prepared statements kept per connection: every statement of the store fits.
const STATEMENT_CACHE: usize = 64;

/// The writer's page cache, as SQLite's negative `cache_size` (KiB). Every insert touches
/// the leaves of six indexes; with the default 2 MiB, at 100,000 devices those leaves
/// no longer fit and each write reads pages back from the file. One connection has it, so
/// it costs at most this much memory (readers keep the default).
const WRITER_CACHE_KIB: i64 = -32 * 1024;

/// WAL pages after which a commit checkpoints (SQLite's default is 1,000). The pages a
/// batch changes repeat from commit to commit (the audit log's last leaves, a busy owner's
/// index leaves): a checkpoint copies each once however many commits changed it.
const WAL_CHECKPOINT_PAGES: i64 = 4000;

/// The database an `sqlite:` URL names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Location {
    /// A file: `sqlite://relative/path.db`, `sqlite:///absolute/path.db`, `sqlite:path.db`.
    File(PathBuf),
    /// `sqlite::memory:` (or `?mode=memory`): private to this process, gone with the store.
    /// Its name lets every connection of one store reach the same database.
    Memory(String),
}

impl Location {
    pub(crate) fn parse(url: &str) -> anyhow::Result<Self> {
        let rest = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
            .with_context(|| format!("invalid SQLite database URL {url}: it must start with sqlite://"))?;
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        let mut memory = path == ":memory:";
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair {
                "mode=memory" => memory = true,
                "mode=rwc" => {}
                other => bail!("invalid SQLite database URL {url}: unsupported parameter `{other}`"),
            }
        }
        if memory {
            return Ok(Location::Memory(format!("/ferrozone-{}", Uuid::new_v4())));
        }
        if path.is_empty() {
            bail!("invalid SQLite database URL {url}: no file name");
        }
        Ok(Location::File(PathBuf::from(path)))
    }

    pub(crate) fn is_memory(&self) -> bool {
        matches!(self, Location::Memory(_))
    }

    /// Creates the directories a database file needs, and the file itself readable by its
    /// owner only: SQLite would create it with mode 0644, and gives its `-wal` and `-shm`
    /// files the database file's mode.
    pub(crate) fn prepare(&self) -> anyhow::Result<()> {
        let Location::File(file) = self else { return Ok(()) };
        if let Some(dir) = file.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create the database directory {}", dir.display()))?;
        }
        create_private(file).with_context(|| format!("cannot create the database file {}", file.display()))
    }

    /// Opens a connection with the store's settings. `writer`: the one connection that writes
    /// (it creates the file and switches it to WAL); the others refuse to write.
    pub(crate) fn open(&self, synchronous: Synchronous, writer: bool) -> rusqlite::Result<Connection> {
        let conn = match self {
            Location::File(path) => Connection::open_with_flags(path, file_flags(writer))?,
            Location::Memory(name) => {
                let uri = format!("file:{name}?vfs=memdb");
                Connection::open_with_flags(uri, file_flags(true) | OpenFlags::SQLITE_OPEN_URI)?
            }
        };
        conn.busy_timeout(BUSY_TIMEOUT)?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        if writer && !self.is_memory() {
            // Persistent: set once by the writer, seen by every later connection.
            conn.pragma_update(None, "journal_mode", "WAL")?;
        }
        if writer {
            conn.pragma_update(None, "cache_size", WRITER_CACHE_KIB)?;
            // Each job of a batch runs in a savepoint (super::writer), whose journal keeps
            // the pages the job changes: past 64 KiB SQLite spills it to a temporary file,
            // one write(2) per page, as many as the WAL's. In memory it is a batch's pages
            // at most (docs/benchmarks.md, "create devices/s on SQLite").
            conn.pragma_update(None, "temp_store", "MEMORY")?;
            conn.pragma_update(None, "wal_autocheckpoint", WAL_CHECKPOINT_PAGES)?;
        }
        conn.pragma_update(None, "foreign_keys", true)?;
        conn.pragma_update(
            None,
            "synchronous",
            match synchronous {
                Synchronous::Full => "FULL",
                Synchronous::Normal => "NORMAL",
            },
        )?;
        if !writer {
            conn.pragma_update(None, "query_only", true)?;
        }
        Ok(conn)
    }

    /// Why the database file could not be opened, in words an operator acts on, when the
    /// file system says more than SQLite's "unable to open database file": a directory in
    /// place of the file, or a file this user may not read and write.
    pub(crate) fn open_failure(&self, error: rusqlite::Error) -> anyhow::Error {
        let Location::File(path) = self else { return error.into() };
        let why = match std::fs::metadata(path) {
            Ok(metadata) if metadata.is_dir() => Some("it is a directory, not a database file".to_owned()),
            Ok(_) => match std::fs::OpenOptions::new().read(true).write(true).open(path) {
                Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Some(format!(
                    "permission denied: the user Ferrozone runs as must be able to read and write {} \
                     (and create files in its directory)",
                    path.display()
                )),
                Err(e) => Some(e.to_string()),
                Ok(_) => None,
            },
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                Some(format!("permission denied: the user Ferrozone runs as cannot reach {}", path.display()))
            }
            Err(_) => None,
        };
        match why {
            Some(why) => anyhow::Error::new(error).context(why),
            None => error.into(),
        }
    }

    pub(crate) fn describe(&self) -> String {
        match self {
            Location::File(path) => path.display().to_string(),
            Location::Memory(_) => ":memory:".to_owned(),
        }
    }
}

/// Creates an empty file with mode 0600 unless `path` exists (an empty file is an empty
/// database to SQLite).
fn create_private(path: &std::path::Path) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

fn file_flags(create: bool) -> OpenFlags {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    if create {
        flags | OpenFlags::SQLITE_OPEN_CREATE
    } else {
        flags
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(Location::parse("sqlite://data/x.db").unwrap(), Location::File("data/x.db".into()));
        assert_eq!(Location::parse("sqlite:///var/lib/x.db").unwrap(), Location::File("/var/lib/x.db".into()));
        assert_eq!(Location::parse("sqlite:x.db?mode=rwc").unwrap(), Location::File("x.db".into()));
        assert!(Location::parse("sqlite::memory:").unwrap().is_memory());
        assert!(Location::parse("sqlite://x?mode=memory").unwrap().is_memory());
        assert_ne!(Location::parse("sqlite::memory:").unwrap(), Location::parse("sqlite::memory:").unwrap());
        for bad in ["sqlite://", "sqlite://x.db?cache=shared", "postgres://x"] {
            assert!(Location::parse(bad).is_err(), "{bad}");
        }
    }

    /// In an existing, shared directory too: the database, its `-wal` and its `-shm` are
    /// the owner's alone, whatever the umask lets through.
    #[cfg(unix)]
    /// The writer's savepoint journals stay in memory; readers keep SQLite's default.
    #[test]
    fn the_writer_keeps_its_statement_journals_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let location = Location::File(dir.path().join("ferrozone.db"));
        location.prepare().unwrap();
        let temp_store = |writer| {
            let conn = location.open(Synchronous::Full, writer).unwrap();
            conn.pragma_query_value(None, "temp_store", |row| row.get::<_, i64>(0)).unwrap()
        };
        assert_eq!(temp_store(true), 2, "MEMORY");
        assert_eq!(temp_store(false), 0, "DEFAULT");
    }

    #[test]
    fn database_files_are_created_readable_by_their_owner_only() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let location = Location::File(dir.path().join("ferrozone.db"));
        location.prepare().unwrap();
        let writer = location.open(Synchronous::Full, true).unwrap();
        writer.execute_batch("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);").unwrap();
        let reader = location.open(Synchronous::Full, false).unwrap();
        assert_eq!(reader.query_row("SELECT x FROM t", [], |row| row.get::<_, i64>(0)).unwrap(), 1);
        for name in ["ferrozone.db", "ferrozone.db-wal", "ferrozone.db-shm"] {
            let mode = std::fs::metadata(dir.path().join(name)).unwrap().mode() & 0o777;
            assert_eq!(mode, 0o600, "{name}: {mode:o}");
        }
    }
}
