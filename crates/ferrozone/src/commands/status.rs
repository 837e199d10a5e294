//! `ferrozone status`: who is online, from the peer statistics `serve` stores in the
//! database, and the data plane's state, from the running server's `/healthz` on
//! FERROZONE_LISTEN (the state lives in that process; `/healthz` needs no token).

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context;
use ferrozone_domain::store::{DeviceQuery, Presence};
use ferrozone_domain::Principal;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::device::{addresses, emails, handshake};
use super::explain::explain;
use crate::config::Config;
use crate::startup::open_domain;

/// How long the server has to answer `/healthz`.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// The largest `/healthz` answer read.
const MAX_ANSWER: u64 = 64 * 1024;

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
    match probe(&config.listen).await {
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

/// GETs `/healthz` from the server listening on `listen`, in plain HTTP/1.0.
async fn probe(listen: &str) -> anyhow::Result<Value> {
    let answer = tokio::time::timeout(PROBE_TIMEOUT, fetch(listen)).await.context("no answer in time")??;
    let text = String::from_utf8_lossy(&answer);
    let (head, body) = text.split_once("\r\n\r\n").context("not an HTTP answer")?;
    let status = head.split_whitespace().nth(1).unwrap_or("?");
    let health: Value = serde_json::from_str(body).with_context(|| format!("HTTP {status}: not a health report"))?;
    Ok(health)
}

async fn fetch(listen: &str) -> anyhow::Result<Vec<u8>> {
    let mut stream = match listen.parse::<SocketAddr>() {
        Ok(address) => TcpStream::connect(reachable(address)).await,
        Err(_) => TcpStream::connect(listen).await,
    }?;
    stream.write_all(b"GET /healthz HTTP/1.0\r\nHost: localhost\r\nConnection: close\r\n\r\n").await?;
    let mut answer = Vec::new();
    stream.take(MAX_ANSWER).read_to_end(&mut answer).await?;
    Ok(answer)
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
