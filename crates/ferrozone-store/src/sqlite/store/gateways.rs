//! [`GatewayStore`] on SQLite: writes in the writer's batches, reads on pooled connections.

use async_trait::async_trait;
use ferrozone_domain::error::Result;
use ferrozone_domain::gateway::{self, Enrolment, Gateway, GatewayInsert, Lease, LeaseOutcome};
use ferrozone_domain::store::GatewayStore;
use ferrozone_domain::Timestamp;
use rusqlite::{params, OptionalExtension};
use uuid::Uuid;

use super::super::errors::OrDb;
use super::super::prepare;
use super::SqliteStore;
use crate::sql::gateways as sql;

#[async_trait]
impl GatewayStore for SqliteStore {
    async fn insert_gateway(&self, insert: &GatewayInsert) -> Result<()> {
        let insert = insert.clone();
        self.write(move |tx| {
            let g = &insert.gateway;
            prepare(tx.conn(), sql::INSERT)
                .and_then(|mut stmt| {
                    stmt.execute(params![
                        g.id,
                        g.name,
                        insert.enrolment_hash,
                        g.enrolment_expires_at.map(Timestamp::micros),
                        g.inserted_at.micros()
                    ])
                })
                .or_db("insert a gateway")?;
            tx.append(gateway::created_entry(g))
        })
        .await
    }

    async fn list_gateways(&self) -> Result<Vec<Gateway>> {
        self.read("list gateways", |conn| prepare(conn, sql::LIST)?.query_map([], columns)?.collect())
            .map(|rows: Vec<sql::GatewayColumns>| rows.into_iter().map(Gateway::from).collect())
    }

    async fn gateway_by_id(&self, id: Uuid) -> Result<Option<Gateway>> {
        let row = self.read("read a gateway", |conn| prepare(conn, sql::BY_ID)?.query_row([id], columns).optional())?;
        Ok(row.map(Gateway::from))
    }

    async fn enrol_gateway(&self, enrolment: &Enrolment) -> Result<Option<Gateway>> {
        let enrolment = enrolment.clone();
        self.write(move |tx| {
            let args =
                params![enrolment.enrolment_hash, enrolment.credential_hash, enrolment.version, enrolment.now.micros()];
            let row = prepare(tx.conn(), sql::ENROL)
                .and_then(|mut stmt| stmt.query_row(args, columns).optional())
                .or_db("enrol a gateway")?;
            let Some(enrolled) = row.map(Gateway::from) else { return Ok(None) };
            tx.append(gateway::enrolled_entry(&enrolled))?;
            Ok(Some(enrolled))
        })
        .await
    }

    async fn gateway_by_credential(&self, hash: &[u8]) -> Result<Option<Gateway>> {
        let row = self
            .read("read a gateway", |conn| prepare(conn, sql::BY_CREDENTIAL)?.query_row([hash], columns).optional())?;
        Ok(row.map(Gateway::from))
    }

    async fn revoke_gateway(&self, id: Uuid, now: Timestamp) -> Result<Option<Gateway>> {
        self.write(move |tx| {
            let row = prepare(tx.conn(), sql::REVOKE)
                .and_then(|mut stmt| stmt.query_row(params![id, now.micros()], columns).optional())
                .or_db("revoke a gateway")?;
            let Some(revoked) = row.map(Gateway::from) else { return Ok(None) };
            tx.append(gateway::revoked_entry(&revoked))?;
            Ok(Some(revoked))
        })
        .await
    }

