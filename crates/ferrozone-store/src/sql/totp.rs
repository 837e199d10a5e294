//! The statements of two-factor sign-in (migration 0010), shared by both backends.

/// The authenticator of `$1` and how many recovery codes it has left.
pub(crate) const TOTP_OF: &str = "SELECT sealed_secret, confirmed_at, last_step, \
     (SELECT COUNT(*) FROM totp_recovery_codes r WHERE r.user_id = t.user_id) \
     FROM user_totp t WHERE t.user_id = $1";

/// A new pending secret, unless a confirmed one is there (then no row changes).
pub(crate) const START_TOTP: &str = "INSERT INTO user_totp (user_id, sealed_secret, inserted_at) VALUES ($1, $2, $3) \
     ON CONFLICT (user_id) DO UPDATE SET sealed_secret = excluded.sealed_secret, \
     inserted_at = excluded.inserted_at, last_step = NULL WHERE user_totp.confirmed_at IS NULL";

pub(crate) const CONFIRM_TOTP: &str =
    "UPDATE user_totp SET confirmed_at = $2, last_step = $3 WHERE user_id = $1 AND confirmed_at IS NULL";

/// Moves the last used step forward, never back: a step's code works once.
pub(crate) const ACCEPT_TOTP_STEP: &str = "UPDATE user_totp SET last_step = $2 \
     WHERE user_id = $1 AND confirmed_at IS NOT NULL AND (last_step IS NULL OR last_step < $2)";

pub(crate) const TOTP_CONFIRMED: &str = "SELECT 1 FROM user_totp WHERE user_id = $1 AND confirmed_at IS NOT NULL";

pub(crate) const DELETE_RECOVERY_CODES: &str = "DELETE FROM totp_recovery_codes WHERE user_id = $1";

pub(crate) const INSERT_RECOVERY_CODE: &str = "INSERT INTO totp_recovery_codes (user_id, code_hash) VALUES ($1, $2)";

pub(crate) const USE_RECOVERY_CODE: &str = "DELETE FROM totp_recovery_codes WHERE user_id = $1 AND code_hash = $2";

/// The authenticator; its recovery codes go with it (ON DELETE CASCADE).
pub(crate) const DELETE_TOTP: &str = "DELETE FROM user_totp WHERE user_id = $1";
