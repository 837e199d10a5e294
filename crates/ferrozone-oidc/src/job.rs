//! The refresh job: every interval, each stored connection is refreshed at its provider
//! (docs/design/identity-providers.md, "OpenID Connect"; docs/operations.md, "The refresh job").
//!
//! Several processes sharing a database may all run it. Each connection is claimed before
//! it is used (a compare-and-set on `refreshed_at`), so one refresh token is never sent
//! twice at once, which a provider that rotates tokens would take for theft; and disabling
//! is idempotent, so two processes acting on one refusal change nothing more than one.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use ferrozone_domain::model::OidcConnection;
use ferrozone_domain::{Domain, Timestamp};

use crate::{Oidc, RefreshOutcome};

/// How transient failures are retried within a pass: `attempts` tries in all, waiting
/// `first_delay`, then twice that, and so on, between them.
#[derive(Debug, Clone, Copy)]
pub struct Backoff {
    pub attempts: u32,
    pub first_delay: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self { attempts: 4, first_delay: Duration::from_secs(2) }
    }
}

/// What one pass did, for logs and tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PassReport {
    /// Refreshed (rotated tokens stored).
    pub refreshed: u32,
    /// Refused with `invalid_grant`: the connection is gone.
    pub refused: u32,
    /// Users this pass disabled (at most `refused`).
    pub disabled: u32,
    /// Left for the next pass: transient failures, configuration problems, unknown providers.
    pub failed: u32,
    /// Claimed by another process, not due yet, or of a provider that failed earlier in
    /// this pass.
    pub skipped: u32,
}

/// The client in effect now (the providers may change while the server runs).
pub type CurrentOidc = Arc<dyn Fn() -> Arc<Oidc> + Send + Sync>;

/// The job: the domain that stores connections, the client that refreshes them.
pub struct RefreshJob {
    domain: Arc<Domain>,
    oidc: CurrentOidc,
    backoff: Backoff,
}

impl RefreshJob {
    /// Whether a refusal disables the user is the configuration's
    /// `disable_vpn_on_oidc_error`, read at each refusal.
    pub fn new(domain: Arc<Domain>, oidc: Arc<Oidc>, backoff: Backoff) -> Self {
        Self::following(domain, Arc::new(move || oidc.clone()), backoff)
    }

    /// A job that takes the client `oidc` gives at each pass.
    pub fn following(domain: Arc<Domain>, oidc: CurrentOidc, backoff: Backoff) -> Self {
        Self { domain, oidc, backoff }
    }

    /// Runs a pass every `interval`, the first one `interval` after start, until the task
    /// is dropped. A pass that fails (the database) is logged and the next one tries again.
    pub async fn run(self, interval: Duration) {
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let due_age = i64::try_from(interval.as_secs() / 2).unwrap_or(i64::MAX);
        loop {
            ticks.tick().await;
            // Connections refreshed within the last half interval (by a sign-in, or by another
            // process's pass) wait for the next one.
            let due_before = Timestamp::now().plus_secs(-due_age);
            match self.pass(due_before).await {
                Ok(report) => tracing::info!(?report, "OpenID Connect refresh pass done"),
                Err(e) => tracing::warn!(error = %e, "OpenID Connect refresh pass failed"),
            }
        }
    }

    /// One pass over the connections last refreshed before `due_before`.
    pub async fn pass(&self, due_before: Timestamp) -> ferrozone_domain::error::Result<PassReport> {
        let mut report = PassReport::default();
        // Providers that stayed unreachable through every retry in this pass, or that refuse
        // the client itself: their other connections wait for the next pass instead of each
        // going through the same failure.
        let mut down = HashSet::new();
        let oidc = (self.oidc)();
        for connection in self.domain.oidc_connections().await? {
            if connection.refreshed_at >= due_before || down.contains(&connection.provider_id) {
                report.skipped += 1;
                continue;
            }
            let Some(claimed) = self.domain.claim_oidc_connection(&connection).await? else {
                report.skipped += 1;
                continue;
            };
            let handled = self.refresh(&oidc, &claimed).await?;
            handled.count();
            match handled {
                Handled::Refreshed => report.refreshed += 1,
                Handled::Refused { disabled } => {
                    report.refused += 1;
                    report.disabled += u32::from(disabled);
                }
                Handled::Failed { skip_provider } => {
                    report.failed += 1;
                    if skip_provider {
                        down.insert(connection.provider_id.clone());
                    }
                }
            }
        }
        Ok(report)
    }

