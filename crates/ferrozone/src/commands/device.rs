//! `ferrozone device list`.

use std::collections::HashMap;

use ferrozone_domain::store::DeviceQuery;
use ferrozone_domain::{Device, Domain, Principal};
use uuid::Uuid;

use super::explain::{explain, user_by_email};
use crate::cli::DeviceCommand;
use crate::config::Config;
use crate::startup::open_domain;

pub async fn run(config: &Config, cmd: DeviceCommand) -> anyhow::Result<()> {
    let domain = open_domain(config).await?;
    match cmd {
        DeviceCommand::List { email } => list(&domain, email.as_deref()).await,
    }
}

/// One device a line, tab-separated: id, name, owner's email, tunnel addresses, public
/// key, `last_handshake:` and its time or `never`.
async fn list(domain: &Domain, email: Option<&str>) -> anyhow::Result<()> {
    let user_id = match email {
        Some(email) => Some(user_by_email(domain, email).await?.id),
        None => None,
    };
    let operator = Principal::operator();
    let query = DeviceQuery { user_id, ..DeviceQuery::default() };
    let devices = domain.list_devices(&operator, query).await.map_err(|e| explain(e, "the device"))?;
    let owners = emails(domain).await?;
    for d in &devices {
        let owner = owners.get(&d.user_id).map_or("-", String::as_str);
        println!("{}\t{}\t{owner}\t{}\t{}\tlast_handshake:{}", d.id, d.name, addresses(d), d.public_key, handshake(d));
    }
    Ok(())
}

/// Every user's email by id: one read, however many devices.
pub async fn emails(domain: &Domain) -> anyhow::Result<HashMap<Uuid, String>> {
    let users = domain.list_users(&Principal::operator()).await.map_err(|e| explain(e, "the user"))?;
    Ok(users.into_iter().map(|u| (u.id, u.email)).collect())
}

/// The tunnel addresses, comma-separated, or `-`.
pub fn addresses(device: &Device) -> String {
    let listed: Vec<String> =
        device.ipv4.map(|a| a.to_string()).into_iter().chain(device.ipv6.map(|a| a.to_string())).collect();
    if listed.is_empty() {
        "-".to_owned()
    } else {
        listed.join(",")
    }
}

/// The latest handshake the server recorded, or `never`.
pub fn handshake(device: &Device) -> String {
    device.stats.latest_handshake.map_or_else(|| "never".to_owned(), |t| t.to_string())
}
