//! Backups of an SQLite database that restore: a consistent copy of a live database, and
//! the swap of a verified copy into the database's place.
//!
//! Copying the database file is not a backup: in WAL mode the latest commits live in the
//! `-wal` file until a checkpoint. The copy is made with `VACUUM INTO` instead, rather than
//! SQLite's stepped online-backup API, because:
//! - it runs in one read transaction, so the copy is one consistent snapshot holding every
//!   commit made before it began; in WAL mode a reader never blocks `serve`'s writer, so the
//!   copy need not be cut into steps to let writes through;
//! - the stepped backup starts over whenever another process writes between two steps, so
//!   against a busy server it may never finish;
//! - its output is one self-contained, compacted file in rollback-journal mode (no `-wal`
//!   to forget), with the schema version (`user_version`) carried over.
//!
//! Neither backup nor restore leaves a half-written file under the final name: each writes a
//! temporary file beside it, syncs it, checks it and only then renames it into place.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context};
use rusqlite::{Connection, ErrorCode, OpenFlags};
use uuid::Uuid;

use super::conn::Location;
use super::MIGRATIONS;

/// How long opening a database waits for another process's lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The tables whose rows a backup reports, as `(table, what its rows are)`.
const COUNTED: &[(&str, &str)] = &[
    ("users", "users"),
    ("devices", "devices"),
    ("api_tokens", "API tokens"),
    ("rules", "rules"),
    ("user_totp", "TOTP authenticators"),
    ("oidc_connections", "OpenID Connect sign-ins"),
];

/// What a checked Ferrozone database holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contents {
    /// The migration it is at (`PRAGMA user_version`).
    pub schema_version: i64,
    /// Rows per table of [`COUNTED`] present in the file, as `(what, rows)`.
    pub counts: Vec<(&'static str, i64)>,
}

/// The outcome of [`restore`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    /// What the restored database holds.
    pub contents: Contents,
    /// Where the database it replaced was kept, if there was one.
    pub previous: Option<PathBuf>,
}

/// The file an `sqlite:` URL names; an in-memory database has none to back up.
pub fn database_file(url: &str) -> anyhow::Result<PathBuf> {
    match Location::parse(url)? {
        Location::File(path) => Ok(path),
        Location::Memory(_) => bail!("an in-memory SQLite database has no file to back up or restore"),
    }
}

/// Copies the (possibly live) database `source` to `out` and checks the copy: intact, a
/// Ferrozone database, at the source's schema version. `out` is created with mode 0600 (it
/// holds sealed secrets and password hashes); an existing `out` is replaced only when
/// `overwrite`.
pub fn backup(source: &Path, out: &Path, overwrite: bool) -> anyhow::Result<Contents> {
    if !overwrite && out.exists() {
        bail!("{} already exists; pass --force to replace it", out.display());
    }
    if !source.is_file() {
        bail!("there is no database at {}", source.display());
    }
    let temp = TempFile::beside(out)?;
    let conn = open_read_only(source)?;
    let version = schema_version(&conn)?;
    copy(&conn, temp.path()).with_context(|| format!("copying {}", source.display()))?;
    drop(conn);
    let contents = verify(temp.path()).context("checking the copy")?;
    if contents.schema_version != version {
        bail!(
            "the copy is at schema version {}, the database at {version}: was it migrated meanwhile? \
             Run the backup again",
            contents.schema_version
        );
    }
    temp.publish(out, overwrite)?;
    Ok(contents)
}

/// Checks `file`: an intact SQLite file (`PRAGMA integrity_check`), a Ferrozone database,
/// and at a schema version this binary knows. Changes nothing.
pub fn verify(file: &Path) -> anyhow::Result<Contents> {
    if !file.exists() {
        bail!("there is no file {}", file.display());
    }
    if !file.is_file() {
        bail!("{} is not a file", file.display());
    }
    let conn = open_read_only(file)?;
    let checked = check(&conn).map_err(|e| explain(e, file))?;
    checked.with_context(|| format!("{} is refused", file.display()))
}

