//! `ferrozone serve`

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use ferrozone_domain::Domain;
use ferrozone_http::{AppState, WebSettings};
use ferrozone_oidc::job::Backoff;
use ferrozone_oidc::RefreshJob;
use tokio::net::TcpListener;

use crate::config::Config;
use crate::startup::open_domain;

pub async fn run(config: &Config) -> anyhow::Result<()> {
    let providers = config.providers()?;
    let saml = std::sync::Arc::new(config.saml(&providers)?);
    let domain = open_domain(config).await?;
    if let Some(token) = domain.bootstrap_admin(&config.admin_email).await? {
        announce_admin(config, &token);
    }
    let _data_plane = crate::dataplane::start(config, domain.clone()).await?;
    let _janitor = start_janitor(domain.clone());
    let listener =
        TcpListener::bind(&config.listen).await.with_context(|| format!("listening on {}", config.listen))?;
    let address = listener.local_addr()?;
    tracing::info!(%address, "serving the API");
    let web = WebSettings {
        external_url: config.external_url.clone(),
        secure_cookies: config.secure_cookies(),
        providers,
        saml,
    };
    let state = AppState::with_web(domain.clone(), web);
    let _refresh_job = start_oidc_refresh(config, &state, domain);
    let app = ferrozone_http::app(state);
    let limits = config.http.limits();
    ferrozone_http::server::serve(listener, app, limits, shutdown_signal()).await.context("serving HTTP")?;
    tracing::info!("stopped");
    Ok(())
}

/// Starts the OpenID Connect refresh job when an OpenID Connect provider is configured; it
/// ends when the returned guard is dropped.
fn start_oidc_refresh(config: &Config, state: &AppState, domain: Arc<Domain>) -> Option<AbortOnDrop> {
    if state.web.providers.oidc.is_empty() {
        return None;
    }
    let interval = Duration::from_secs(config.oidc_refresh_interval);
    let job = RefreshJob::new(domain, state.web.oidc.clone(), config.disable_vpn_on_oidc_error, Backoff::default());
    tracing::info!(
        interval_secs = config.oidc_refresh_interval,
        disable_on_refusal = config.disable_vpn_on_oidc_error,
        "OpenID Connect refresh job started"
    );
    Some(AbortOnDrop(tokio::spawn(job.run(interval))))
}

/// Aborts its task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// How often expired browser sessions are deleted.
const JANITOR_PERIOD: std::time::Duration = std::time::Duration::from_secs(600);

/// Deletes expired sessions every [`JANITOR_PERIOD`] (sign-ins also do, on their way).
/// Every process sharing a database may run it: deleting twice is harmless.
fn start_janitor(domain: std::sync::Arc<ferrozone_domain::Domain>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(JANITOR_PERIOD);
        loop {
            ticks.tick().await;
            match domain.delete_expired_sessions().await {
                Ok(0) => {}
                Ok(n) => tracing::debug!(deleted = n, "deleted expired sessions"),
                Err(e) => tracing::warn!(error = %e, "deleting expired sessions failed"),
            }
        }
    })
}

/// The one time the first admin's token is shown: on standard output, with how to use it.
fn announce_admin(config: &Config, token: &str) {
    let base = format!("http://{}", config.listen);
    println!("Created the admin {} with a one-time API token (it is not shown again):", config.admin_email);
    println!("{token}");
    println!("Use it as: curl -H \"Authorization: Bearer {token}\" {base}/v0/users");
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
    tracing::info!("shutting down");
}
