//! [`ScimStore`] on PostgreSQL, and [`ScimTx`] on its transactions. Group writes lock the
//! group's row first; a new member's user row is held against its delete until the commit.

use std::collections::HashSet;

use async_trait::async_trait;
use ferrozone_domain::error::Result;
use ferrozone_domain::group::{self, Group};
use ferrozone_domain::model::User;
use ferrozone_domain::rules::scim::{self as rules, ScimTx};
use ferrozone_domain::scim::{
    self, GroupFilter, Listed, MembersChange, MembersChanged, Page, ScimGroup, ScimGroupWrite, ScimMember, ScimProfile,
    ScimToken, ScimUser, ScimUserWrite, Start, UserFilter, UsersPage,
};
use ferrozone_domain::store::ScimStore;
use ferrozone_domain::{DomainError, Timestamp};
use sqlx::postgres::{PgArguments, PgRow};
use sqlx::query::Query;
use sqlx::{PgConnection, Postgres, Row};
use uuid::Uuid;

use super::super::errors::OrDb;
use super::super::rows::{from_row, read_aliased};
use super::super::tx::PgTx;
use super::PgStore;
use crate::columns::Columns;
use crate::rows::{ScimTokenRow, ScimUserJoinRow, ScimUserRow, UserRow};
use crate::sql;
use crate::sql::scim as q;

#[async_trait]
impl ScimStore for PgStore {
    async fn insert_scim_token(&self, token: &ScimToken) -> Result<()> {
        let (row, entry) = (ScimTokenRow::from(token), scim::token_created(token));
        self.write(move |tx| {
            Box::pin(async move {
                row.bind_insert(sqlx::query(q::INSERT_TOKEN))
                    .execute(tx.conn())
                    .await
                    .or_db("insert a provisioning token")?;
                tx.append(entry).await
            })
        })
        .await
    }

    async fn scim_token_by_hash(&self, hash: &[u8]) -> Result<Option<ScimToken>> {
        let row = sqlx::query(q::TOKEN_BY_HASH)
            .bind(hash)
            .try_map(from_row::<ScimTokenRow>)
            .fetch_optional(&self.pool)
            .await
            .or_db("load a provisioning token")?;
        Ok(row.map(ScimToken::from))
    }

    async fn list_scim_tokens(&self) -> Result<Vec<ScimToken>> {
        let rows = sqlx::query(q::LIST_TOKENS)
            .try_map(from_row::<ScimTokenRow>)
            .fetch_all(&self.pool)
            .await
            .or_db("list provisioning tokens")?;
        Ok(rows.into_iter().map(ScimToken::from).collect())
    }

    async fn revoke_scim_token(&self, id: Uuid, now: Timestamp) -> Result<Option<ScimToken>> {
        self.write(move |tx| {
            Box::pin(async move {
                let row = sqlx::query(q::REVOKE_TOKEN)
                    .bind(id)
                    .bind(now.micros())
                    .try_map(from_row::<ScimTokenRow>)
                    .fetch_optional(tx.conn())
                    .await
                    .or_db("revoke a provisioning token")?;
                let Some(token) = row.map(ScimToken::from) else { return Ok(None) };
                if token.revoked_at == Some(now) {
                    tx.append(scim::token_revoked(&token)).await?;
                }
                Ok(Some(token))
            })
        })
        .await
    }

    async fn touch_scim_token(&self, id: Uuid, now: Timestamp) -> Result<()> {
        let touch = sqlx::query(q::TOUCH_TOKEN).bind(id).bind(now.micros());
        touch.execute(&self.pool).await.or_db("touch a provisioning token")?;
        Ok(())
    }

    async fn create_scim_user(&self, write: &ScimUserWrite, now: Timestamp) -> Result<ScimUser> {
        let write = write.clone();
        self.write(move |tx| Box::pin(async move { rules::create_in(tx, &write, now).await })).await
    }

    async fn replace_scim_user(&self, id: Uuid, write: &ScimUserWrite, now: Timestamp) -> Result<ScimUser> {
        let write = write.clone();
        self.write(move |tx| Box::pin(async move { rules::replace_in(tx, id, &write, now).await })).await
    }

    async fn delete_scim_user(&self, id: Uuid, now: Timestamp) -> Result<User> {
        self.write(move |tx| Box::pin(async move { rules::delete_in(tx, id, now).await })).await
    }

