//! [`ScimStore`] on SQLite, and [`ScimTx`] on the writer's transaction.

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
use rusqlite::types::ToSql;
use rusqlite::{params, Connection, OptionalExtension};
use uuid::Uuid;

use super::super::errors::OrDb;
use super::super::tx::SqliteTx;
use super::super::{prepare, prepare_built, rows};
use super::{insert_row, run_now, SqliteStore};
use crate::rows::{ScimTokenRow, ScimUserJoinRow, ScimUserRow, UserRow};
use crate::sql;
use crate::sql::scim as q;

#[async_trait]
impl ScimStore for SqliteStore {
    async fn insert_scim_token(&self, token: &ScimToken) -> Result<()> {
        let (row, entry) = (ScimTokenRow::from(token), scim::token_created(token));
        self.write(move |tx| {
            insert_row(tx, "insert a provisioning token", q::INSERT_TOKEN, &row)?;
            tx.append(entry)
        })
        .await
    }

    async fn scim_token_by_hash(&self, hash: &[u8]) -> Result<Option<ScimToken>> {
        let row = self.read("load a provisioning token", |conn| {
            prepare(conn, q::TOKEN_BY_HASH)?.query_row([hash], rows::scim_token).optional()
        })?;
        Ok(row.map(ScimToken::from))
    }

    async fn list_scim_tokens(&self) -> Result<Vec<ScimToken>> {
        let rows = self.read("list provisioning tokens", |conn| {
            prepare(conn, q::LIST_TOKENS)?.query_map([], rows::scim_token)?.collect::<rusqlite::Result<Vec<_>>>()
        })?;
        Ok(rows.into_iter().map(ScimToken::from).collect())
    }

    async fn revoke_scim_token(&self, id: Uuid, now: Timestamp) -> Result<Option<ScimToken>> {
        self.write(move |tx| {
            let row = prepare(tx.conn(), q::REVOKE_TOKEN)
                .and_then(|mut stmt| stmt.query_row(params![id, now.micros()], rows::scim_token).optional())
                .or_db("revoke a provisioning token")?;
            let Some(token) = row.map(ScimToken::from) else { return Ok(None) };
            if token.revoked_at == Some(now) {
                tx.append(scim::token_revoked(&token))?;
            }
            Ok(Some(token))
        })
        .await
    }

    async fn touch_scim_token(&self, id: Uuid, now: Timestamp) -> Result<()> {
        self.execute("touch a provisioning token", q::TOUCH_TOKEN, vec![Box::new(id), Box::new(now.micros())]).await?;
        Ok(())
    }

    async fn create_scim_user(&self, write: &ScimUserWrite, now: Timestamp) -> Result<ScimUser> {
        let write = write.clone();
        self.write(move |tx| run_now(rules::create_in(tx, &write, now))).await
    }

    async fn replace_scim_user(&self, id: Uuid, write: &ScimUserWrite, now: Timestamp) -> Result<ScimUser> {
        let write = write.clone();
        self.write(move |tx| run_now(rules::replace_in(tx, id, &write, now))).await
    }

    async fn delete_scim_user(&self, id: Uuid, now: Timestamp) -> Result<User> {
        self.write(move |tx| run_now(rules::delete_in(tx, id, now))).await
    }

    async fn scim_users(&self, filter: &UserFilter, page: Page) -> Result<Listed<ScimUser>> {
        let (list, count) = q::users(filter);
        let value = user_filter_value(filter);
        let (rows, total) = self.read("list SCIM users", |conn| {
            let (limit, offset) = (i64::from(page.count), i64::try_from(page.offset()).unwrap_or(i64::MAX));
            let mut args: Vec<&dyn ToSql> = vec![&limit, &offset];
            args.extend(value.as_ref().map(|v| v as &dyn ToSql));
            let rows = prepare_built(conn, &list)?
                .query_map(args.as_slice(), rows::scim_user)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let total: i64 = prepare_built(conn, &count)?.query_row(&args[2..], |row| row.get(0))?;
            Ok((rows, total))
        })?;
        let resources = rows.into_iter().map(ScimUser::try_from).collect::<Result<_>>()?;
        Ok(Listed { total: u64::try_from(total).unwrap_or(0), resources })
    }

    async fn every_scim_user(&self, count: u32, start: Start) -> Result<UsersPage> {
        let statement = q::every_user(matches!(start, Start::After(..)), false);
        let (rows, counted) = self.read("list SCIM users", |conn| {
            let limit = i64::from(count);
            let mut statement = prepare_built(conn, &statement)?;
            let rows: rusqlite::Result<Vec<((i64, i64), ScimUserJoinRow)>> = match start {
                Start::Offset(offset) => {
                    let offset = i64::try_from(offset).unwrap_or(i64::MAX);
                    statement.query_map(params![limit, offset], rows::counted_scim_user)?.collect()
                }
                Start::After(at, id) => {
                    statement.query_map(params![limit, at.micros(), id], rows::counted_scim_user)?.collect()
                }
            };
            let rows = rows?;
            let counted = match rows.first() {
                Some((counted, _)) => *counted,
                None => prepare(conn, q::USER_COUNT)?.query_row([], |row| Ok((row.get(0)?, row.get(1)?)))?,
            };
            Ok((rows, counted))
        })?;
        let resources = rows.into_iter().map(|(_, row)| ScimUser::try_from(row)).collect::<Result<_>>()?;
        let (total, generation) = counted;
        Ok(UsersPage {
            total: u64::try_from(total).unwrap_or(0),
            generation: u64::try_from(generation).unwrap_or(0),
            resources,
        })
    }

