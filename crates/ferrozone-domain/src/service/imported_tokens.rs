//! API tokens imported from Firezone: their bearer strings are the source installation's
//! JWTs ([`legacy_token`]), accepted while its signing secret is stored (sealed, under
//! [`LEGACY_TOKEN_SECRET_SETTING`]) and only for rows an import wrote.
//!
//! The secret is read when the domain opens and whenever it reads the configuration again
//! (at once on SQLite after any commit, on PostgreSQL after a configuration change such as
//! an import's), never on the request path.

use std::sync::{Arc, PoisonError};

use zeroize::Zeroizing;

use super::tokens::Refusal;
use super::{Domain, Principal};
use crate::crypto::{legacy_token, Sealed};
use crate::error::Result;
use crate::import::LEGACY_TOKEN_SECRET_SETTING;
use crate::time::Timestamp;

/// The source installation's signing secret, when one was imported.
pub(super) type ImportedTokenSecret = std::sync::RwLock<Option<Arc<Zeroizing<Vec<u8>>>>>;

impl Domain {
    /// Reads the imported signing secret again. One that cannot be opened is logged and
    /// ignored: imported tokens are then refused, the rest works.
    pub(super) async fn load_imported_token_secret(&self) -> Result<()> {
        let stored = self.store().setting(LEGACY_TOKEN_SECRET_SETTING).await?;
        let secret = stored.and_then(|sealed| match self.cipher.open(&Sealed(sealed)) {
            Ok(secret) => Some(Arc::new(secret)),
            Err(err) => {
                tracing::warn!(error = %err, "the imported Firezone token secret cannot be opened; its tokens are refused");
                None
            }
        });
        *self.imported_token_secret.write().unwrap_or_else(PoisonError::into_inner) = secret;
        Ok(())
    }

    /// The principal of a Firezone bearer string: signed with the imported secret, naming
    /// an imported token row that is not expired, of an owner who is not disabled.
    pub(super) async fn authenticate_imported(&self, bearer: &str) -> Result<Result<Principal, Refusal>> {
        let secret = self.imported_token_secret.read().unwrap_or_else(PoisonError::into_inner).clone();
        let Some(secret) = secret else { return Ok(Err(Refusal::InvalidToken)) };
        let Some(id) = legacy_token::verify(&secret, bearer, Timestamp::now()) else {
            return Ok(Err(Refusal::InvalidToken));
        };
        let found = self.store().token_by_id(id).await?;
        // A JWT naming a token Ferrozone issued is refused: that token's secret is its own.
        let found = found.filter(|(token, _)| token.is_imported());
        self.admit_found(found).await
    }
}