    async fn scim_users(&self, filter: &UserFilter, page: Page) -> Result<Listed<ScimUser>> {
        let (list, count) = q::users(filter);
        let (limit, offset) = (i64::from(page.count), i64::try_from(page.offset()).unwrap_or(i64::MAX));
        let rows = bind_user_filter(sqlx::query(&list).bind(limit).bind(offset), filter)
            .try_map(|row: PgRow| scim_user_row(&row))
            .fetch_all(&self.pool)
            .await
            .or_db("list SCIM users")?;
        let total: i64 = bind_user_filter(sqlx::query(&count), filter)
            .try_map(|row: PgRow| row.try_get::<i64, _>(0))
            .fetch_one(&self.pool)
            .await
            .or_db("count SCIM users")?;
        let resources = rows.into_iter().map(ScimUser::try_from).collect::<Result<_>>()?;
        Ok(Listed { total: counted(total), resources })
    }

    async fn every_scim_user(&self, count: u32, start: Start) -> Result<UsersPage> {
        let statement = q::every_user(matches!(start, Start::After(..)), true);
        let query = sqlx::query(&statement).bind(i64::from(count));
        let query = match start {
            Start::Offset(offset) => query.bind(i64::try_from(offset).unwrap_or(i64::MAX)),
            Start::After(at, id) => query.bind(at.micros()).bind(id),
        };
        let rows = query
            .try_map(|row: PgRow| {
                let counted = (row.try_get::<i64, _>("count_total")?, row.try_get::<i64, _>("count_generation")?);
                Ok((counted, scim_user_row(&row)?))
            })
            .fetch_all(&self.pool)
            .await
            .or_db("list SCIM users")?;
        let (total, generation) = match rows.first() {
            Some((counted, _)) => *counted,
            None => sqlx::query_as(q::USER_COUNT).fetch_one(&self.pool).await.or_db("count SCIM users")?,
        };
        let resources = rows.into_iter().map(|(_, row)| ScimUser::try_from(row)).collect::<Result<_>>()?;
        Ok(UsersPage { total: counted(total), generation: counted(generation), resources })
    }

    async fn scim_user(&self, id: Uuid) -> Result<Option<ScimUser>> {
        let row = sqlx::query(q::USER)
            .bind(id)
            .try_map(|row: PgRow| scim_user_row(&row))
            .fetch_optional(&self.pool)
            .await
            .or_db("read a SCIM user")?;
        row.map(ScimUser::try_from).transpose()
    }

    async fn scim_groups(&self, filter: &GroupFilter, page: Page) -> Result<Listed<ScimGroup>> {
        let (list, count) = q::groups(filter);
        let (limit, offset) = (i64::from(page.count), i64::try_from(page.offset()).unwrap_or(i64::MAX));
        let groups = bind_group_filter(sqlx::query(&list).bind(limit).bind(offset), filter)
            .try_map(scim_group)
            .fetch_all(&self.pool)
            .await
            .or_db("list SCIM groups")?;
        let total: i64 = bind_group_filter(sqlx::query(&count), filter)
            .try_map(|row: PgRow| row.try_get::<i64, _>(0))
            .fetch_one(&self.pool)
            .await
            .or_db("count SCIM groups")?;
        Ok(Listed { total: counted(total), resources: groups })
    }

    async fn scim_group(&self, id: Uuid) -> Result<Option<ScimGroup>> {
        let group = sqlx::query(q::GROUP).bind(id).try_map(scim_group).fetch_optional(&self.pool).await;
        group.or_db("read a SCIM group")
    }

    async fn scim_members(&self, groups: &[Uuid]) -> Result<Vec<(Uuid, ScimMember)>> {
        let statement = q::members(groups.len());
        let mut query = sqlx::query(&statement);
        for id in groups {
            query = query.bind(*id);
        }
        let rows = query
            .try_map(|row: PgRow| {
                Ok((row.try_get(0)?, ScimMember { user_id: row.try_get(1)?, user_name: row.try_get(2)? }))
            })
            .fetch_all(&self.pool)
            .await
            .or_db("list SCIM members")?;
        Ok(rows)
    }

