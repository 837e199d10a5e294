//! [`UserDirectory`] on PostgreSQL: the reads of the console's user pages, each one
//! statement.

use async_trait::async_trait;
use ferrozone_domain::error::Result;
use ferrozone_domain::model::{Session, User};
use ferrozone_domain::store::{Belongings, ListedUser, UserDirectory, UserQuery};
use ferrozone_domain::Timestamp;
use sqlx::Row;
use uuid::Uuid;

use super::super::errors::OrDb;
use super::super::rows::{from_row, read};
use super::PgStore;
use crate::rows::{SessionRow, UserRow};
use crate::sql::users_page as sql;

#[async_trait]
impl UserDirectory for PgStore {
    async fn list_users_page(&self, query: &UserQuery) -> Result<Vec<ListedUser>> {
        let statement = sql::list(query);
        let mut q = sqlx::query(&statement);
        if let Some(text) = &query.email_contains {
            q = q.bind(sql::like_pattern(text));
        }
        if let Some((at, id)) = query.after {
            q = q.bind(at.micros()).bind(id);
        }
        let rows = q
            .bind(i64::from(query.limit))
            .try_map(|row| Ok((read::<UserRow>(&row)?, row.try_get::<i64, _>("device_count")?)))
            .fetch_all(&self.pool)
            .await
            .or_db("list users")?;
        rows.into_iter()
            .map(|(row, count)| {
                Ok(ListedUser { user: User::try_from(row)?, device_count: u64::try_from(count).unwrap_or(0) })
            })
            .collect()
    }

    async fn list_user_sessions(&self, user_id: Uuid, now: Timestamp) -> Result<Vec<Session>> {
        let rows = sqlx::query(sql::USER_SESSIONS)
            .bind(user_id)
            .bind(now.micros())
            .try_map(from_row::<SessionRow>)
            .fetch_all(&self.pool)
            .await
            .or_db("list a user's sessions")?;
        Ok(rows.into_iter().map(Session::from).collect())
    }

    async fn user_belongings(&self, user_id: Uuid) -> Result<Option<Belongings>> {
        let counts: Option<(i64, i64, i64, i64)> = sqlx::query_as(sql::BELONGINGS)
            .bind(user_id)
            .fetch_optional(&self.pool)
            .await
            .or_db("count a user's belongings")?;
        Ok(counts.map(|(devices, tokens, rules, sessions)| Belongings {
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
        let mut q = sqlx::query(&statement);
        for id in ids {
            q = q.bind(*id);
        }
        let rows = q.try_map(from_row::<UserRow>).fetch_all(&self.pool).await.or_db("load users by id")?;
        rows.into_iter().map(User::try_from).collect()
    }
}
