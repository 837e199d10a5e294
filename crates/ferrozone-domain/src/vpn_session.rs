//! VPN sessions (`vpn_session_duration`, docs/design/configuration.md, "VPN sessions"): which
//! devices are active, that is, carried as peers on the interface (and, for the egress
//! rules, which addresses are in use). The one definition of "active" every reader uses,
//! through [`crate::Store::active_peers`].

use crate::time::Timestamp;

/// Firezone's "Once": a duration meaning the session never expires, like 0.
pub const ONCE: i64 = 2_147_483_647;

/// How long a sign-in keeps a user's devices active, as of a moment.
///
/// A device is active when its user is not disabled and either sessions never expire
/// (`duration_secs` 0 or [`ONCE`]), the user never signed in, or the user's last sign-in
/// plus `duration_secs` is after `now`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VpnSession {
    /// The configuration's `vpn_session_duration`, in seconds.
    pub duration_secs: i64,
    /// The moment the question is asked for.
    pub now: Timestamp,
}

impl VpnSession {
    pub fn new(duration_secs: i64, now: Timestamp) -> Self {
        Self { duration_secs, now }
    }

    /// Whether sessions expire at all with this duration.
    pub fn expires(&self) -> bool {
        self.duration_secs > 0 && self.duration_secs != ONCE
    }

    /// The last sign-in must be strictly after this moment for its devices to be active;
    /// `None` when sessions never expire. The stores compare `last_signed_in_at > cutoff`
    /// (a user who never signed in stays active).
    pub fn cutoff(&self) -> Option<Timestamp> {
        self.expires().then(|| self.now.plus_secs(-self.duration_secs))
    }

    /// Whether a user who is not disabled and `last_signed_in_at` is active: the rule the
    /// stores' query implements, for code that already holds the user.
    pub fn is_active(&self, last_signed_in_at: Option<Timestamp>) -> bool {
        match (self.cutoff(), last_signed_in_at) {
            (Some(cutoff), Some(at)) => at > cutoff,
            _ => true,
        }
    }

    /// When a session that started at `signed_in_at` ends, if it ever does.
    pub fn expires_at(&self, signed_in_at: Timestamp) -> Option<Timestamp> {
        self.expires().then(|| signed_in_at.plus_secs(self.duration_secs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_and_once_never_expire() {
        let now = Timestamp::from_secs(1_000_000);
        let long_ago = Some(Timestamp::from_secs(1));
        for duration in [0, ONCE, -5] {
            let session = VpnSession::new(duration, now);
            assert_eq!(session.cutoff(), None, "{duration}");
            assert!(session.is_active(long_ago) && session.is_active(None), "{duration}");
            assert_eq!(session.expires_at(now), None);
        }
    }

    #[test]
    fn a_sign_in_keeps_devices_active_for_the_duration() {
        let now = Timestamp::from_secs(1_000_000);
        let session = VpnSession::new(3600, now);
        assert_eq!(session.cutoff(), Some(Timestamp::from_secs(1_000_000 - 3600)));
        assert!(session.is_active(Some(now.plus_secs(-3599))));
        assert!(!session.is_active(Some(now.plus_secs(-3600))), "expired exactly now");
        assert!(!session.is_active(Some(now.plus_secs(-86_400))));
        assert!(session.is_active(None), "never signed in");
        assert_eq!(session.expires_at(now), Some(now.plus_secs(3600)));
    }
}
