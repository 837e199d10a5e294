//! OpenID Connect connections: the refresh tokens provider sign-ins leave, kept sealed, and
//! what the refresh job does with them (docs/design/identity-providers.md, "OpenID Connect"). The
//! protocol itself is `ferrozone-oidc`'s; this is the storage and the consequences.

use uuid::Uuid;
use zeroize::Zeroizing;

use super::Domain;
use crate::error::{DomainError, Result};
use crate::model::{DisabledBy, OidcConnection, UserUpdate};
use crate::time::Timestamp;

impl Domain {
    /// Keeps the refresh token of a provider sign-in (sealed), replacing the user's earlier
    /// one for that provider. The token counts as refreshed now.
    pub async fn save_oidc_connection(&self, user_id: Uuid, provider_id: &str, refresh_token: &str) -> Result<()> {
        let now = Timestamp::now();
        let connection = OidcConnection {
            user_id,
            provider_id: provider_id.to_owned(),
            refresh_token: self.cipher().seal(refresh_token.as_bytes()),
            refreshed_at: now,
            inserted_at: now,
            updated_at: now,
        };
        self.store().upsert_oidc_connection(&connection).await
    }

    /// Every connection, refresh tokens still sealed.
    pub async fn oidc_connections(&self) -> Result<Vec<OidcConnection>> {
        self.store().list_oidc_connections().await
    }

    /// Claims `connection` for a refresh by this process: the claimed connection (its
    /// `refreshed_at` now the claim's), or `None` when another process (or a new sign-in)
    /// got there first, and then the connection is not this process's to use.
    pub async fn claim_oidc_connection(&self, connection: &OidcConnection) -> Result<Option<OidcConnection>> {
        let seen = connection.refreshed_at;
        let now = Timestamp::now().max(Timestamp::from_micros(seen.micros().saturating_add(1)));
        let won = self.store().claim_oidc_connection(connection.user_id, &connection.provider_id, seen, now).await?;
        Ok(won.then(|| OidcConnection { refreshed_at: now, ..connection.clone() }))
    }

    /// The refresh token of `connection`, decrypted.
    pub fn reveal_refresh_token(&self, connection: &OidcConnection) -> Result<Zeroizing<String>> {
        let plain = self.cipher().open(&connection.refresh_token).map_err(DomainError::Internal)?;
        let text = std::str::from_utf8(&plain)
            .map_err(|_| DomainError::Internal(anyhow::anyhow!("a stored refresh token is not UTF-8")))?;
        Ok(Zeroizing::new(text.to_owned()))
    }

    /// Replaces the `claimed` connection's refresh token with the one the provider rotated
    /// it to, unless a sign-in replaced the connection meanwhile (then its token stays).
    pub async fn rotate_oidc_refresh_token(&self, claimed: &OidcConnection, refresh_token: &str) -> Result<()> {
        let sealed = self.cipher().seal(refresh_token.as_bytes());
        let (user_id, provider_id, at) = (claimed.user_id, &claimed.provider_id, claimed.refreshed_at);
        self.store().rotate_oidc_refresh_token(user_id, provider_id, at, &sealed, Timestamp::now()).await?;
        Ok(())
    }

    /// The provider refused the `claimed` connection's refresh token for good: the
    /// connection goes (its token is dead, and keeping it would disable the user again
    /// after an operator enabled it) and, when `disable`, the user is disabled and the data
    /// plane woken, so its peers leave the interface. Nothing happens when a sign-in
    /// replaced the connection meanwhile: the user has a new grant. Idempotent: a user
    /// already disabled keeps its first `disabled_at` and reason, so processes sharing a
    /// database may both get here. A user this disables is
    /// [`DisabledBy::IdentityProvider`], naming the provider. Returns whether this call
    /// disabled the user.
    pub async fn oidc_refresh_refused(&self, claimed: &OidcConnection, disable: bool) -> Result<bool> {
        let (user_id, provider_id) = (claimed.user_id, claimed.provider_id.as_str());
        if !self.store().delete_oidc_connection(user_id, provider_id, claimed.refreshed_at).await? {
            tracing::info!(user.id = %user_id, provider = provider_id, "refused refresh token already replaced by a sign-in");
            return Ok(false);
        }
        if !disable {
            return Ok(false);
        }
        let Some(user) = self.store().user_by_id(user_id).await? else { return Ok(false) };
        if user.disabled_at.is_some() {
            return Ok(false);
        }
        let by = DisabledBy::IdentityProvider(provider_id.to_owned());
        let update = UserUpdate { disabled: Some(true), disabled_by: Some(by), ..UserUpdate::default() };
        match self.store().update_user(user_id, &update, Timestamp::now()).await {
            Ok(_) => {}
            Err(DomainError::NotFound) => return Ok(false),
            Err(e) => return Err(e),
        }
        self.peers_changed();
        tracing::warn!(user.id = %user_id, provider = provider_id, "user disabled: the provider refused its refresh token");
        Ok(true)
    }
}