/// Replaces the database file `database` with a checked copy of `file`, keeping the database
/// it replaces as `<database>.before-restore-<stamp>`. Refuses while another connection has
/// the current database open; the caller makes sure no `serve` starts meanwhile.
pub fn restore(file: &Path, database: &Path, stamp: &str) -> anyhow::Result<Restored> {
    verify(file)?;
    let temp = TempFile::beside(database)?;
    copy(&open_read_only(file)?, temp.path()).with_context(|| format!("copying {}", file.display()))?;
    let contents = verify(temp.path()).context("checking the copy")?;
    let previous = if database.exists() {
        let kept = with_suffix(database, &format!(".before-restore-{stamp}"));
        retire(database, &kept)?;
        Some(kept)
    } else {
        None
    };
    temp.publish(database, true)?;
    Ok(Restored { contents, previous })
}

/// Opens an existing database for reading only: never creates it, never writes to it.
fn open_read_only(path: &Path) -> anyhow::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).with_context(|| format!("opening {}", path.display()))?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    Ok(conn)
}

/// `VACUUM INTO` the empty file `dest`: one consistent snapshot of `conn`'s database. SQLite
/// does not sync the file it writes, so it is synced here.
fn copy(conn: &Connection, dest: &Path) -> anyhow::Result<()> {
    let name = dest.to_str().with_context(|| format!("{} is not a UTF-8 path", dest.display()))?;
    conn.execute("VACUUM INTO ?1", [name]).map_err(|e| explain(e, conn.path().map_or(dest, Path::new)))?;
    File::open(dest)?.sync_all()?;
    Ok(())
}

/// The checks of [`verify`], on an open connection. The outer error is SQLite's (the file is
/// not a database, say); the inner one is a refusal of a readable file.
fn check(conn: &Connection) -> rusqlite::Result<anyhow::Result<Contents>> {
    let problems = integrity_problems(conn)?;
    if !problems.is_empty() {
        return Ok(Err(anyhow::anyhow!("it is damaged: {}", problems.join("; "))));
    }
    if !has_table(conn, "users")? || !has_table(conn, "devices")? {
        return Ok(Err(anyhow::anyhow!("it is not a Ferrozone database (it has no users and devices tables)")));
    }
    let version = recorded_version(conn)?;
    let known = MIGRATIONS.last().map_or(0, |m| m.version);
    if version > known {
        return Ok(Err(anyhow::anyhow!(
            "its schema version {version} is newer than this binary knows ({known}): use a newer ferrozone"
        )));
    }
    let mut counts = Vec::new();
    for (table, what) in COUNTED {
        if has_table(conn, table)? {
            let rows = conn.query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |row| row.get(0))?;
            counts.push((*what, rows));
        }
    }
    Ok(Ok(Contents { schema_version: version, counts }))
}

/// What `PRAGMA integrity_check` found wrong (at most ten findings); empty when it is `ok`.
fn integrity_problems(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut statement = conn.prepare("PRAGMA integrity_check(10)")?;
    let findings = statement.query_map([], |row| row.get::<_, String>(0))?.collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(findings.into_iter().filter(|f| f != "ok").collect())
}

fn has_table(conn: &Connection, table: &str) -> rusqlite::Result<bool> {
    conn.query_row("SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?1)", [table], |row| {
        row.get(0)
    })
}

/// The migration a database is at: `user_version`, or for a database of an earlier build
/// that recorded it in `_sqlx_migrations`, the last one there (as migrating adopts it).
fn recorded_version(conn: &Connection) -> rusqlite::Result<i64> {
    let version: i64 = conn.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    if version != 0 || !has_table(conn, "_sqlx_migrations")? {
        return Ok(version);
    }
    let recorded: Option<i64> =
        conn.query_row("SELECT MAX(version) FROM _sqlx_migrations WHERE success", [], |row| row.get(0))?;
    Ok(recorded.unwrap_or(0))
}

