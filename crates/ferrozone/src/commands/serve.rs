//! `ferrozone serve`

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use ferrozone_domain::audit::{context, Actor, Origin};
use ferrozone_domain::Domain;
use ferrozone_http::server::{redirect, Tls};
use ferrozone_http::{AppState, WebSettings};
use ferrozone_oidc::job::Backoff;
use ferrozone_oidc::RefreshJob;
use tokio::net::TcpListener;

use crate::config::Config;
use crate::monitoring::Metrics;
use crate::startup::open_domain_with_database;
use crate::supervisor::Supervisor;

/// Serves until SIGTERM or SIGINT (then `Ok`), or until one of its tasks ends unexpectedly
/// (then an error naming it): the HTTP server, the data plane's loops, the session janitor,
/// the audit sealer, the webhook and email delivery and the OpenID Connect refresh job run under one
/// [`Supervisor`].
pub async fn run(config: &Config) -> anyhow::Result<()> {
    let providers = config.providers()?;
    let saml = std::sync::Arc::new(config.saml(&providers)?);
    let _database_lock = crate::serve_lock::for_serve(config)?;
    let admin_password = config.admin_password()?;
    let warnings = config.start_warnings();
    for warning in &warnings {
        tracing::warn!("{warning}");
    }
    // Before the database opens, so that the store's first measures are recorded.
    let metrics = Metrics::install(config)?;
    let (domain, database) = open_domain_with_database(config).await?;
    let signal = shutdown_signal()?;
    let mut tasks = Supervisor::default();
    if metrics.is_some() {
        describe_store_and_data_plane_metrics();
        tasks.spawn("store metrics", store_metrics(database));
    }
    let data_plane = crate::dataplane::start(config, domain.clone(), &mut tasks).await?;
    tasks.spawn("session janitor", as_system(janitor(domain.clone())));
    tasks.spawn("gateway sessions", as_system(super::gateway_sessions::run(domain.clone())));
    if let Some(retention) = config.audit.audit_retention {
        tasks.spawn("audit retention", as_system(super::audit_retention::run(domain.clone(), retention)));
    }
    let sealer = domain.clone();
    tasks.spawn("audit sealer", async move {
        sealer.keep_audit_log_sealed().await;
        anyhow::bail!("the audit sealer stopped")
    });
    let summaries = domain.clone();
    tasks.spawn("refused sign-in summaries", async move {
        summaries.keep_refused_sign_ins_summarised().await;
        anyhow::bail!("the refused sign-in summaries stopped")
    });
    let watcher = domain.clone();
    tasks.spawn("configuration reload", async move {
        watcher.watch_configuration().await;
        anyhow::bail!("the database was closed")
    });
    let webhooks = ferrozone_webhooks::Worker::new(domain.webhook_outbox(), ferrozone_webhooks::Options::default())?;
    tasks.spawn("webhook delivery", webhooks.run());
    if let Some(smtp) = config.smtp.settings(&config.external_url)? {
        let mailer = ferrozone_mail::Mailer::new(&smtp)?;
        let mail = ferrozone_mail::Worker::new(domain.mail_outbox(), mailer, ferrozone_mail::Options::default());
        tasks.spawn("email delivery", mail.run());
    }
    let (tls, acme) = tls(config)?;
    let listener =
        TcpListener::bind(&config.listen).await.with_context(|| format!("listening on {}", config.listen))?;
    let address = listener.local_addr()?;
    let redirect_listener = redirect_listener(config).await?;
    let metrics_listener = crate::monitoring::listener(config).await?;
    if let Some(acme) = acme {
        tasks.spawn("automatic certificates (ACME)", acme);
    }
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
    let console = format!("{}/", config.external_url.trim_end_matches('/'));
    tracing::info!(%address, https = tls.is_some(), "serving the API");
    tracing::info!("the web console is at {console}");
    let web = WebSettings {
        external_url: config.external_url.clone(),
        secure_cookies: config.secure_cookies(),
        providers,
        saml,
    };
    let mut state = AppState::with_web(domain.clone(), web)
        .with_data_plane(data_plane)
        .with_report(report(config))
        .with_warnings(warnings);
    if let Some(metrics) = &metrics {
        metrics.start(config, metrics_listener, &mut tasks);
        state = state.with_metrics(metrics.export());
    }
    tasks.spawn("OpenID Connect refresh job", as_system(oidc_refresh(config, &state, domain.clone())));
    // The faces, side by side; none knows the others.
    let faces = ferrozone_api::routes().merge(ferrozone_scim::routes()).merge(ferrozone_web::routes());
    let app = ferrozone_http::app(state, faces);
    if let Some((listener, app)) = redirect_listener {
        let (limits, stopping) = (config.http.limits(), tasks.stopping());
        tasks.spawn_draining("HTTP redirect listener", async move {
            ferrozone_http::server::serve(listener, app, limits, None, stopping).await.context("serving HTTP redirects")
        });
    }
    // The server hands the peer address to handlers (sign-in throttling keys on it, never on a header).
    let limits = config.http.limits();
    let stopping = tasks.stopping();
    tasks.spawn_draining("HTTP server", async move {
        ferrozone_http::server::serve(listener, app, limits, tls, stopping).await.context("serving HTTP")
    });
    // Start-up is done: what it freed and the code it ran go back to the system.
    crate::memory::release_start_up(&mut tasks);
    let outcome = tasks.run(signal, Duration::from_secs(config.shutdown_timeout)).await;
    domain.record_refused_sign_in_summaries(true).await;
    tracing::info!("stopped");
    outcome
}

