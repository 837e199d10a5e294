//! [`GatewayStore`] on PostgreSQL. A write appends its audit event in its transaction,
//! pending, and wakes the sealer after the commit.

use async_trait::async_trait;
use ferrozone_domain::error::Result;
use ferrozone_domain::gateway::{self, Enrolment, Gateway, GatewayInsert};
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
    })
}
