//! [`UserDirectory`] on SQLite: the reads of the console's user pages, each one statement
//! on a pooled read connection.

use async_trait::async_trait;
use ferrozone_domain::error::Result;
use ferrozone_domain::model::{Session, User};
use ferrozone_domain::store::{Belongings, ListedUser, UserDirectory, UserQuery};
use ferrozone_domain::Timestamp;
use rusqlite::{OptionalExtension, ToSql};
use uuid::Uuid;

use super::super::{prepare, prepare_built, rows};
use super::SqliteStore;
use crate::sql::users_page as sql;

#[async_trait]
impl UserDirectory for SqliteStore {
    async fn list_users_page(&self, query: &UserQuery) -> Result<Vec<ListedUser>> {
        let statement = sql::list(query);
        let pattern = query.email_contains.as_deref().map(sql::like_pattern);
        let after = query.after.map(|(at, id)| (at.micros(), id));
        let limit = i64::from(query.limit);
        let rows = self.read("list users", |conn| {
            let mut args: Vec<&dyn ToSql> = Vec::new();
            if let Some(pattern) = &pattern {
                args.push(pattern);
            }
            if let Some((at, id)) = &after {
                args.push(at);
                args.push(id);
            }
            args.push(&limit);
            prepare_built(conn, &statement)?
                .query_map(args.as_slice(), rows::listed_user)?
                .collect::<rusqlite::Result<Vec<_>>>()
        })?;
        rows.into_iter()
            .map(|(row, count)| {
                Ok(ListedUser { user: User::try_from(row)?, device_count: u64::try_from(count).unwrap_or(0) })
            })
            .collect()
    }

    async fn list_user_sessions(&self, user_id: Uuid, now: Timestamp) -> Result<Vec<Session>> {
        let rows = self.read("list a user's sessions", |conn| {
            let mut statement = prepare(conn, sql::USER_SESSIONS)?;
            let rows = statement.query_map(rusqlite::params![user_id, now.micros()], rows::session)?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        })?;
        Ok(rows.into_iter().map(Session::from).collect())
    }

    async fn user_belongings(&self, user_id: Uuid) -> Result<Option<Belongings>> {
        let counts = self.read("count a user's belongings", |conn| {
            prepare(conn, sql::BELONGINGS)?
                .query_row([user_id], |row| Ok([row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?]))
                .optional()
        })?;
        Ok(counts.map(|[devices, tokens, rules, sessions]: [i64; 4]| Belongings {
            devices: devices.max(0) as u64,
            tokens: tokens.max(0) as u64,
            rules: rules.max(0) as u64,
            sessions: sessions.max(0) as u64,
        }))
    }

    async fn users_by_ids(&self, ids: &[Uuid]) -> Result<Vec<User>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let statement = sql::users_by_ids(ids.len());
        let rows = self.read("load users by id", |conn| {
            prepare_built(conn, &statement)?
                .query_map(rusqlite::params_from_iter(ids), rows::user)?
                .collect::<rusqlite::Result<Vec<_>>>()
        })?;
        rows.into_iter().map(User::try_from).collect()
    }
}