    async fn create_scim_group(
        &self,
        group: &Group,
        external_id: Option<&str>,
        members: &[Uuid],
    ) -> Result<(ScimGroup, MembersChanged)> {
        let (group, external_id, members) = (group.clone(), external_id.map(str::to_owned), members.to_vec());
        self.write(move |tx| {
            Box::pin(async move {
                const CONTEXT: &str = "make a SCIM group";
                let key = group::name_key(&group.name);
                let found: Option<(Uuid, String)> = sqlx::query_as(q::GROUP_BY_NAME_FOR_UPDATE_POSTGRES)
                    .bind(&key)
                    .fetch_optional(tx.conn())
                    .await
                    .or_db(CONTEXT)?;
                let now = group.inserted_at;
                let id = match found {
                    Some((_, source)) if source == scim::SOURCE => {
                        return Err(DomainError::invalid("displayName", ferrozone_domain::validate::TAKEN))
                    }
                    Some((id, _)) => {
                        let adopt = sqlx::query(q::ADOPT_GROUP).bind(id).bind(&external_id).bind(now.micros());
                        adopt.execute(tx.conn()).await.or_db(CONTEXT)?;
                        id
                    }
                    None => {
                        let g = &group;
                        sqlx::query(q::INSERT_GROUP)
                            .bind(g.id)
                            .bind(&g.name)
                            .bind(&key)
                            .bind(&external_id)
                            .bind(now.micros())
                            .execute(tx.conn())
                            .await
                            .or_db(CONTEXT)?;
                        tx.append(group::created_entry(g)).await?;
                        g.id
                    }
                };
                let changed = change_members(tx, id, &[MembersChange::Add(members)], now).await?;
                let made = by_id(tx.conn(), id).await.or_db(CONTEXT)?.ok_or(DomainError::NotFound)?;
                Ok((made, changed))
            })
        })
        .await
    }

    async fn write_scim_group(
        &self,
        id: Uuid,
        write: &ScimGroupWrite,
        now: Timestamp,
    ) -> Result<Option<(ScimGroup, MembersChanged)>> {
        let write = write.clone();
        self.write(move |tx| {
            Box::pin(async move {
                const CONTEXT: &str = "change a SCIM group";
                let locked = sqlx::query(q::GROUP_FOR_UPDATE_POSTGRES).bind(id).try_map(scim_group);
                let Some(before) = locked.fetch_optional(tx.conn()).await.or_db(CONTEXT)? else { return Ok(None) };
                let mut touched = false;
                if let Some(name) = write.name.as_ref().filter(|name| **name != before.group.name) {
                    let rename = sqlx::query(q::RENAME_GROUP).bind(id).bind(name).bind(group::name_key(name));
                    rename.execute(tx.conn()).await.or_db(CONTEXT)?;
                    touched = true;
                }
                if let Some(external_id) = write.external_id.as_ref().filter(|e| **e != before.external_id) {
                    let set = sqlx::query(q::SET_EXTERNAL_ID).bind(id).bind(external_id);
                    set.execute(tx.conn()).await.or_db(CONTEXT)?;
                    touched = true;
                }
                let changed = change_members(tx, id, &write.members, now).await?;
                if touched || changed.any() {
                    let touch = sqlx::query(q::TOUCH_GROUP).bind(id).bind(now.micros());
                    touch.execute(tx.conn()).await.or_db(CONTEXT)?;
                }
                let after = by_id(tx.conn(), id).await.or_db(CONTEXT)?.ok_or(DomainError::NotFound)?;
                if touched {
                    tx.append(group::updated_entry(&before.group, &after.group)).await?;
                }
                Ok(Some((after, changed)))
            })
        })
        .await
    }
}

/// Applies `changes` in order to group `id`'s SCIM memberships, recording each.
async fn change_members(tx: &mut PgTx, id: Uuid, changes: &[MembersChange], now: Timestamp) -> Result<MembersChanged> {
    const CONTEXT: &str = "change a SCIM group's members";
    let mut changed = MembersChanged::default();
    for change in changes {
        let held: HashSet<Uuid> = if change.needs_held() {
            let held: Vec<Uuid> =
                sqlx::query_scalar(q::SCIM_MEMBER_IDS).bind(id).fetch_all(tx.conn()).await.or_db(CONTEXT)?;
            held.into_iter().collect()
        } else {
            HashSet::new()
        };
        let (add, remove) = change.split(&held);
        for user in remove {
            let gone = sqlx::query(q::REMOVE_MEMBER).bind(id).bind(user).execute(tx.conn()).await.or_db(CONTEXT)?;
            if gone.rows_affected() > 0 {
                changed.removed += 1;
                tx.append(group::synced_member_entry(false, id, user, scim::SOURCE)).await?;
            }
        }
        for user in add {
            let known = sqlx::query(q::IS_SCIM_USER_LOCKED_POSTGRES).bind(user).fetch_optional(tx.conn()).await;
            if known.or_db(CONTEXT)?.is_none() {
                return Err(DomainError::invalid("members", format!("{user} is not a SCIM user")));
            }
            let add = sqlx::query(q::ADD_MEMBER).bind(id).bind(user).bind(now.micros());
            if add.execute(tx.conn()).await.or_db(CONTEXT)?.rows_affected() > 0 {
                changed.added += 1;
                tx.append(group::synced_member_entry(true, id, user, scim::SOURCE)).await?;
            }
        }
    }
    Ok(changed)
}

