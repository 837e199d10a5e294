//! `ferrozone serve`

use std::net::SocketAddr;

use anyhow::Context;
use ferrozone_http::{AppState, WebSettings};
use tokio::net::TcpListener;

use crate::config::Config;
use crate::startup::open_domain;

pub async fn run(config: &Config) -> anyhow::Result<()> {
    let providers = config.providers()?;
    let domain = open_domain(config).await?;
    if let Some(token) = domain.bootstrap_admin(&config.admin_email).await? {
        announce_admin(config, &token);
    }
    let _data_plane = crate::dataplane::start(config, domain.clone()).await?;
    let listener =
        TcpListener::bind(&config.listen).await.with_context(|| format!("listening on {}", config.listen))?;
    let address = listener.local_addr()?;
    tracing::info!(%address, "serving the API");
    let web =
        WebSettings { external_url: config.external_url.clone(), secure_cookies: config.secure_cookies(), providers };
    let app = ferrozone_http::app(AppState::with_web(domain, web));
    // The peer address reaches handlers (sign-in throttling keys on it, never on a header).
    let app = app.into_make_service_with_connect_info::<SocketAddr>();
    axum::serve(listener, app).with_graceful_shutdown(shutdown_signal()).await.context("serving HTTP")?;
    tracing::info!("stopped");
    Ok(())
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
