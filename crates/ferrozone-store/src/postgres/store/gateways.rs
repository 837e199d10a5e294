//! [`GatewayStore`] on PostgreSQL. A write appends its audit event in its transaction,
//! pending, and wakes the sealer after the commit.

use async_trait::async_trait;
use ferrozone_domain::error::Result;
use ferrozone_domain::gateway::{self, Enrolment, Gateway, GatewayInsert, GatewayReport, Lease, LeaseOutcome};
use ferrozone_domain::store::GatewayStore;
use ferrozone_domain::Timestamp;
use sqlx::postgres::PgRow;
use sqlx::Row;
use uuid::Uuid;

use super::super::errors::OrDb;
use super::PgStore;
use crate::sql::gateways as sql;

#[async_trait]
impl GatewayStore for PgStore {
    async fn insert_gateway(&self, insert: &GatewayInsert) -> Result<()> {
        let insert = insert.clone();
        self.write(move |tx| {
            Box::pin(async move {
                let g = &insert.gateway;
                sqlx::query(sql::INSERT)
                    .bind(g.id)
                    .bind(&g.name)
                    .bind(&insert.enrolment_hash)
                    .bind(g.enrolment_expires_at.map(Timestamp::micros))
                    .bind(g.inserted_at.micros())
                    .execute(tx.conn())
                    .await
                    .or_db("insert a gateway")?;
                tx.append(gateway::created_entry(g)).await
            })
        })
        .await
    }

    async fn list_gateways(&self) -> Result<Vec<Gateway>> {
        let rows = sqlx::query(sql::LIST).try_map(columns).fetch_all(&self.pool).await.or_db("list gateways")?;
        Ok(rows.into_iter().map(Gateway::from).collect())
    }

    async fn gateway_by_id(&self, id: Uuid) -> Result<Option<Gateway>> {
        let row = sqlx::query(sql::BY_ID)
            .bind(id)
            .try_map(columns)
            .fetch_optional(&self.pool)
            .await
            .or_db("read a gateway")?;
        Ok(row.map(Gateway::from))
    }

    async fn enrol_gateway(&self, enrolment: &Enrolment) -> Result<Option<Gateway>> {
        let enrolment = enrolment.clone();
        self.write(move |tx| {
            Box::pin(async move {
                let row = sqlx::query(sql::ENROL)
                    .bind(&enrolment.enrolment_hash)
                    .bind(&enrolment.credential_hash)
                    .bind(&enrolment.version)
                    .bind(enrolment.now.micros())
                    .try_map(columns)
                    .fetch_optional(tx.conn())
                    .await
                    .or_db("enrol a gateway")?;
                let Some(enrolled) = row.map(Gateway::from) else { return Ok(None) };
                tx.append(gateway::enrolled_entry(&enrolled)).await?;
                Ok(Some(enrolled))
            })
        })
        .await
    }

    async fn gateway_by_credential(&self, hash: &[u8]) -> Result<Option<Gateway>> {
        let row = sqlx::query(sql::BY_CREDENTIAL)
            .bind(hash)
            .try_map(columns)
            .fetch_optional(&self.pool)
            .await
            .or_db("read a gateway")?;
        Ok(row.map(Gateway::from))
    }

    async fn revoke_gateway(&self, id: Uuid, now: Timestamp) -> Result<Option<Gateway>> {
        self.write(move |tx| {
            Box::pin(async move {
                let row = sqlx::query(sql::REVOKE)
                    .bind(id)
                    .bind(now.micros())
                    .try_map(columns)
                    .fetch_optional(tx.conn())
                    .await
                    .or_db("revoke a gateway")?;
                let Some(revoked) = row.map(Gateway::from) else { return Ok(None) };
                tx.append(gateway::revoked_entry(&revoked)).await?;
                Ok(Some(revoked))
            })
        })
        .await
    }

