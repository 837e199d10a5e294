//! The gateways' registry and enrolment (docs/design/gateways.md, "Registry and
//! enrolment"): administrators create and revoke gateways; a gateway exchanges its
//! single-use enrolment token for its own credential.

use uuid::Uuid;
use zeroize::Zeroizing;

use super::{Domain, Principal};
use crate::crypto::{hash_token, prefixed_secret};
use crate::error::{DomainError, Result};
use crate::gateway::{
    Enrolment, Gateway, GatewayInsert, CREDENTIAL_PREFIX, ENROLMENT_HOURS, ENROLMENT_PREFIX, MAX_ENROLMENT_HOURS,
    MAX_NAME_LEN,
};
use crate::input::WrongTypes;
use crate::time::Timestamp;
use crate::validate::input::Check;

/// The longest version a gateway may report.
pub const MAX_VERSION_LEN: usize = 64;

/// A gateway as asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewGateway {
    pub name: Option<String>,
    /// How long its enrolment token works, 1 to [`MAX_ENROLMENT_HOURS`]; default
    /// [`ENROLMENT_HOURS`].
    pub enrolment_hours: Option<i64>,
    pub wrong_types: WrongTypes,
}

/// A gateway just created, with its enrolment token: shown this once.
pub struct CreatedGateway {
    pub gateway: Gateway,
    pub enrolment_token: Zeroizing<String>,
}

/// A gateway just enrolled, with its credential: shown this once.
pub struct EnrolledGateway {
    pub gateway: Gateway,
    pub credential: Zeroizing<String>,
}

impl Domain {
    pub async fn list_gateways(&self, actor: &Principal) -> Result<Vec<Gateway>> {
        actor.require_admin()?;
        self.store().list_gateways().await
    }

    pub async fn get_gateway(&self, actor: &Principal, id: Uuid) -> Result<Gateway> {
        actor.require_admin()?;
        self.store().gateway_by_id(id).await?.ok_or(DomainError::NotFound)
    }

    /// Creates a gateway awaiting enrolment, with its enrolment token.
    pub async fn create_gateway(&self, actor: &Principal, input: &NewGateway) -> Result<CreatedGateway> {
        actor.require_admin()?;
        let (name, hours) = check(input)?;
        let now = Timestamp::now();
        let enrolment_token = prefixed_secret(ENROLMENT_PREFIX);
        let gateway = Gateway {
            id: Uuid::now_v7(),
            name,
            enrolment_expires_at: Some(now.plus_secs(hours * 3600)),
            enrolled_at: None,
            revoked_at: None,
            last_seen_at: None,
            connected_since: None,
            version: None,
            inserted_at: now,
            updated_at: now,
            report: Default::default(),
        };
        let insert = GatewayInsert { gateway, enrolment_hash: hash_token(&enrolment_token).to_vec() };
        self.store().insert_gateway(&insert).await?;
        tracing::info!(gateway.id = %insert.gateway.id, "gateway created");
        Ok(CreatedGateway { gateway: insert.gateway, enrolment_token })
    }

    /// Revokes a gateway: its enrolment token or credential stops working at once.
    pub async fn revoke_gateway(&self, actor: &Principal, id: Uuid) -> Result<Gateway> {
        actor.require_admin()?;
        let revoked = self.store().revoke_gateway(id, Timestamp::now()).await?.ok_or(DomainError::NotFound)?;
        tracing::info!(gateway.id = %id, "gateway revoked");
        Ok(revoked)
    }

    /// Exchanges an enrolment token for the gateway's credential, once: `None` for a token
    /// that is unknown, used, expired or of a revoked gateway (one answer for all).
    pub async fn enrol_gateway(&self, token: &str, version: Option<&str>) -> Result<Option<EnrolledGateway>> {
        if !token.starts_with(ENROLMENT_PREFIX) {
            return Ok(None);
        }
        let version = checked_version(version)?;
        let credential = prefixed_secret(CREDENTIAL_PREFIX);
        let enrolment = Enrolment {
            enrolment_hash: hash_token(token).to_vec(),
            credential_hash: hash_token(&credential).to_vec(),
            version: version.map(str::to_owned),
            now: Timestamp::now(),
        };
        let Some(gateway) = self.store().enrol_gateway(&enrolment).await? else { return Ok(None) };
        tracing::info!(gateway.id = %gateway.id, version = gateway.version.as_deref(), "gateway enrolled");
        Ok(Some(EnrolledGateway { gateway, credential }))
    }

    /// The gateway whose credential is `credential`, unless it is unknown or revoked.
    pub async fn authenticate_gateway(&self, credential: &str) -> Result<Option<Gateway>> {
        if !credential.starts_with(CREDENTIAL_PREFIX) {
            return Ok(None);
        }
        self.store().gateway_by_credential(&hash_token(credential)).await
    }
}

/// The version a gateway says it runs, trimmed (`None` when blank): at most
/// [`MAX_VERSION_LEN`] printable characters, else `Invalid` on `version`.
pub fn checked_version(version: Option<&str>) -> Result<Option<&str>> {
    let version = version.map(str::trim).filter(|v| !v.is_empty());
    if version.is_some_and(|v| v.chars().count() > MAX_VERSION_LEN || v.chars().any(char::is_control)) {
        return Err(DomainError::invalid("version", format!("must be at most {MAX_VERSION_LEN} printable characters")));
    }
    Ok(version)
}

/// The checked name and lifetime of a new gateway.
fn check(input: &NewGateway) -> Result<(String, i64)> {
    let mut c = Check::new(&input.wrong_types);
    let name = c.bounded_text("name", input.name.as_deref(), MAX_NAME_LEN, true);
    let hours = if c.wrong_type("enrolment_hours") {
        0
    } else {
        let hours = input.enrolment_hours.unwrap_or(i64::from(ENROLMENT_HOURS));
        if !(1..=i64::from(MAX_ENROLMENT_HOURS)).contains(&hours) {
            c.add("enrolment_hours", format!("must be between 1 and {MAX_ENROLMENT_HOURS}"));
        }
        hours
    };
    c.finish((name, hours))
}