    /// Refreshes the connection this process `claimed`.
    async fn refresh(&self, oidc: &Oidc, claimed: &OidcConnection) -> ferrozone_domain::error::Result<Handled> {
        let (user_id, provider_id) = (claimed.user_id, claimed.provider_id.as_str());
        let Some(provider) = oidc.provider(provider_id) else {
            tracing::warn!(user.id = %user_id, provider = provider_id, "OIDC connection of a provider no longer configured: left alone");
            return Ok(Handled::Failed { skip_provider: false });
        };
        let token = self.domain.reveal_refresh_token(claimed)?;
        let mut delay = self.backoff.first_delay;
        for attempt in 1..=self.backoff.attempts.max(1) {
            match oidc.refresh(provider, &token).await {
                RefreshOutcome::Refreshed { rotated, groups } => {
                    if let Some(new) = rotated {
                        self.domain.rotate_oidc_refresh_token(claimed, &new).await?;
                    }
                    if let Some(groups) = groups {
                        self.domain.apply_provider_groups(user_id, provider_id, &groups).await?;
                    }
                    tracing::info!(user.id = %user_id, provider = provider_id, "OIDC refresh token refreshed");
                    return Ok(Handled::Refreshed);
                }
                RefreshOutcome::Refused { reason } => {
                    tracing::warn!(user.id = %user_id, provider = provider_id, %reason, "OIDC refresh refused for good");
                    let disable = self.domain.current_values().disable_vpn_on_oidc_error;
                    let disabled = self.domain.oidc_refresh_refused(claimed, disable).await?;
                    return Ok(Handled::Refused { disabled });
                }
                RefreshOutcome::Misconfigured { reason } => {
                    tracing::warn!(user.id = %user_id, provider = provider_id, %reason, "OIDC refresh failed: check the provider's client configuration; nobody is disabled");
                    // The same for every user of this provider: their turn comes next pass.
                    return Ok(Handled::Failed { skip_provider: true });
                }
                RefreshOutcome::Transient { reason } => {
                    let last = attempt >= self.backoff.attempts;
                    tracing::warn!(user.id = %user_id, provider = provider_id, attempt, %reason, "OIDC refresh failed for now{}", if last { "; left for the next pass" } else { "; retrying" });
                    if last {
                        break;
                    }
                    tokio::time::sleep(delay).await;
                    delay = delay.saturating_mul(2);
                }
            }
        }
        Ok(Handled::Failed { skip_provider: true })
    }
}

/// Refreshes by `outcome`: `ok`, `refused` (for good: `invalid_grant`) or `failed` (left for
/// the next pass).
pub const REFRESHES: &str = "ferrozone_oidc_refreshes_total";
/// Users disabled because their provider refused the refresh.
pub const USERS_DISABLED: &str = "ferrozone_oidc_users_disabled_total";

enum Handled {
    Refreshed,
    Refused {
        disabled: bool,
    },
    /// Left for the next pass; `skip_provider`: the cause is the provider's, not this
    /// connection's.
    Failed {
        skip_provider: bool,
    },
}

impl Handled {
    /// Counts what happened to one connection in the refresh metrics.
    fn count(&self) {
        let outcome = match self {
            Handled::Refreshed => "ok",
            Handled::Refused { .. } => "refused",
            Handled::Failed { .. } => "failed",
        };
        metrics::counter!(REFRESHES, "outcome" => outcome).increment(1);
        if let Handled::Refused { disabled: true } = self {
            metrics::counter!(USERS_DISABLED).increment(1);
        }
    }
}