    async fn hold_gateway_session(&self, lease: &Lease) -> Result<LeaseOutcome> {
        let lease = lease.clone();
        self.write(move |tx| {
            Box::pin(async move {
                const CONTEXT: &str = "hold a gateway's session";
                let (hash, session, now) = (&lease.credential_hash, lease.session, lease.now.micros());
                let r = &lease.report;
                let renew = sqlx::query(sql::RENEW).bind(hash).bind(session).bind(now);
                let renewed = with_report(renew, r).try_map(columns).fetch_optional(tx.conn()).await.or_db(CONTEXT)?;
                if let Some(row) = renewed {
                    return Ok(LeaseOutcome::Held(row.into()));
                }
                let start =
                    sqlx::query(sql::START).bind(hash).bind(session).bind(now).bind(lease.lapsed_before().micros());
                let started = with_report(start, r).try_map(columns).fetch_optional(tx.conn()).await.or_db(CONTEXT)?;
                if let Some(row) = started {
                    let gateway = Gateway::from(row);
                    tx.append(gateway::connected_entry(&gateway)).await?;
                    return Ok(LeaseOutcome::Started(gateway));
                }
                let exists =
                    sqlx::query(sql::CREDENTIAL_EXISTS).bind(hash).fetch_optional(tx.conn()).await.or_db(CONTEXT)?;
                Ok(if exists.is_some() { LeaseOutcome::HeldElsewhere } else { LeaseOutcome::Unknown })
            })
        })
        .await
    }

    async fn release_gateway_session(&self, lease: &Lease) -> Result<bool> {
        let lease = lease.clone();
        self.write(move |tx| {
            Box::pin(async move {
                const CONTEXT: &str = "release a gateway's session";
                let connected: Option<Option<i64>> = sqlx::query_scalar(sql::BY_SESSION)
                    .bind(&lease.credential_hash)
                    .bind(lease.session)
                    .fetch_optional(tx.conn())
                    .await
                    .or_db(CONTEXT)?;
                let row = sqlx::query(sql::RELEASE)
                    .bind(&lease.credential_hash)
                    .bind(lease.session)
                    .bind(lease.now.micros())
                    .try_map(columns)
                    .fetch_optional(tx.conn())
                    .await
                    .or_db(CONTEXT)?;
                let Some(released) = row.map(Gateway::from) else { return Ok(false) };
                let since = connected.flatten().map(Timestamp::from_micros);
                tx.append(gateway::disconnected_entry(&released, since, "stopped")).await?;
                Ok(true)
            })
        })
        .await
    }

    async fn end_lapsed_gateway_sessions(&self, before: Timestamp) -> Result<Vec<Gateway>> {
        self.write(move |tx| {
            Box::pin(async move {
                const CONTEXT: &str = "end lapsed gateway sessions";
                let lapsed: Vec<(uuid::Uuid, Option<i64>)> =
                    sqlx::query_as(sql::LAPSED).bind(before.micros()).fetch_all(tx.conn()).await.or_db(CONTEXT)?;
                let mut ended = Vec::with_capacity(lapsed.len());
                for (id, since) in lapsed {
                    let row = sqlx::query(sql::END_LAPSED)
                        .bind(id)
                        .bind(before.micros())
                        .try_map(columns)
                        .fetch_optional(tx.conn())
                        .await
                        .or_db(CONTEXT)?;
                    let Some(gateway) = row.map(Gateway::from) else { continue };
                    let entry = gateway::disconnected_entry(&gateway, since.map(Timestamp::from_micros), "lost");
                    tx.append(entry).await?;
                    ended.push(gateway);
                }
                Ok(ended)
            })
        })
        .await
    }

    async fn vpn_session_starts(&self, cutoff: Timestamp) -> Result<Vec<(Uuid, Timestamp)>> {
        let rows: Vec<(Uuid, i64)> = sqlx::query_as(sql::SESSION_STARTS)
            .bind(cutoff.micros())
            .fetch_all(&self.pool)
            .await
            .or_db("read the VPN sessions")?;
        Ok(rows.into_iter().map(|(id, at)| (id, Timestamp::from_micros(at))).collect())
    }
}

/// `query` with the report's parameters bound next (the order of `sql::gateways`'s
/// `report_set!`).
fn with_report<'q>(
    query: sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>,
    r: &'q GatewayReport,
) -> sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments> {
    query.bind(&r.backend).bind(r.peers_applied).bind(r.peers_refused).bind(r.reconcile_failed).bind(&r.version)
}

fn columns(row: PgRow) -> sqlx::Result<sql::GatewayColumns> {
    Ok(sql::GatewayColumns {
        id: row.try_get(0)?,
        name: row.try_get(1)?,
        enrolment_expires_at: row.try_get(2)?,
        enrolled_at: row.try_get(3)?,
        revoked_at: row.try_get(4)?,
        last_seen_at: row.try_get(5)?,
        version: row.try_get(6)?,
        inserted_at: row.try_get(7)?,
        updated_at: row.try_get(8)?,
        connected_since: row.try_get(9)?,
        backend: row.try_get(10)?,
        peers_applied: row.try_get(11)?,
        peers_refused: row.try_get(12)?,
        reconcile_failed: row.try_get(13)?,
    })
}
