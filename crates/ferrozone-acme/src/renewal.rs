//! The task that keeps a certificate: it sleeps until the current one is due for renewal
//! (at once when there is none), orders a new one, stores and serves it. A failed order is
//! retried with a growing delay while the current certificate is still served.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::watch;

use crate::cache::Cache;
use crate::certificate::{renewal_time, Issued};
use crate::resolver::Certificates;
use crate::{order, Settings, Status};

/// The first retry's delay, doubled after each failure up to [`MAX_RETRY_DELAY`]. Two
/// minutes keeps a host that keeps failing validation under Let's Encrypt's limit of five
/// failed validations per hour.
const FIRST_RETRY_DELAY: Duration = Duration::from_secs(120);
const MAX_RETRY_DELAY: Duration = Duration::from_secs(6 * 3600);
/// The longest single sleep: a wall clock that jumps (a suspended machine) is noticed
/// within this long.
const MAX_SLEEP: Duration = Duration::from_secs(3600);

pub(crate) struct Renewal {
    pub(crate) settings: Settings,
    pub(crate) cache: Cache,
    pub(crate) certificates: Arc<Certificates>,
    pub(crate) status: watch::Sender<Status>,
    /// The validity of the certificate being served.
    pub(crate) current: Option<(SystemTime, SystemTime)>,
}

impl Renewal {
    pub(crate) async fn run(mut self) -> anyhow::Result<()> {
        let mut retry_delay = FIRST_RETRY_DELAY;
        loop {
            if let Some(renew_at) = self.wait_for_renewal().await {
                tracing::info!(host = %self.settings.host, renew_at = %rfc3339(renew_at), "certificate due for renewal");
            }
            self.status.send_replace(Status::Ordering);
            tracing::info!(host = %self.settings.host, directory = %self.settings.directory_url, "ordering a certificate");
            match self.renew().await {
                Ok(()) => retry_delay = FIRST_RETRY_DELAY,
                Err(e) => {
                    let error = format!("{e:#}");
                    let at = SystemTime::now() + retry_delay;
                    tracing::warn!(host = %self.settings.host, %error, retry_in_seconds = retry_delay.as_secs(),
                        "ordering the certificate failed; still serving the current one, if any");
                    self.status.send_replace(Status::Retrying { at, error });
                    tokio::time::sleep(retry_delay).await;
                    retry_delay = (retry_delay * 2).min(MAX_RETRY_DELAY);
                }
            }
        }
    }

    /// Sleeps until the current certificate is due (returns when it was due), or returns
    /// `None` at once when there is no certificate.
    async fn wait_for_renewal(&self) -> Option<SystemTime> {
        let (not_before, not_after) = self.current?;
        let renew_at = renewal_time(not_before, not_after);
        self.status.send_replace(Status::Waiting { not_after, renew_at });
        tracing::info!(host = %self.settings.host, not_after = %rfc3339(not_after), renew_at = %rfc3339(renew_at),
            "serving the certificate");
        while let Ok(left) = renew_at.duration_since(SystemTime::now()) {
            if left.is_zero() {
                break;
            }
            tokio::time::sleep(left.min(MAX_SLEEP)).await;
        }
        Some(renew_at)
    }

    async fn renew(&mut self) -> anyhow::Result<()> {
        let pem = order::order(&self.settings, &self.cache, &self.certificates).await?;
        let issued = Issued::from_pem(&pem)?;
        self.cache.store_certificate(&self.settings.host, &pem)?;
        self.certificates.set_current(Arc::new(issued.key));
        self.current = Some((issued.not_before, issued.not_after));
        tracing::info!(host = %self.settings.host, not_after = %rfc3339(issued.not_after), "certificate issued and stored");
        Ok(())
    }
}

/// A time for the logs, in UTC.
fn rfc3339(time: SystemTime) -> String {
    let seconds = time.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    x509_cert::der::asn1::GeneralizedTime::from_unix_duration(Duration::from_secs(seconds))
        .map(|t| t.to_date_time().to_string())
        .unwrap_or_else(|_| format!("@{seconds}"))
}
