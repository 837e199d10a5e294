//! [`LinkStore`] on SQLite: every write in the writer's batches, reads on pooled
//! connections.

use async_trait::async_trait;
use ferrozone_domain::crypto::Sealed;
use ferrozone_domain::email::{EmailLease, EmailOutcome};
use ferrozone_domain::error::Result;
use ferrozone_domain::model::{User, UserUpdate};
use ferrozone_domain::sign_in_link::{self, LinkInsert, LinkKind, ListedLink, SignInLink};
use ferrozone_domain::store::LinkStore;
use ferrozone_domain::{audit::changes, rules, Timestamp};
use rusqlite::{params, OptionalExtension};
use uuid::Uuid;

use super::super::errors::OrDb;
use super::super::prepare;
use super::{insert_row, run_now, SqliteStore};
use crate::rows::UserRow;
use crate::sql::links as sql;
use crate::sql::{self as statements};

#[async_trait]
impl LinkStore for SqliteStore {
    async fn insert_sign_in_link(&self, insert: &LinkInsert) -> Result<()> {
        let insert = insert.clone();
        self.write(move |tx| {
            if let Some(user) = &insert.new_user {
                insert_row(tx, "insert a user", statements::INSERT_USER, &UserRow::from(user))?;
                tx.append(changes::user_created(user))?;
            }
            let conn = tx.conn();
            if let Some(email) = &insert.email {
                prepare(conn, sql::INSERT_EMAIL)
                    .and_then(|mut stmt| {
                        stmt.execute(params![email.id, email.recipient, email.message.0, email.now.micros()])
                    })
                    .or_db("queue an email")?;
            }
            let link = &insert.link;
            prepare(conn, sql::INSERT_LINK)
                .and_then(|mut stmt| {
                    stmt.execute(params![
                        link.id,
                        link.user_id,
                        link.kind.as_str(),
                        insert.secret_hash,
                        link.created_by,
                        link.email_id,
                        link.inserted_at.micros(),
                        link.expires_at.micros()
                    ])
                })
                .or_db("insert a sign-in link")?;
            tx.append(sign_in_link::created_entry(link))
        })
        .await
    }

    async fn list_sign_in_links(&self, kind: LinkKind, limit: u32) -> Result<Vec<ListedLink>> {
        self.read("list sign-in links", |conn| {
            prepare(conn, sql::LIST)?
                .query_map(params![kind.as_str(), i64::from(limit)], |row| {
                    Ok(sql::listed(
                        columns(row)?,
                        (row.get(9)?, row.get(10)?),
                        row.get(11)?,
                        row.get(12)?,
                        row.get(13)?,
                        row.get(14)?,
                    ))
                })?
                .collect()
        })
    }

    async fn sign_in_link_by_hash(&self, hash: &[u8]) -> Result<Option<(SignInLink, User)>> {
        let link = self
            .read("read a sign-in link", |conn| prepare(conn, sql::BY_HASH)?.query_row([hash], columns).optional())?;
        let Some(link) = link.map(sql::LinkColumns::link) else { return Ok(None) };
        Ok(self.user_by_id_now(link.user_id).await?.map(|user| (link, user)))
    }

    async fn use_sign_in_link(
        &self,
        hash: &[u8],
        now: Timestamp,
        password: Option<String>,
    ) -> Result<Option<(SignInLink, User)>> {
        let hash = hash.to_vec();
        self.write(move |tx| {
            let used = prepare(tx.conn(), sql::USE)
                .and_then(|mut stmt| stmt.query_row(params![hash, now.micros()], columns).optional())
                .or_db("use a sign-in link")?;
            let Some(link) = used.map(sql::LinkColumns::link) else { return Ok(None) };
            tx.append(sign_in_link::used_entry(&link, now))?;
            let update = UserUpdate { password_hash: password, ..UserUpdate::default() };
            let user = run_now(rules::users::update_in(tx, link.user_id, &update, now))?;
            Ok(Some((link, user)))
        })
        .await
    }

