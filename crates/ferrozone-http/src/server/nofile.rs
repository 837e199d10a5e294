//! The open-file limit: raised to its hard limit at start, and the connection cap fitted
//! under it so that accepting never runs out of descriptors.

use super::Limits;

/// Descriptors kept for everything but HTTP connections (database, WireGuard, outbound
/// requests, logs) out of a large limit; a quarter of a small one.
const RESERVED: u64 = 256;

/// Raises the soft open-file limit to the hard one, then lowers `limits.max_connections`
/// to leave room for the process's other descriptors.
pub fn fit(mut limits: Limits) -> Limits {
    let Some(soft) = raise() else {
        return limits;
    };
    let room = soft.saturating_sub(RESERVED.min(soft / 4));
    let room = usize::try_from(room).unwrap_or(usize::MAX).max(1);
    if limits.max_connections > room {
        tracing::warn!(
            configured = limits.max_connections,
            serving = room,
            open_file_limit = soft,
            "FERROZONE_HTTP_MAX_CONNECTIONS lowered to fit the open-file limit"
        );
        limits.max_connections = room;
    }
    limits
}

/// Sets the soft `RLIMIT_NOFILE` to the hard one; returns the soft limit in force (`None`:
/// unlimited or unknown).
#[cfg(unix)]
fn raise() -> Option<u64> {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let Rlimit { current, maximum } = getrlimit(Resource::Nofile);
    if current.is_some() && current != maximum {
        match setrlimit(Resource::Nofile, Rlimit { current: maximum, maximum }) {
            Ok(()) => tracing::debug!(from = current, to = maximum, "raised the open-file limit"),
            Err(e) => tracing::warn!(error = %e, soft = current, hard = maximum, "cannot raise the open-file limit"),
        }
    }
    getrlimit(Resource::Nofile).current
}

#[cfg(not(unix))]
fn raise() -> Option<u64> {
    None
}
