use super::*;
use crate::sqlite::migrate;

/// A migrated database in WAL mode at `dir/ferrozone.db`, holding `users` users, whose rows
/// are still in the `-wal` file: the returned connection stays open, so nothing checkpoints.
fn live_database(dir: &Path, users: usize) -> (PathBuf, Connection) {
    let path = dir.join("ferrozone.db");
    let mut conn = Connection::open(&path).unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
    migrate::run(&mut conn).unwrap();
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)").unwrap();
    for i in 0..users {
        conn.execute(
            "INSERT INTO users (id, email, email_key, role, inserted_at, updated_at) VALUES (?1, ?2, ?2, 'admin', 0, 0)",
            rusqlite::params![Uuid::new_v4(), format!("user{i}@example.com")],
        )
        .unwrap();
    }
    (path, conn)
}

fn count(contents: &Contents, what: &str) -> i64 {
    contents.counts.iter().find(|(w, _)| *w == what).map(|(_, n)| *n).unwrap()
}

fn known_version() -> i64 {
    MIGRATIONS.last().unwrap().version
}

#[test]
fn a_backup_of_a_live_database_holds_the_commits_still_in_its_wal() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _open) = live_database(dir.path(), 3);
    let copied_file_alone = dir.path().join("copied.db");
    std::fs::copy(&db, &copied_file_alone).unwrap();
    assert_eq!(count(&verify(&copied_file_alone).unwrap(), "users"), 0, "the rows are in the WAL");

    let out = dir.path().join("backup.db");
    let contents = backup(&db, &out, false).unwrap();
    assert_eq!(contents.schema_version, known_version());
    assert_eq!(count(&contents, "users"), 3);
    assert_eq!(count(&verify(&out).unwrap(), "users"), 3);
    assert!(!with_suffix(&out, "-wal").exists(), "the copy is one self-contained file");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&out).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains("partial"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn a_backup_replaces_an_existing_file_only_when_forced() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _open) = live_database(dir.path(), 1);
    let out = dir.path().join("backup.db");
    std::fs::write(&out, b"precious").unwrap();
    let error = backup(&db, &out, false).unwrap_err().to_string();
    assert!(error.contains("already exists") && error.contains("--force"), "{error}");
    assert_eq!(std::fs::read(&out).unwrap(), b"precious");
    backup(&db, &out, true).unwrap();
    assert_eq!(count(&verify(&out).unwrap(), "users"), 1);
}

#[test]
fn a_backup_of_a_missing_database_is_refused_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let error = backup(&dir.path().join("none.db"), &dir.path().join("out.db"), false).unwrap_err();
    assert!(error.to_string().contains("there is no database"), "{error:#}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn files_that_are_not_intact_ferrozone_databases_of_a_known_version_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "not a database, but long enough to have a header of a sort ".repeat(20)).unwrap();
    let error = format!("{:#}", verify(&text).unwrap_err());
    assert!(error.contains("not an SQLite database"), "{error}");

    let other = dir.path().join("other.db");
    Connection::open(&other).unwrap().execute_batch("CREATE TABLE t (x INTEGER)").unwrap();
    let error = format!("{:#}", verify(&other).unwrap_err());
    assert!(error.contains("not a Ferrozone database"), "{error}");

    let (db, open) = live_database(dir.path(), 1);
    open.pragma_update(None, "user_version", known_version() + 1).unwrap();
    drop(open);
    let error = format!("{:#}", verify(&db).unwrap_err());
    assert!(error.contains("newer than this binary knows"), "{error}");
}

#[test]
fn a_damaged_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (db, open) = live_database(dir.path(), 50);
    drop(open);
    let out = dir.path().join("backup.db");
    backup(&db, &out, false).unwrap();
    let mut bytes = std::fs::read(&out).unwrap();
    let page = 4096;
    assert!(bytes.len() > 4 * page);
    // Scribble over the middle of every page but the first (the header and schema).
    for start in (page..bytes.len()).step_by(page) {
        for b in &mut bytes[start + 8..start + 200] {
            *b = 0x5a;
        }
    }
    std::fs::write(&out, bytes).unwrap();
    let error = format!("{:#}", verify(&out).unwrap_err());
    assert!(error.contains("damaged"), "{error}");
}

#[test]
fn restore_swaps_the_copy_in_and_keeps_the_previous_database() {
    let dir = tempfile::tempdir().unwrap();
    let (db, open) = live_database(dir.path(), 2);
    let out = dir.path().join("backup.db");
    backup(&db, &out, false).unwrap();
    open.execute_batch("DELETE FROM users").unwrap();
    drop(open);

    let restored = restore(&out, &db, "20261126T120000Z").unwrap();
    assert_eq!(count(&restored.contents, "users"), 2);
    let previous = restored.previous.unwrap();
    assert_eq!(previous, dir.path().join("ferrozone.db.before-restore-20261126T120000Z"));
    assert_eq!(count(&verify(&previous).unwrap(), "users"), 0);
    assert_eq!(count(&verify(&db).unwrap(), "users"), 2);
    for stale in ["ferrozone.db-wal", "ferrozone.db-shm"] {
        assert!(!dir.path().join(stale).exists(), "{stale}");
    }

    let fresh = tempfile::tempdir().unwrap();
    let target = fresh.path().join("ferrozone.db");
    let restored = restore(&out, &target, "x").unwrap();
    assert_eq!((count(&restored.contents, "users"), restored.previous), (2, None));
}

#[test]
fn restore_refuses_a_database_another_connection_has_open_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (db, open) = live_database(dir.path(), 2);
    let out = dir.path().join("backup.db");
    backup(&db, &out, false).unwrap();
    open.execute_batch("DELETE FROM users").unwrap();

    let error = format!("{:#}", restore(&out, &db, "x").unwrap_err());
    assert!(error.contains("open in another process"), "{error}");
    let users: i64 = open.query_row("SELECT COUNT(*) FROM users", [], |row| row.get(0)).unwrap();
    assert_eq!(users, 0, "the open database is untouched");
    assert!(!dir.path().join("ferrozone.db.before-restore-x").exists());
}

#[test]
fn restore_refuses_a_file_verify_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let (db, open) = live_database(dir.path(), 1);
    drop(open);
    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, vec![7u8; 8192]).unwrap();
    assert!(restore(&junk, &db, "x").is_err());
    assert_eq!(count(&verify(&db).unwrap(), "users"), 1);
}
