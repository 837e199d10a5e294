//! [`GroupStore`] on SQLite: writes in the writer's batches, reads on pooled connections.

use async_trait::async_trait;
use ferrozone_domain::error::Result;
use std::collections::HashSet;

use ferrozone_domain::group::{self, Group, GroupUpdate, Member};
use ferrozone_domain::group_sync::GroupSync;
use ferrozone_domain::store::{GroupStore, MemberAdded};
use ferrozone_domain::Timestamp;
use rusqlite::{params, Connection, OptionalExtension};
use uuid::Uuid;

use super::super::errors::OrDb;
use super::super::prepare;
use super::SqliteStore;
use crate::sql::groups as sql;

#[async_trait]
impl GroupStore for SqliteStore {
    async fn insert_group(&self, group: &Group) -> Result<()> {
        let group = group.clone();
        self.write(move |tx| {
            let g = &group;
            prepare(tx.conn(), sql::INSERT)
                .and_then(|mut stmt| {
                    let key = group::name_key(&g.name);
                    stmt.execute(params![g.id, g.name, key, g.description, g.source, g.inserted_at.micros()])
                })
                .or_db("insert a group")?;
            tx.append(group::created_entry(g))
        })
        .await
    }

    async fn list_groups(&self) -> Result<Vec<Group>> {
        self.read("list groups", |conn| prepare(conn, sql::LIST)?.query_map([], columns)?.collect())
            .map(|rows: Vec<sql::GroupColumns>| rows.into_iter().map(Group::from).collect())
    }

    async fn group_by_id(&self, id: Uuid) -> Result<Option<Group>> {
        self.read("read a group", |conn| by_id(conn, id))
    }

    async fn update_group(&self, update: &GroupUpdate) -> Result<Option<Group>> {
        let update = update.clone();
        self.write(move |tx| {
            let Some(before) = by_id(tx.conn(), update.id).or_db("update a group")? else { return Ok(None) };
            let u = &update;
            prepare(tx.conn(), sql::UPDATE)
                .and_then(|mut stmt| {
                    stmt.execute(params![u.id, u.name, group::name_key(&u.name), u.description, u.now.micros()])
                })
                .or_db("update a group")?;
            let after = u.applied_to(&before);
            if before.name != after.name || before.description != after.description {
                tx.append(group::updated_entry(&before, &after))?;
            }
            Ok(Some(after))
        })
        .await
    }

    async fn delete_group(&self, id: Uuid) -> Result<Option<Group>> {
        self.write(move |tx| {
            let Some(group) = by_id(tx.conn(), id).or_db("delete a group")? else { return Ok(None) };
            prepare(tx.conn(), sql::DELETE).and_then(|mut stmt| stmt.execute([id])).or_db("delete a group")?;
            tx.append(group::deleted_entry(&group))?;
            Ok(Some(group))
        })
        .await
    }

