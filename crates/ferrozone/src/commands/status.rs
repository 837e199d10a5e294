//! `ferrozone status`: who is online, from the peer statistics `serve` stores in the
//! database, and the data plane's state, from the running server's `/healthz` on
//! FERROZONE_LISTEN, over HTTPS when the server serves it (the state lives in that
//! process; `/healthz` needs no token).

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context;
use ferrozone_domain::store::{DeviceQuery, Presence};
use ferrozone_domain::Principal;
use serde_json::Value;

use super::device::{addresses, emails, handshake};
use super::explain::explain;
use crate::config::Config;
use crate::startup::open_domain;

/// How long the server has to answer `/healthz`.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// The largest `/healthz` answer read.
const MAX_ANSWER: usize = 64 * 1024;

pub async fn run(config: &Config) -> anyhow::Result<()> {
    let domain = open_domain(config).await?;
    let operator = Principal::operator();
    let query = DeviceQuery { presence: Some(Presence::now(true)), ..DeviceQuery::default() };
    let online = domain.list_devices(&operator, query).await.map_err(|e| explain(e, "the device"))?;
    let owners = emails(&domain).await?;
    println!("online: {} device(s) with a handshake in the last 3 minutes", online.len());
    for d in &online {
        let owner = owners.get(&d.user_id).map_or("-", String::as_str);
        println!("  {owner}\t{}\t{}\tlast_handshake:{}", d.name, addresses(d), handshake(d));
    }
    match probe(config).await {
        Ok(health) => println!("server: {}\n{}", config.listen, describe(&health)),
        Err(e) => println!("server: not answering at {} ({e:#}): the data plane's state is unknown", config.listen),
    }
    Ok(())
}

/// The lines `status` prints for a `/healthz` answer.
fn describe(health: &Value) -> String {
    let text = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_owned);
    let plane = &health["data_plane"];
    let routing = &health["routing"];
    let mut lines = vec![
        format!("  status: {}", text(&health["status"])),
        format!(
            "  data plane: backend {}, last reconcile {}{}",
            text(&plane["backend"]),
            plane["last_reconcile_at"].as_str().unwrap_or("never"),
            if plane["last_reconcile_failed"] == true { " (failed)" } else { "" },
        ),
    ];
    lines.push(match routing["nftables"].as_str() {
        Some("applied") => format!(
            "  nftables: applied, {} rule(s), default {}{}",
            routing["rules"],
            text(&routing["default_action"]),
            if routing["last_pass_failed"] == true { " (last pass failed)" } else { "" },
        ),
        _ => format!("  nftables: not applied ({})", text(&routing["reason"])),
    });
    lines.join("\n")
}

/// GETs `/healthz` from the server listening on FERROZONE_LISTEN. When the server serves
/// HTTPS (certificate files or ACME), the probe speaks HTTPS to that address under the
/// external URL's host name (the name the certificate is for, and the one the server
/// picks its certificate by) without checking the certificate: it reads only the health
/// report, which needs no token and holds no secret, from this machine's own listener.
async fn probe(config: &Config) -> anyhow::Result<Value> {
    let address = listen_address(&config.listen).await?;
    let https = config.tls.enabled() || config.acme.acme;
    let host = if https { external_host(config)? } else { address.ip().to_string() };
    let url = format!("{}://{}:{}/healthz", if https { "https" } else { "http" }, bracketed(&host), address.port());
    let client = reqwest::Client::builder()
        .use_rustls_tls()
        .danger_accept_invalid_certs(true)
        .resolve(&host, address)
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(PROBE_TIMEOUT)
        .build()
        .context("cannot make the probe's HTTP client")?;
    let mut response = client.get(&url).send().await.with_context(|| format!("GET {url}"))?;
    let status = response.status();
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.context("reading the answer")? {
        anyhow::ensure!(body.len() + chunk.len() <= MAX_ANSWER, "the answer is larger than {MAX_ANSWER} bytes");
        body.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&body).with_context(|| format!("HTTP {status}: not a health report"))
}

/// The address FERROZONE_LISTEN names, as this machine reaches it.
async fn listen_address(listen: &str) -> anyhow::Result<SocketAddr> {
    let address = match listen.parse::<SocketAddr>() {
        Ok(address) => address,
        Err(_) => tokio::net::lookup_host(listen).await?.next().context("the name resolves to no address")?,
    };
    Ok(reachable(address))
}

/// The host of the external URL: the name the served certificate is for.
fn external_host(config: &Config) -> anyhow::Result<String> {
    let url = reqwest::Url::parse(&config.external_url).context("FERROZONE_EXTERNAL_URL is not a URL")?;
    let host = url.host_str().context("FERROZONE_EXTERNAL_URL has no host")?;
    Ok(host.trim_start_matches('[').trim_end_matches(']').to_owned())
}

/// A host as it goes in a URL: an IPv6 address in brackets.
fn bracketed(host: &str) -> String {
    if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_owned()
    }
}

/// A wildcard listen address (`0.0.0.0`, `::`) is reached by the loopback address.
fn reachable(mut address: SocketAddr) -> SocketAddr {
    if address.ip().is_unspecified() {
        let loopback = match address {
            SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        };
        address.set_ip(loopback);
    }
    address
}