    async fn revoke_sign_in_link(&self, id: Uuid, now: Timestamp) -> Result<bool> {
        self.write(move |tx| {
            let revoked = prepare(tx.conn(), sql::REVOKE)
                .and_then(|mut stmt| stmt.query_row(params![id, now.micros()], columns).optional())
                .or_db("revoke an invitation")?;
            let Some(link) = revoked.map(sql::LinkColumns::link) else { return Ok(false) };
            tx.append(sign_in_link::revoked_entry(&link, now))?;
            Ok(true)
        })
        .await
    }

    async fn live_sign_in_links(&self, user_id: Uuid, kind: LinkKind, now: Timestamp) -> Result<u64> {
        let count: i64 = self.read("count live sign-in links", |conn| {
            prepare(conn, sql::LIVE)?.query_row(params![user_id, kind.as_str(), now.micros()], |row| row.get(0))
        })?;
        Ok(u64::try_from(count).unwrap_or(0))
    }

    async fn claim_emails(&self, owner: Uuid, now: Timestamp, until: Timestamp, limit: u32) -> Result<Vec<EmailLease>> {
        self.write(move |tx| {
            prepare(tx.conn(), sql::CLAIM)
                .and_then(|mut stmt| {
                    stmt.query_map(params![owner, until.micros(), now.micros(), i64::from(limit)], |row| {
                        Ok(EmailLease {
                            id: row.get(0)?,
                            recipient: row.get(1)?,
                            message: Sealed(row.get(2)?),
                            attempts: row.get(3)?,
                            inserted_at: Timestamp::from_micros(row.get(4)?),
                        })
                    })?
                    .collect()
                })
                .or_db("claim emails")
        })
        .await
    }

    async fn record_email_attempt(&self, id: Uuid, owner: Uuid, outcome: &EmailOutcome) -> Result<bool> {
        let (outcome, now) = (outcome.clone(), Timestamp::now().micros());
        let empty: Vec<u8> = Vec::new();
        self.write(move |tx| {
            let conn = tx.conn();
            let changed = match &outcome {
                EmailOutcome::Sent => {
                    prepare(conn, sql::SENT).and_then(|mut stmt| stmt.execute(params![id, owner, now, empty]))
                }
                EmailOutcome::Failed { error, next_attempt_at } => prepare(conn, sql::FAILED)
                    .and_then(|mut stmt| stmt.execute(params![id, owner, error, next_attempt_at.micros()])),
                EmailOutcome::GaveUp { error } => {
                    prepare(conn, sql::GAVE_UP).and_then(|mut stmt| stmt.execute(params![id, owner, error, now, empty]))
                }
            };
            Ok(changed.or_db("record an email attempt")? == 1)
        })
        .await
    }

    async fn prune_sign_in_links(&self, before: Timestamp, max: u32) -> Result<u64> {
        self.write(move |tx| {
            let conn = tx.conn();
            let args = params![before.micros(), i64::from(max)];
            let emails =
                prepare(conn, sql::PRUNE_EMAILS).and_then(|mut stmt| stmt.execute(args)).or_db("prune emails")?;
            let links =
                prepare(conn, sql::PRUNE_LINKS).and_then(|mut stmt| stmt.execute(args)).or_db("prune sign-in links")?;
            Ok((emails + links) as u64)
        })
        .await
    }
}

impl SqliteStore {
    async fn user_by_id_now(&self, id: Uuid) -> Result<Option<User>> {
        ferrozone_domain::Store::user_by_id(self, id).await
    }
}

fn columns(row: &rusqlite::Row<'_>) -> rusqlite::Result<sql::LinkColumns> {
    Ok(sql::LinkColumns {
        id: row.get(0)?,
        user_id: row.get(1)?,
        kind: row.get(2)?,
        created_by: row.get(3)?,
        email_id: row.get(4)?,
        inserted_at: row.get(5)?,
        expires_at: row.get(6)?,
        used_at: row.get(7)?,
        revoked_at: row.get(8)?,
    })
}
