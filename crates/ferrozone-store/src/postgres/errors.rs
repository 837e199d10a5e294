//! From sqlx (PostgreSQL) errors to [`DomainError`]s with a meaning; SQLite's are mapped the
//! same way in `sqlite/errors.rs`, with the attributes of [`crate::errors`].
//!
//! - unique violations of the constraints a client can hit become `Invalid` on the field
//!   (`has already been taken`);
//! - a foreign-key violation can only be a missing owner: `Invalid { user_id: does not exist }`;
//! - an unreachable, busy or full database becomes `Unavailable` (the API answers 503);
//! - anything else is `Internal`, with the operation as context.
//!
//! Messages never contain bound values: sqlx does not put them in its errors, and the
//! PostgreSQL `detail` field (which does) is not part of an error's `Display`.

use ferrozone_domain::DomainError;
use sqlx::error::{DatabaseError, ErrorKind};
use sqlx::postgres::PgDatabaseError;

use crate::errors::{constraint_attribute, TAKEN};

/// Adds the mapping to sqlx results: `query.execute(..).await.or_db("insert device")?`.
pub(crate) trait OrDb<T> {
    fn or_db(self, context: &'static str) -> Result<T, DomainError>;
}

impl<T> OrDb<T> for Result<T, sqlx::Error> {
    fn or_db(self, context: &'static str) -> Result<T, DomainError> {
        self.map_err(|err| db_error(err, context))
    }
}

/// Maps one sqlx error; `context` names the operation ("insert device").
pub(crate) fn db_error(err: sqlx::Error, context: &'static str) -> DomainError {
    if let sqlx::Error::Database(db) = &err {
        match db.kind() {
            ErrorKind::UniqueViolation => {
                if let Some(field) = unique_field(db.as_ref()) {
                    return DomainError::invalid(field, TAKEN);
                }
            }
            // Every foreign key of the schema points at users(id).
            ErrorKind::ForeignKeyViolation => return ferrozone_domain::rules::missing_owner(),
            _ => {}
        }
    }
    if is_unavailable(&err) {
        crate::metrics::unavailable("postgres");
        return DomainError::Unavailable(anyhow::Error::new(err).context(context));
    }
    DomainError::Internal(anyhow::Error::new(err).context(context))
}

/// The attribute a unique violation is about, if it is one a client can cause.
fn unique_field(db: &dyn DatabaseError) -> Option<&'static str> {
    db.constraint().and_then(constraint_attribute)
}

/// Whether the error says the database cannot serve us right now, as opposed to a bug.
fn is_unavailable(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => {
            db.try_downcast_ref::<PgDatabaseError>().is_some_and(|pg| pg_unavailable(pg.code()))
        }
        _ => false,
    }
}

fn pg_unavailable(sqlstate: &str) -> bool {
    // 08: connection exceptions; 57P0x: shutdown / cannot connect now; 53: insufficient
    // resources (disk full, too many connections); 25006: read-only transaction (a standby
    // after a failover); 40001 / 40P01: serialization failure / deadlock, worth a retry.
    sqlstate.starts_with("08")
        || sqlstate.starts_with("53")
        || matches!(sqlstate, "57P01" | "57P02" | "57P03" | "25006" | "40001" | "40P01")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_and_io_errors_are_unavailable() {
        assert!(matches!(db_error(sqlx::Error::PoolTimedOut, "x"), DomainError::Unavailable(_)));
        assert!(matches!(db_error(sqlx::Error::PoolClosed, "x"), DomainError::Unavailable(_)));
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        assert!(matches!(db_error(sqlx::Error::Io(io), "x"), DomainError::Unavailable(_)));
        assert!(matches!(db_error(sqlx::Error::RowNotFound, "x"), DomainError::Internal(_)));
    }

    #[test]
    fn postgres_states() {
        for code in ["08006", "57P01", "53300", "40P01"] {
            assert!(pg_unavailable(code), "{code}");
        }
        for code in ["23505", "42P01", "22P02"] {
            assert!(!pg_unavailable(code), "{code}");
        }
    }

    #[test]
    fn a_unique_constraint_is_reported_on_its_attribute() {
        assert_eq!(constraint_attribute("devices_user_id_name_unique"), Some("name"));
        assert_eq!(constraint_attribute("users_pkey"), None);
    }
}