    async fn scim_user(&self, id: Uuid) -> Result<Option<ScimUser>> {
        let row =
            self.read("read a SCIM user", |conn| prepare(conn, q::USER)?.query_row([id], rows::scim_user).optional())?;
        row.map(ScimUser::try_from).transpose()
    }

    async fn scim_groups(&self, filter: &GroupFilter, page: Page) -> Result<Listed<ScimGroup>> {
        let (list, count) = q::groups(filter);
        let value = group_filter_value(filter);
        let (groups, total) = self.read("list SCIM groups", |conn| {
            let (limit, offset) = (i64::from(page.count), i64::try_from(page.offset()).unwrap_or(i64::MAX));
            let mut args: Vec<&dyn ToSql> = vec![&limit, &offset];
            args.extend(value.as_ref().map(|v| v as &dyn ToSql));
            let groups = prepare_built(conn, &list)?
                .query_map(args.as_slice(), scim_group)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let total: i64 = prepare_built(conn, &count)?.query_row(&args[2..], |row| row.get(0))?;
            Ok((groups, total))
        })?;
        Ok(Listed { total: u64::try_from(total).unwrap_or(0), resources: groups })
    }

    async fn scim_group(&self, id: Uuid) -> Result<Option<ScimGroup>> {
        self.read("read a SCIM group", |conn| group_by_id(conn, id))
    }

    async fn scim_members(&self, groups: &[Uuid]) -> Result<Vec<(Uuid, ScimMember)>> {
        let statement = q::members(groups.len());
        self.read("list SCIM members", |conn| {
            prepare_built(conn, &statement)?
                .query_map(rusqlite::params_from_iter(groups), |row| {
                    Ok((row.get(0)?, ScimMember { user_id: row.get(1)?, user_name: row.get(2)? }))
                })?
                .collect()
        })
    }

    async fn create_scim_group(
        &self,
        group: &Group,
        external_id: Option<&str>,
        members: &[Uuid],
    ) -> Result<(ScimGroup, MembersChanged)> {
        let (group, external_id, members) = (group.clone(), external_id.map(str::to_owned), members.to_vec());
        self.write(move |tx| {
            const CONTEXT: &str = "make a SCIM group";
            let key = group::name_key(&group.name);
            let found: Option<(Uuid, String)> = prepare(tx.conn(), q::GROUP_BY_NAME)
                .and_then(|mut stmt| stmt.query_row([&key], |row| Ok((row.get(0)?, row.get(1)?))).optional())
                .or_db(CONTEXT)?;
            let now = group.inserted_at;
            let id = match found {
                Some((_, source)) if source == scim::SOURCE => {
                    return Err(DomainError::invalid("displayName", ferrozone_domain::validate::TAKEN))
                }
                Some((id, _)) => {
                    prepare(tx.conn(), q::ADOPT_GROUP)
                        .and_then(|mut stmt| stmt.execute(params![id, external_id, now.micros()]))
                        .or_db(CONTEXT)?;
                    id
                }
                None => {
                    let g = &group;
                    prepare(tx.conn(), q::INSERT_GROUP)
                        .and_then(|mut stmt| stmt.execute(params![g.id, g.name, key, external_id, now.micros()]))
                        .or_db(CONTEXT)?;
                    tx.append(group::created_entry(g))?;
                    g.id
                }
            };
            let changed = change_members(tx, id, &[MembersChange::Add(members)], now)?;
            let made = group_by_id(tx.conn(), id).or_db(CONTEXT)?.ok_or(DomainError::NotFound)?;
            Ok((made, changed))
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
            const CONTEXT: &str = "change a SCIM group";
            let Some(before) = group_by_id(tx.conn(), id).or_db(CONTEXT)? else { return Ok(None) };
            let mut touched = false;
            if let Some(name) = write.name.as_ref().filter(|name| **name != before.group.name) {
                prepare(tx.conn(), q::RENAME_GROUP)
                    .and_then(|mut stmt| stmt.execute(params![id, name, group::name_key(name)]))
                    .or_db(CONTEXT)?;
                touched = true;
            }
            if let Some(external_id) = write.external_id.as_ref().filter(|e| **e != before.external_id) {
                prepare(tx.conn(), q::SET_EXTERNAL_ID)
                    .and_then(|mut stmt| stmt.execute(params![id, external_id]))
                    .or_db(CONTEXT)?;
                touched = true;
            }
            let changed = change_members(tx, id, &write.members, now)?;
            if touched || changed.any() {
                prepare(tx.conn(), q::TOUCH_GROUP)
                    .and_then(|mut stmt| stmt.execute(params![id, now.micros()]))
                    .or_db(CONTEXT)?;
            }
            let after = group_by_id(tx.conn(), id).or_db(CONTEXT)?.ok_or(DomainError::NotFound)?;
            if touched {
                tx.append(group::updated_entry(&before.group, &after.group))?;
            }
            Ok(Some((after, changed)))
        })
        .await
    }
}

