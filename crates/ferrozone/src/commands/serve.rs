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
use crate::supervisor::Supervisor;

/// Serves until SIGTERM or SIGINT (then `Ok`), or until one of its tasks ends unexpectedly
/// (then an error naming it): the HTTP server, the data plane's loops, the session janitor
/// and the OpenID Connect refresh job run under one [`Supervisor`].
pub async fn run(config: &Config) -> anyhow::Result<()> {
    let providers = config.providers()?;
    let saml = std::sync::Arc::new(config.saml(&providers)?);
    let admin_password = config.admin_password()?;
    let warnings = config.start_warnings();
    for warning in &warnings {
        tracing::warn!("{warning}");
    }
    let domain = open_domain(config).await?;
    let signal = shutdown_signal()?;
    let mut tasks = Supervisor::default();
    let data_plane = crate::dataplane::start(config, domain.clone(), &mut tasks).await?;
    tasks.spawn("session janitor", janitor(domain.clone()));
    let watcher = domain.clone();
    tasks.spawn("configuration reload", async move {
        watcher.watch_configuration().await;
        anyhow::bail!("the database was closed")
    });
    let listener =
        TcpListener::bind(&config.listen).await.with_context(|| format!("listening on {}", config.listen))?;
    let address = listener.local_addr()?;
    // Last of what can fail at start: a start that fails (a port in use, say) must not
    // create the first admin and show its one-time token, which the next start would not.
    let password_given = admin_password.is_some();
    match domain.bootstrap_admin_with_password(&config.admin_email, admin_password).await? {
        Some(token) => announce_admin(config, &token, password_given),
        None if password_given => tracing::info!(
            "the database has an admin already: the first admin's password (FERROZONE_ADMIN_PASSWORD) changes nothing"
        ),
        None => {}
    }
    tracing::info!(%address, "serving the API");
    let web = WebSettings {
        external_url: config.external_url.clone(),
        secure_cookies: config.secure_cookies(),
        providers,
        saml,
    };
    let state = AppState::with_web(domain.clone(), web)
        .with_data_plane(data_plane)
        .with_report(report(config))
        .with_warnings(warnings);
    tasks.spawn("OpenID Connect refresh job", oidc_refresh(config, &state, domain.clone()));
    let app = ferrozone_http::app(state);
    // The server hands the peer address to handlers (sign-in throttling keys on it, never on a header).
    let limits = config.http.limits();
    let stopping = tasks.stopping();
    tasks.spawn_draining("HTTP server", async move {
        ferrozone_http::server::serve(listener, app, limits, stopping).await.context("serving HTTP")
    });
    let outcome = tasks.run(signal, Duration::from_secs(config.shutdown_timeout)).await;
    tracing::info!("stopped");
    outcome
}

/// This binary's version (and commit, when the build was given `FERROZONE_COMMIT`) and the
/// start-up settings with their sources.
fn report(config: &Config) -> ferrozone_http::ServerReport {
    ferrozone_http::ServerReport {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        commit: option_env!("FERROZONE_COMMIT").map(str::to_owned),
        settings: config.report.clone(),
    }
}

/// The OpenID Connect refresh job, with the providers in effect at each pass (they may
/// be changed through `/v0/configuration`, so it runs even while there are none).
fn oidc_refresh(
    config: &Config,
    state: &AppState,
    domain: Arc<Domain>,
) -> impl std::future::Future<Output = anyhow::Result<()>> {
    let interval = Duration::from_secs(config.oidc_refresh_interval);
    let (web, current) = (state.web.clone(), domain.clone());
    let oidc: ferrozone_oidc::job::CurrentOidc = Arc::new(move || web.sign_in(&current).oidc.clone());
    let job = RefreshJob::following(domain, oidc, Backoff::default());
    tracing::info!(interval_secs = config.oidc_refresh_interval, "OpenID Connect refresh job started");
    async move {
        job.run(interval).await;
        Ok(())
    }
}

/// How often expired browser sessions are deleted.
const JANITOR_PERIOD: std::time::Duration = std::time::Duration::from_secs(600);

/// Deletes expired sessions every [`JANITOR_PERIOD`] (sign-ins also do, on their way).
/// Every process sharing a database may run it: deleting twice is harmless.
async fn janitor(domain: Arc<Domain>) -> anyhow::Result<()> {
    let mut ticks = tokio::time::interval(JANITOR_PERIOD);
    loop {
        ticks.tick().await;
        match domain.delete_expired_sessions().await {
            Ok(0) => {}
            Ok(n) => tracing::debug!(deleted = n, "deleted expired sessions"),
            Err(e) => tracing::warn!(error = %e, "deleting expired sessions failed"),
        }
    }
}

/// The one time the first admin's token is shown: on standard output, with how to use it.
fn announce_admin(config: &Config, token: &str, password_given: bool) {
    let base = format!("http://{}", config.listen);
    println!("Created the admin {} with a one-time API token (it is not shown again):", config.admin_email);
    println!("{token}");
    println!("Use it as: curl -H \"Authorization: Bearer {token}\" {base}/v0/users");
    if password_given {
        println!("The admin signs in on the web with the password given at start (FERROZONE_ADMIN_PASSWORD).");
    }
}

/// Listens for SIGTERM and SIGINT from now on (before the first request is served, so no
/// signal meets the default action); the future resolves on the first.
fn shutdown_signal() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut terminate = signal(SignalKind::terminate()).context("listening for SIGTERM")?;
        let mut interrupt = signal(SignalKind::interrupt()).context("listening for SIGINT")?;
        Ok(async move {
            tokio::select! {
                _ = terminate.recv() => {},
                _ = interrupt.recv() => {},
            }
            tracing::info!("shutting down");
        })
    }
    #[cfg(not(unix))]
    Ok(async {
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!("shutting down");
    })
}
