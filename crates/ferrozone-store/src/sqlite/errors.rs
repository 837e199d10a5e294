//! From SQLite errors to [`DomainError`]s with a meaning, as `postgres/errors.rs` does for
//! PostgreSQL: taken unique values are `Invalid` on their attribute, a foreign-key violation
//! is a missing owner, a busy, locked, full or unreadable database is `Unavailable`.

use ferrozone_domain::DomainError;
use rusqlite::ffi;
use rusqlite::ErrorCode;

use crate::errors::{unique_attribute, TAKEN};

/// Adds the mapping to rusqlite results: `stmt.execute(..).or_db("insert a device")?`.
pub(crate) trait OrDb<T> {
    fn or_db(self, context: &'static str) -> Result<T, DomainError>;
}

impl<T> OrDb<T> for rusqlite::Result<T> {
    fn or_db(self, context: &'static str) -> Result<T, DomainError> {
        self.map_err(|err| db_error(err, context))
    }
}

pub(crate) fn db_error(err: rusqlite::Error, context: &'static str) -> DomainError {
    if let rusqlite::Error::SqliteFailure(failure, message) = &err {
        match failure.extended_code {
            ffi::SQLITE_CONSTRAINT_UNIQUE | ffi::SQLITE_CONSTRAINT_PRIMARYKEY => {
                let columns = message.as_deref().and_then(|m| m.strip_prefix("UNIQUE constraint failed: "));
                if let Some(field) = columns.and_then(unique_attribute) {
                    return DomainError::invalid(field, TAKEN);
                }
            }
            // Every foreign key of the schema points at users(id).
            ffi::SQLITE_CONSTRAINT_FOREIGNKEY => return ferrozone_domain::rules::missing_owner(),
            _ => {}
        }
        if matches!(
            failure.code,
            ErrorCode::DatabaseBusy
                | ErrorCode::DatabaseLocked
                | ErrorCode::SystemIoFailure
                | ErrorCode::DiskFull
                | ErrorCode::CannotOpen
                | ErrorCode::ReadOnly
        ) {
            crate::metrics::unavailable("sqlite");
            return DomainError::Unavailable(anyhow::Error::new(err).context(context));
        }
    }
    DomainError::Internal(anyhow::Error::new(err).context(context))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(extended_code: i32, message: &str) -> rusqlite::Error {
        rusqlite::Error::SqliteFailure(ffi::Error::new(extended_code), Some(message.to_owned()))
    }

    #[test]
    fn meanings() {
        let taken = db_error(failure(ffi::SQLITE_CONSTRAINT_UNIQUE, "UNIQUE constraint failed: devices.ipv4"), "x");
        assert!(matches!(&taken, DomainError::Invalid(e) if e.has("ipv4")), "{taken:?}");
        let owner = db_error(failure(ffi::SQLITE_CONSTRAINT_FOREIGNKEY, "FOREIGN KEY constraint failed"), "x");
        assert!(matches!(&owner, DomainError::Invalid(e) if e.has("user_id")), "{owner:?}");
        assert!(matches!(db_error(failure(ffi::SQLITE_BUSY, "busy"), "x"), DomainError::Unavailable(_)));
        assert!(matches!(db_error(failure(ffi::SQLITE_FULL, "full"), "x"), DomainError::Unavailable(_)));
        assert!(matches!(db_error(rusqlite::Error::QueryReturnedNoRows, "x"), DomainError::Internal(_)));
    }
}