fn bind_user_filter<'q>(
    query: Query<'q, Postgres, PgArguments>,
    filter: &UserFilter,
) -> Query<'q, Postgres, PgArguments> {
    match filter {
        UserFilter::All => query,
        UserFilter::UserName(v) | UserFilter::ExternalId(v) | UserFilter::DisplayName(v) | UserFilter::Email(v) => {
            query.bind(v.clone())
        }
        UserFilter::Id(id) => query.bind(*id),
    }
}

fn bind_group_filter<'q>(
    query: Query<'q, Postgres, PgArguments>,
    filter: &GroupFilter,
) -> Query<'q, Postgres, PgArguments> {
    match filter {
        GroupFilter::All => query,
        GroupFilter::DisplayName(v) | GroupFilter::ExternalId(v) => query.bind(v.clone()),
        GroupFilter::Id(id) => query.bind(*id),
    }
}

/// A count read from the database, never negative.
fn counted(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

fn scim_user_row(row: &PgRow) -> sqlx::Result<ScimUserJoinRow> {
    Ok(ScimUserJoinRow { profile: read_aliased(row)?, user: read_aliased(row)? })
}

async fn by_id(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<Option<ScimGroup>> {
    sqlx::query(q::GROUP).bind(id).try_map(scim_group).fetch_optional(conn).await
}

fn scim_group(row: PgRow) -> sqlx::Result<ScimGroup> {
    let columns = sql::groups::GroupColumns {
        id: row.try_get(0)?,
        name: row.try_get(1)?,
        description: row.try_get(2)?,
        source: row.try_get(3)?,
        member_count: row.try_get(4)?,
        inserted_at: row.try_get(5)?,
        updated_at: row.try_get(6)?,
    };
    Ok(ScimGroup { group: Group::from(columns), external_id: row.try_get(7)? })
}

#[async_trait]
impl ScimTx for PgTx {
    async fn lock_user_by_email(&mut self, key: &str) -> Result<Option<User>> {
        let row = sqlx::query(q::USER_BY_EMAIL_LOCKED_POSTGRES)
            .bind(key)
            .try_map(from_row::<UserRow>)
            .fetch_optional(self.conn())
            .await
            .or_db("lock a user")?;
        row.map(User::try_from).transpose()
    }

    async fn insert_user(&mut self, user: &User) -> Result<()> {
        let row = UserRow::from(user);
        row.bind_insert(sqlx::query(sql::INSERT_USER)).execute(self.conn()).await.or_db("insert a user")?;
        Ok(())
    }

    async fn scim_profile(&mut self, user_id: Uuid) -> Result<Option<(ScimProfile, Timestamp, Timestamp)>> {
        let row = sqlx::query(q::PROFILE)
            .bind(user_id)
            .try_map(from_row::<ScimUserRow>)
            .fetch_optional(self.conn())
            .await
            .or_db("read a SCIM profile")?;
        Ok(row.map(ScimUserRow::into_profile))
    }

    async fn put_scim_profile(
        &mut self,
        user_id: Uuid,
        profile: &ScimProfile,
        inserted_at: Timestamp,
        now: Timestamp,
    ) -> Result<()> {
        let row = ScimUserRow::new(user_id, profile, inserted_at, now);
        row.bind_insert(sqlx::query(q::PUT_PROFILE)).execute(self.conn()).await.or_db("write a SCIM profile")?;
        Ok(())
    }

    async fn delete_scim_profile(&mut self, user_id: Uuid) -> Result<bool> {
        let done = sqlx::query(q::DELETE_PROFILE).bind(user_id).execute(self.conn()).await;
        Ok(done.or_db("delete a SCIM profile")?.rows_affected() > 0)
    }
}