    async fn group_members(&self, id: Uuid) -> Result<Option<Vec<Member>>> {
        self.read("list a group's members", |conn| {
            if !exists(conn, sql::EXISTS, id)? {
                return Ok(None);
            }
            let members = prepare(conn, sql::MEMBERS)?
                .query_map([id], |row| Ok(sql::member(row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(Some(members))
        })
    }

    async fn group_member(&self, group: Uuid, user: Uuid) -> Result<Option<Member>> {
        self.read("read a group member", |conn| {
            prepare(conn, sql::MEMBER)?
                .query_row(params![group, user], |row| {
                    Ok(sql::member(row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
                })
                .optional()
        })
    }

    async fn add_group_member(&self, group: Uuid, user: Uuid, source: &str, now: Timestamp) -> Result<MemberAdded> {
        let source = source.to_owned();
        self.write(move |tx| {
            const CONTEXT: &str = "add a group member";
            if !exists(tx.conn(), sql::EXISTS, group).or_db(CONTEXT)? {
                return Ok(MemberAdded::NoSuchGroup);
            }
            if !exists(tx.conn(), sql::USER_EXISTS, user).or_db(CONTEXT)? {
                return Ok(MemberAdded::NoSuchUser);
            }
            let added = prepare(tx.conn(), sql::ADD_MEMBER)
                .and_then(|mut stmt| stmt.execute(params![group, user, source, now.micros()]))
                .or_db(CONTEXT)?;
            if added == 0 {
                return Ok(MemberAdded::AlreadyMember);
            }
            tx.append(group::member_added_entry(group, user))?;
            Ok(MemberAdded::Added)
        })
        .await
    }

    async fn user_groups(&self, user: Uuid) -> Result<Vec<Group>> {
        self.read("list a user's groups", |conn| prepare(conn, sql::OF_USER)?.query_map([user], columns)?.collect())
            .map(|rows: Vec<sql::GroupColumns>| rows.into_iter().map(Group::from).collect())
    }

    async fn sync_user_groups(&self, user: Uuid, source: &str, names: &[String], now: Timestamp) -> Result<GroupSync> {
        let (source, names) = (source.to_owned(), names.to_vec());
        self.write(move |tx| {
            const CONTEXT: &str = "apply a provider's groups";
            if !exists(tx.conn(), sql::USER_EXISTS, user).or_db(CONTEXT)? {
                return Ok(GroupSync::default());
            }
            let mut sync = GroupSync::default();
            let mut wanted = HashSet::new();
            for name in &names {
                let (id, made) = group_named(tx.conn(), name, &source, now).or_db(CONTEXT)?;
                if let Some(made) = made {
                    sync.created += 1;
                    tx.append(group::created_entry(&made))?;
                }
                wanted.insert(id);
            }
            let held: HashSet<Uuid> = prepare(tx.conn(), sql::SOURCED_MEMBERSHIPS)
                .and_then(|mut stmt| stmt.query_map(params![user, source], |row| row.get(0))?.collect())
                .or_db(CONTEXT)?;
            for gone in held.difference(&wanted) {
                prepare(tx.conn(), sql::REMOVE_SOURCED_MEMBER)
                    .and_then(|mut stmt| stmt.execute(params![gone, user, source]))
                    .or_db(CONTEXT)?;
                sync.removed += 1;
                tx.append(group::synced_member_entry(false, *gone, user, &source))?;
            }
            for new in wanted.difference(&held) {
                let added = prepare(tx.conn(), sql::ADD_MEMBER)
                    .and_then(|mut stmt| stmt.execute(params![new, user, source, now.micros()]))
                    .or_db(CONTEXT)?;
                if added > 0 {
                    sync.added += 1;
                    tx.append(group::synced_member_entry(true, *new, user, &source))?;
                }
            }
            Ok(sync)
        })
        .await
    }

    async fn remove_group_member(&self, group: Uuid, user: Uuid) -> Result<bool> {
        self.write(move |tx| {
            let removed = prepare(tx.conn(), sql::REMOVE_MEMBER)
                .and_then(|mut stmt| stmt.execute(params![group, user]))
                .or_db("remove a group member")?;
            if removed == 0 {
                return Ok(false);
            }
            tx.append(group::member_removed_entry(group, user))?;
            Ok(true)
        })
        .await
    }
}

/// The id of the group named `name` (whatever its case), made from `source` when there is
/// none; the group made, if one was.
fn group_named(conn: &Connection, name: &str, source: &str, now: Timestamp) -> rusqlite::Result<(Uuid, Option<Group>)> {
    let key = group::name_key(name);
    let found = prepare(conn, sql::ID_BY_KEY)?.query_row([&key], |row| row.get(0)).optional()?;
    if let Some(id) = found {
        return Ok((id, None));
    }
    let made = group::from_provider(name, source, now);
    prepare(conn, sql::INSERT_IF_NEW)?.execute(params![made.id, made.name, key, made.source, now.micros()])?;
    Ok((made.id, Some(made)))
}

fn by_id(conn: &Connection, id: Uuid) -> rusqlite::Result<Option<Group>> {
    Ok(prepare(conn, sql::BY_ID)?.query_row([id], columns).optional()?.map(Group::from))
}

fn exists(conn: &Connection, statement: &'static str, id: Uuid) -> rusqlite::Result<bool> {
    Ok(prepare(conn, statement)?.query_row([id], |_| Ok(())).optional()?.is_some())
}

fn columns(row: &rusqlite::Row<'_>) -> rusqlite::Result<sql::GroupColumns> {
    Ok(sql::GroupColumns {
        id: row.get(0)?,
        name: row.get(1)?,
        description: row.get(2)?,
        source: row.get(3)?,
        member_count: row.get(4)?,
        inserted_at: row.get(5)?,
        updated_at: row.get(6)?,
    })
}
