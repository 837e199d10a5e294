//! [`GroupStore`] on PostgreSQL. A write appends its audit event in its transaction,
//! pending, and wakes the sealer after the commit.

use async_trait::async_trait;
use ferrozone_domain::error::Result;
use std::collections::HashSet;

use ferrozone_domain::group::{self, Group, GroupUpdate, Member};
use ferrozone_domain::group_sync::GroupSync;
use ferrozone_domain::store::{GroupStore, MemberAdded};
use ferrozone_domain::Timestamp;
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};
use uuid::Uuid;

use super::super::errors::OrDb;
use super::PgStore;
use crate::sql::groups as sql;

#[async_trait]
impl GroupStore for PgStore {
    async fn insert_group(&self, group: &Group) -> Result<()> {
        let group = group.clone();
        self.write(move |tx| {
            Box::pin(async move {
                let g = &group;
                sqlx::query(sql::INSERT)
                    .bind(g.id)
                    .bind(&g.name)
                    .bind(group::name_key(&g.name))
                    .bind(&g.description)
                    .bind(&g.source)
                    .bind(g.inserted_at.micros())
                    .execute(tx.conn())
                    .await
                    .or_db("insert a group")?;
                tx.append(group::created_entry(g)).await
            })
        })
        .await
    }

    async fn list_groups(&self) -> Result<Vec<Group>> {
        let rows = sqlx::query(sql::LIST).try_map(columns).fetch_all(&self.pool).await.or_db("list groups")?;
        Ok(rows.into_iter().map(Group::from).collect())
    }

    async fn user_groups(&self, user: Uuid) -> Result<Vec<Group>> {
        let rows = sqlx::query(sql::OF_USER)
            .bind(user)
            .try_map(columns)
            .fetch_all(&self.pool)
            .await
            .or_db("list a user's groups")?;
        Ok(rows.into_iter().map(Group::from).collect())
    }

    async fn group_by_id(&self, id: Uuid) -> Result<Option<Group>> {
        let row =
            sqlx::query(sql::BY_ID).bind(id).try_map(columns).fetch_optional(&self.pool).await.or_db("read a group")?;
        Ok(row.map(Group::from))
    }

    async fn update_group(&self, update: &GroupUpdate) -> Result<Option<Group>> {
        let update = update.clone();
        self.write(move |tx| {
            Box::pin(async move {
                const CONTEXT: &str = "update a group";
                let u = &update;
                let before = locked(tx.conn(), u.id).await.or_db(CONTEXT)?;
                let Some(before) = before else { return Ok(None) };
                sqlx::query(sql::UPDATE)
                    .bind(u.id)
                    .bind(&u.name)
                    .bind(group::name_key(&u.name))
                    .bind(&u.description)
                    .bind(u.now.micros())
                    .execute(tx.conn())
                    .await
                    .or_db(CONTEXT)?;
                let after = u.applied_to(&before);
                if before.name != after.name || before.description != after.description {
                    tx.append(group::updated_entry(&before, &after)).await?;
                }
                Ok(Some(after))
            })
        })
        .await
    }

    async fn delete_group(&self, id: Uuid) -> Result<Option<Group>> {
        self.write(move |tx| {
            Box::pin(async move {
                let Some(group) = locked(tx.conn(), id).await.or_db("delete a group")? else { return Ok(None) };
                sqlx::query(sql::DELETE).bind(id).execute(tx.conn()).await.or_db("delete a group")?;
                tx.append(group::deleted_entry(&group)).await?;
                Ok(Some(group))
            })
        })
        .await
    }

    async fn sync_user_groups(&self, user: Uuid, source: &str, names: &[String], now: Timestamp) -> Result<GroupSync> {
        let (source, names) = (source.to_owned(), names.to_vec());
        self.write(move |tx| {
            Box::pin(async move {
                const CONTEXT: &str = "apply a provider's groups";
                // The user's row held: a delete of the user waits for these memberships.
                let user_row = sqlx::query(sql::USER_EXISTS_LOCKED_POSTGRES).bind(user).fetch_optional(tx.conn()).await;
                if user_row.or_db(CONTEXT)?.is_none() {
                    return Ok(GroupSync::default());
                }
                let mut sync = GroupSync::default();
                let mut wanted = HashSet::new();
                for name in &names {
                    let (id, made) = group_named(tx.conn(), name, &source, now).await.or_db(CONTEXT)?;
                    if let Some(made) = made {
                        sync.created += 1;
                        tx.append(group::created_entry(&made)).await?;
                    }
                    wanted.insert(id);
                }
                let held: HashSet<Uuid> = sqlx::query_scalar(sql::SOURCED_MEMBERSHIPS)
                    .bind(user)
                    .bind(&source)
                    .fetch_all(tx.conn())
                    .await
                    .or_db(CONTEXT)?
                    .into_iter()
                    .collect();
                for gone in held.difference(&wanted) {
                    let query = sqlx::query(sql::REMOVE_SOURCED_MEMBER).bind(gone).bind(user).bind(&source);
                    query.execute(tx.conn()).await.or_db(CONTEXT)?;
                    sync.removed += 1;
                    tx.append(group::synced_member_entry(false, *gone, user, &source)).await?;
                }
                for new in wanted.difference(&held) {
                    let query = sqlx::query(sql::ADD_MEMBER).bind(new).bind(user).bind(&source).bind(now.micros());
                    if query.execute(tx.conn()).await.or_db(CONTEXT)?.rows_affected() > 0 {
                        sync.added += 1;
                        tx.append(group::synced_member_entry(true, *new, user, &source)).await?;
                    }
                }
                Ok(sync)
            })
        })
        .await
    }