fn schema_version(conn: &Connection) -> anyhow::Result<i64> {
    let path = conn.path().map(PathBuf::from).unwrap_or_default();
    recorded_version(conn).map_err(|e| explain(e, &path))
}

/// Turns SQLite's errors about a file into messages that name the file and say what is wrong.
fn explain(error: rusqlite::Error, file: &Path) -> anyhow::Error {
    let message = match error.sqlite_error_code() {
        Some(ErrorCode::NotADatabase) => "it is not an SQLite database",
        Some(ErrorCode::DatabaseCorrupt) => "it is damaged",
        Some(ErrorCode::DatabaseBusy) => "another process holds it locked",
        _ => return anyhow::Error::new(error).context(format!("reading {}", file.display())),
    };
    anyhow::anyhow!("{} is refused: {message} ({error})", file.display())
}

/// Takes the current database out of use: folds its `-wal` into the file and leaves WAL mode
/// (which SQLite allows only to the one connection open on it, so this also proves no other
/// process has it open), then keeps it under the name `kept`. The hard link keeps the file
/// under its own name until the restored one replaces it, so the database is never missing.
fn retire(database: &Path, kept: &Path) -> anyhow::Result<()> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(database, flags)
        .with_context(|| format!("opening the current database {}", database.display()))?;
    let in_use = match conn.query_row("PRAGMA journal_mode = DELETE", [], |row| row.get::<_, String>(0)) {
        Ok(mode) => !mode.eq_ignore_ascii_case("delete"),
        Err(e) if matches!(e.sqlite_error_code(), Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)) => true,
        Err(e) => return Err(explain(e, database)),
    };
    if in_use {
        bail!(
            "the database {} is open in another process: stop every ferrozone process using it first",
            database.display()
        );
    }
    drop(conn);
    for suffix in ["-wal", "-shm", "-journal"] {
        remove_if_present(&with_suffix(database, suffix))?;
    }
    std::fs::hard_link(database, kept)
        .with_context(|| format!("keeping the current database as {}", kept.display()))?;
    Ok(())
}

fn remove_if_present(path: &Path) -> anyhow::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("removing {}", path.display()))
        }
        _ => Ok(()),
    }
}

/// `path` with `suffix` appended to its file name (`ferrozone.db` → `ferrozone.db-wal`).
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = OsString::from(path.as_os_str());
    name.push(suffix);
    PathBuf::from(name)
}

/// A new, empty, owner-only file beside its final name, removed again unless published.
struct TempFile {
    path: PathBuf,
    published: bool,
}

impl TempFile {
    fn beside(target: &Path) -> anyhow::Result<Self> {
        let name = target.file_name().with_context(|| format!("{} names no file", target.display()))?;
        let mut temp_name = OsString::from(".");
        temp_name.push(name);
        temp_name.push(format!(".partial-{}", Uuid::new_v4().simple()));
        let path = target.with_file_name(temp_name);
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        options.open(&path).with_context(|| format!("creating {}", path.display()))?;
        Ok(Self { path, published: false })
    }

    fn path(&self) -> &Path {
        &self.path
    }

    /// Gives the file its final name `target` and syncs the directory, so the name survives a
    /// power loss. Without `overwrite`, an existing `target` (even one made meanwhile) is
    /// left alone: the hard link fails rather than replace it.
    fn publish(mut self, target: &Path, overwrite: bool) -> anyhow::Result<()> {
        if overwrite {
            std::fs::rename(&self.path, target)
        } else {
            std::fs::hard_link(&self.path, target).and_then(|()| std::fs::remove_file(&self.path))
        }
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => {
                anyhow::anyhow!("{} already exists; pass --force to replace it", target.display())
            }
            _ => anyhow::Error::new(e).context(format!("writing {}", target.display())),
        })?;
        self.published = true;
        sync_directory(target)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.published {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Syncs the directory holding `file`, which makes a rename in it durable.
fn sync_directory(file: &Path) -> anyhow::Result<()> {
    let dir = match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    #[cfg(unix)]
    File::open(dir).and_then(|d| d.sync_all()).with_context(|| format!("syncing {}", dir.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests;