/// Applies `changes` in order to group `id`'s SCIM memberships, recording each.
fn change_members(
    tx: &mut SqliteTx<'_>,
    id: Uuid,
    changes: &[MembersChange],
    now: Timestamp,
) -> Result<MembersChanged> {
    const CONTEXT: &str = "change a SCIM group's members";
    let mut changed = MembersChanged::default();
    for change in changes {
        let held: HashSet<Uuid> = if change.needs_held() {
            prepare(tx.conn(), q::SCIM_MEMBER_IDS)
                .and_then(|mut stmt| stmt.query_map([id], |row| row.get(0))?.collect())
                .or_db(CONTEXT)?
        } else {
            HashSet::new()
        };
        let (add, remove) = change.split(&held);
        for user in remove {
            let gone = prepare(tx.conn(), q::REMOVE_MEMBER)
                .and_then(|mut stmt| stmt.execute(params![id, user]))
                .or_db(CONTEXT)?;
            if gone > 0 {
                changed.removed += 1;
                tx.append(group::synced_member_entry(false, id, user, scim::SOURCE))?;
            }
        }
        for user in add {
            let known = prepare(tx.conn(), q::IS_SCIM_USER)
                .and_then(|mut stmt| stmt.query_row([user], |_| Ok(())).optional())
                .or_db(CONTEXT)?;
            if known.is_none() {
                return Err(DomainError::invalid("members", format!("{user} is not a SCIM user")));
            }
            let added = prepare(tx.conn(), q::ADD_MEMBER)
                .and_then(|mut stmt| stmt.execute(params![id, user, now.micros()]))
                .or_db(CONTEXT)?;
            if added > 0 {
                changed.added += 1;
                tx.append(group::synced_member_entry(true, id, user, scim::SOURCE))?;
            }
        }
    }
    Ok(changed)
}

/// The filter's value, bound as `$3`.
fn user_filter_value(filter: &UserFilter) -> Option<Box<dyn ToSql + Send>> {
    match filter {
        UserFilter::All => None,
        UserFilter::UserName(v) | UserFilter::ExternalId(v) | UserFilter::DisplayName(v) | UserFilter::Email(v) => {
            Some(Box::new(v.clone()))
        }
        UserFilter::Id(id) => Some(Box::new(*id)),
    }
}

fn group_filter_value(filter: &GroupFilter) -> Option<Box<dyn ToSql + Send>> {
    match filter {
        GroupFilter::All => None,
        GroupFilter::DisplayName(v) | GroupFilter::ExternalId(v) => Some(Box::new(v.clone())),
        GroupFilter::Id(id) => Some(Box::new(*id)),
    }
}

fn group_by_id(conn: &Connection, id: Uuid) -> rusqlite::Result<Option<ScimGroup>> {
    prepare(conn, q::GROUP)?.query_row([id], scim_group).optional()
}

fn scim_group(row: &rusqlite::Row<'_>) -> rusqlite::Result<ScimGroup> {
    let columns = sql::groups::GroupColumns {
        id: row.get(0)?,
        name: row.get(1)?,
        description: row.get(2)?,
        source: row.get(3)?,
        member_count: row.get(4)?,
        inserted_at: row.get(5)?,
        updated_at: row.get(6)?,
    };
    Ok(ScimGroup { group: Group::from(columns), external_id: row.get(7)? })
}

#[async_trait]
impl ScimTx for SqliteTx<'_> {
    async fn lock_user_by_email(&mut self, key: &str) -> Result<Option<User>> {
        let row = prepare(self.conn(), sql::USER_BY_EMAIL)
            .and_then(|mut stmt| stmt.query_row([key], rows::user).optional())
            .or_db("lock a user")?;
        row.map(User::try_from).transpose()
    }

    async fn insert_user(&mut self, user: &User) -> Result<()> {
        insert_row(self, "insert a user", sql::INSERT_USER, &UserRow::from(user))
    }

    async fn scim_profile(&mut self, user_id: Uuid) -> Result<Option<(ScimProfile, Timestamp, Timestamp)>> {
        let row = prepare(self.conn(), q::PROFILE)
            .and_then(|mut stmt| stmt.query_row([user_id], rows::scim_profile).optional())
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
        insert_row(self, "write a SCIM profile", q::PUT_PROFILE, &ScimUserRow::new(user_id, profile, inserted_at, now))
    }

    async fn delete_scim_profile(&mut self, user_id: Uuid) -> Result<bool> {
        let n = prepare(self.conn(), q::DELETE_PROFILE)
            .and_then(|mut stmt| stmt.execute([user_id]))
            .or_db("delete a SCIM profile")?;
        Ok(n > 0)
    }
}