/// How the server speaks TLS, if it does: with the certificate files (`FERROZONE_TLS_*`),
/// followed for changes, or with certificates obtained over ACME (`FERROZONE_ACME`), with
/// the task that orders and renews them (to be run once the listener is bound: the CA
/// validates the challenge on it). Warns when the external URL does not fit the files.
fn tls(config: &Config) -> anyhow::Result<(Option<Tls>, Option<ferrozone_acme::Task>)> {
    if let Some((resolver, task)) = crate::config::acme::acme_tls(config, &config.data_dir, config.tls.enabled())? {
        return Ok((Some(Tls { resolver, acme_tls_alpn: true, hsts_max_age: config.tls.hsts_max_age }), Some(task)));
    }
    let Some(files) = config.tls.certificate_files()? else {
        return Ok((None, None));
    };
    warn_on_external_url(config, &files.current());
    Ok((Some(Tls { resolver: files, acme_tls_alpn: false, hsts_max_age: config.tls.hsts_max_age }), None))
}

/// Serving HTTPS with an `http://` external URL, or with a certificate that does not name
/// the external URL's host, is allowed (a test set-up, a certificate about to be replaced)
/// but not what users need: the links Ferrozone gives out, and what browsers check, are
/// those of the external URL.
fn warn_on_external_url(config: &Config, certified: &rustls::sign::CertifiedKey) {
    let Ok(url) = url::Url::parse(&config.external_url) else { return };
    if url.scheme() != "https" {
        tracing::warn!(
            external_url = %config.external_url,
            "Ferrozone serves HTTPS but FERROZONE_EXTERNAL_URL is not https: the links it gives out \
             (sign-in redirects, SAML and OpenID Connect callbacks) point to plain HTTP"
        );
    }
    if let Some(host) = url.host_str() {
        if !ferrozone_http::server::certificate_names(certified, host) {
            tracing::warn!(
                host,
                "the TLS certificate does not name the host of FERROZONE_EXTERNAL_URL: browsers will refuse it"
            );
        }
    }
}

/// The plain-HTTP redirect listener (`FERROZONE_HTTP_REDIRECT_LISTEN`), bound, with its app;
/// it redirects to the external URL, which must be https (else it would redirect to itself).
async fn redirect_listener(config: &Config) -> anyhow::Result<Option<(TcpListener, axum::Router)>> {
    let Some(address) = &config.tls.http_redirect_listen else {
        return Ok(None);
    };
    let url = url::Url::parse(&config.external_url)
        .with_context(|| format!("FERROZONE_EXTERNAL_URL: `{}` is not a URL", config.external_url))?;
    if url.scheme() != "https" {
        anyhow::bail!(
            "FERROZONE_HTTP_REDIRECT_LISTEN redirects to FERROZONE_EXTERNAL_URL, which must then be https (it is `{}`)",
            config.external_url
        );
    }
    let listener = TcpListener::bind(address)
        .await
        .with_context(|| format!("FERROZONE_HTTP_REDIRECT_LISTEN: listening on {address}"))?;
    tracing::info!(address = %listener.local_addr()?, to = %url.origin().ascii_serialization(), "redirecting plain HTTP");
    Ok(Some((listener, redirect::router(&url.origin().ascii_serialization()))))
}

/// This binary's version (and commit, when build.rs knew it) and the
/// start-up settings with their sources.
fn report(config: &Config) -> ferrozone_http::ServerReport {
    ferrozone_http::ServerReport {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        commit: option_env!("BUILD_COMMIT").map(str::to_owned),
        settings: config.report.clone(),
    }
}

/// Runs a background job as Ferrozone itself: what it changes (a user a provider refused,
/// disabled) is recorded in the audit log with the system as the actor.
async fn as_system<T>(job: impl std::future::Future<Output = T>) -> T {
    let system = context::Context::new(Actor::system(), Origin::default());
    context::scope(system, job).await
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

/// Gives the store's and the data plane's metrics their help texts (the recorder, when
/// metrics are on, is installed by then).
fn describe_store_and_data_plane_metrics() {
    ferrozone_store::metrics::describe();
    crate::dataplane::describe_metrics();
    super::gateway_sessions::describe_metrics();
}

/// Samples the pool and counts the users and devices every
/// [`ferrozone_store::metrics::SAMPLE_PERIOD`], for their gauges.
async fn store_metrics(database: ferrozone_store::Database) -> anyhow::Result<()> {
    ferrozone_store::metrics::publish_every(database, ferrozone_store::metrics::SAMPLE_PERIOD).await;
    Ok(())
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

/// The one time the first admin's token is shown: on standard output, with how to use it
/// and how the admin signs in to the web console, at the external URL (the address people
/// reach, not the listen address).
fn announce_admin(config: &Config, token: &str, password_given: bool) {
    let base = config.external_url.trim_end_matches('/');
    let email = &config.admin_email;
    println!("Created the admin {email} with a one-time API token (it is not shown again):");
    println!("{token}");
    println!("Use it as: curl -H \"Authorization: Bearer {token}\" {base}/v0/users");
    if password_given {
        println!("The admin signs in to the web console at {base}/ with the password given at start (FERROZONE_ADMIN_PASSWORD).");
    } else {
        println!("The admin has no password yet: give it one with `ferrozone user set-password --email {email} --password-stdin`,");
        println!("then sign in to the web console at {base}/");
    }
}

/// Listens for SIGTERM and SIGINT from now on (before the first request is served, so no
/// signal meets the default action); the future resolves on the first.
pub(super) fn shutdown_signal() -> anyhow::Result<impl std::future::Future<Output = ()>> {
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