    async fn group_members(&self, id: Uuid) -> Result<Option<Vec<Member>>> {
        const CONTEXT: &str = "list a group's members";
        let mut conn = self.pool.acquire().await.or_db(CONTEXT)?;
        if sqlx::query(sql::EXISTS).bind(id).fetch_optional(&mut *conn).await.or_db(CONTEXT)?.is_none() {
            return Ok(None);
        }
        let members = sqlx::query(sql::MEMBERS)
            .bind(id)
            .try_map(|row: PgRow| Ok(sql::member(row.try_get(0)?, row.try_get(1)?, row.try_get(2)?, row.try_get(3)?)))
            .fetch_all(&mut *conn)
            .await
            .or_db(CONTEXT)?;
        Ok(Some(members))
    }

    async fn group_member(&self, group: Uuid, user: Uuid) -> Result<Option<Member>> {
        sqlx::query(sql::MEMBER)
            .bind(group)
            .bind(user)
            .try_map(|row: PgRow| Ok(sql::member(row.try_get(0)?, row.try_get(1)?, row.try_get(2)?, row.try_get(3)?)))
            .fetch_optional(&self.pool)
            .await
            .or_db("read a group member")
    }

    async fn add_group_member(&self, group: Uuid, user: Uuid, source: &str, now: Timestamp) -> Result<MemberAdded> {
        let source = source.to_owned();
        self.write(move |tx| {
            Box::pin(async move {
                const CONTEXT: &str = "add a group member";
                // The group's row locked: a delete of the group waits for this membership.
                if locked(tx.conn(), group).await.or_db(CONTEXT)?.is_none() {
                    return Ok(MemberAdded::NoSuchGroup);
                }
                let user_row = sqlx::query(sql::USER_EXISTS_LOCKED_POSTGRES).bind(user).fetch_optional(tx.conn()).await;
                if user_row.or_db(CONTEXT)?.is_none() {
                    return Ok(MemberAdded::NoSuchUser);
                }
                let added = sqlx::query(sql::ADD_MEMBER)
                    .bind(group)
                    .bind(user)
                    .bind(&source)
                    .bind(now.micros())
                    .execute(tx.conn())
                    .await
                    .or_db(CONTEXT)?;
                if added.rows_affected() == 0 {
                    return Ok(MemberAdded::AlreadyMember);
                }
                tx.append(group::member_added_entry(group, user)).await?;
                Ok(MemberAdded::Added)
            })
        })
        .await
    }

    async fn remove_group_member(&self, group: Uuid, user: Uuid) -> Result<bool> {
        self.write(move |tx| {
            Box::pin(async move {
                let removed = sqlx::query(sql::REMOVE_MEMBER)
                    .bind(group)
                    .bind(user)
                    .execute(tx.conn())
                    .await
                    .or_db("remove a group member")?;
                if removed.rows_affected() == 0 {
                    return Ok(false);
                }
                tx.append(group::member_removed_entry(group, user)).await?;
                Ok(true)
            })
        })
        .await
    }
}

/// The group `id`, its row locked until the transaction ends.
async fn locked(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<Option<Group>> {
    let row = sqlx::query(sql::BY_ID_FOR_UPDATE_POSTGRES).bind(id).try_map(columns).fetch_optional(conn).await?;
    Ok(row.map(Group::from))
}

fn columns(row: PgRow) -> sqlx::Result<sql::GroupColumns> {
    Ok(sql::GroupColumns {
        id: row.try_get(0)?,
        name: row.try_get(1)?,
        description: row.try_get(2)?,
        source: row.try_get(3)?,
        member_count: row.try_get(4)?,
        inserted_at: row.try_get(5)?,
        updated_at: row.try_get(6)?,
    })
}

/// The id of the group named `name` (whatever its case), held against its deletion until
/// the transaction ends, made from `source` when there is none; the group made, if one was.
/// Another sign-in making the same group at once: the insert waits for its commit and does
/// nothing, and the second read finds that group.
async fn group_named(
    conn: &mut PgConnection,
    name: &str,
    source: &str,
    now: Timestamp,
) -> sqlx::Result<(Uuid, Option<Group>)> {
    let key = group::name_key(name);
    let find = || sqlx::query_scalar::<_, Uuid>(sql::ID_BY_KEY_LOCKED_POSTGRES).bind(key.clone());
    if let Some(id) = find().fetch_optional(&mut *conn).await? {
        return Ok((id, None));
    }
    let made = group::from_provider(name, source, now);
    let inserted = sqlx::query(sql::INSERT_IF_NEW)
        .bind(made.id)
        .bind(&made.name)
        .bind(&key)
        .bind(&made.source)
        .bind(now.micros())
        .execute(&mut *conn)
        .await?;
    if inserted.rows_affected() > 0 {
        return Ok((made.id, Some(made)));
    }
    Ok((find().fetch_one(&mut *conn).await?, None))
}