    async fn hold_gateway_session(&self, lease: &Lease) -> Result<LeaseOutcome> {
        let lease = lease.clone();
        self.write(move |tx| {
            const CONTEXT: &str = "hold a gateway's session";
            let (hash, session, now) = (&lease.credential_hash, lease.session, lease.now.micros());
            let r = &lease.report;
            let said = params![r.backend, r.peers_applied, r.peers_refused, r.reconcile_failed, r.version];
            let renewed = prepare(tx.conn(), sql::RENEW)
                .and_then(|mut stmt| {
                    let args = [params![hash, session, now], said].concat();
                    stmt.query_row(args.as_slice(), columns).optional()
                })
                .or_db(CONTEXT)?;
            if let Some(row) = renewed {
                return Ok(LeaseOutcome::Held(row.into()));
            }
            let lapsed_before = lease.lapsed_before().micros();
            let args = [params![hash, session, now, lapsed_before], said].concat();
            let started = prepare(tx.conn(), sql::START)
                .and_then(|mut stmt| stmt.query_row(args.as_slice(), columns).optional())
                .or_db(CONTEXT)?;
            if let Some(row) = started {
                let gateway = Gateway::from(row);
                tx.append(gateway::connected_entry(&gateway))?;
                return Ok(LeaseOutcome::Started(gateway));
            }
            let exists =
                prepare(tx.conn(), sql::CREDENTIAL_EXISTS).and_then(|mut stmt| stmt.exists([hash])).or_db(CONTEXT)?;
            Ok(if exists { LeaseOutcome::HeldElsewhere } else { LeaseOutcome::Unknown })
        })
        .await
    }

    async fn release_gateway_session(&self, lease: &Lease) -> Result<bool> {
        let lease = lease.clone();
        self.write(move |tx| {
            let connected = prepare(tx.conn(), sql::BY_SESSION)
                .and_then(|mut stmt| stmt.query_row(params![lease.credential_hash, lease.session], |row| row.get(0)))
                .optional()
                .or_db("release a gateway's session")?;
            let args = params![lease.credential_hash, lease.session, lease.now.micros()];
            let row = prepare(tx.conn(), sql::RELEASE)
                .and_then(|mut stmt| stmt.query_row(args, columns).optional())
                .or_db("release a gateway's session")?;
            let Some(released) = row.map(Gateway::from) else { return Ok(false) };
            let since = connected.flatten().map(Timestamp::from_micros);
            tx.append(gateway::disconnected_entry(&released, since, "stopped"))?;
            Ok(true)
        })
        .await
    }

    async fn end_lapsed_gateway_sessions(&self, before: Timestamp) -> Result<Vec<Gateway>> {
        self.write(move |tx| {
            const CONTEXT: &str = "end lapsed gateway sessions";
            let lapsed: Vec<(Uuid, Option<i64>)> = prepare(tx.conn(), sql::LAPSED)
                .and_then(|mut stmt| stmt.query_map([before.micros()], |row| Ok((row.get(0)?, row.get(1)?)))?.collect())
                .or_db(CONTEXT)?;
            let mut ended = Vec::with_capacity(lapsed.len());
            for (id, since) in lapsed {
                let row = prepare(tx.conn(), sql::END_LAPSED)
                    .and_then(|mut stmt| stmt.query_row(params![id, before.micros()], columns).optional())
                    .or_db(CONTEXT)?;
                let Some(gateway) = row.map(Gateway::from) else { continue };
                tx.append(gateway::disconnected_entry(&gateway, since.map(Timestamp::from_micros), "lost"))?;
                ended.push(gateway);
            }
            Ok(ended)
        })
        .await
    }

    async fn vpn_session_starts(&self, cutoff: Timestamp) -> Result<Vec<(Uuid, Timestamp)>> {
        let rows: Vec<(Uuid, i64)> = self.read("read the VPN sessions", |conn| {
            prepare(conn, sql::SESSION_STARTS)?
                .query_map([cutoff.micros()], |row| Ok((row.get(0)?, row.get(1)?)))?
                .collect()
        })?;
        Ok(rows.into_iter().map(|(id, at)| (id, Timestamp::from_micros(at))).collect())
    }
}

fn columns(row: &rusqlite::Row<'_>) -> rusqlite::Result<sql::GatewayColumns> {
    Ok(sql::GatewayColumns {
        id: row.get(0)?,
        name: row.get(1)?,
        enrolment_expires_at: row.get(2)?,
        enrolled_at: row.get(3)?,
        revoked_at: row.get(4)?,
        last_seen_at: row.get(5)?,
        version: row.get(6)?,
        inserted_at: row.get(7)?,
        updated_at: row.get(8)?,
        connected_since: row.get(9)?,
        backend: row.get(10)?,
        peers_applied: row.get(11)?,
        peers_refused: row.get(12)?,
        reconcile_failed: row.get(13)?,
    })
}
