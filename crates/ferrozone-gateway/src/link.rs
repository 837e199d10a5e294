//! The interface as a network link: its addresses and its state, set with iproute2's `ip`.

use anyhow::{bail, Context};
use ipnet::IpNet;
use tokio::process::Command;

/// Runs `ip ARGS…`; a failure carries ip's own message.
pub async fn ip(args: &[&str]) -> anyhow::Result<()> {
    let output = Command::new("ip").args(args).output().await.context("running `ip` (iproute2)")?;
    if !output.status.success() {
        bail!("`ip {}` failed: {}", args.join(" "), String::from_utf8_lossy(&output.stderr).trim());
    }
    Ok(())
}

/// Whether a link called `name` exists.
pub async fn exists(name: &str) -> bool {
    ip(&["link", "show", "dev", name]).await.is_ok()
}

/// Gives `name` the gateway `addresses` (each with its network's prefix, so the kernel
/// routes the tunnel network through it) and brings it up. Safe to repeat.
pub async fn configure(name: &str, addresses: &[IpNet]) -> anyhow::Result<()> {
    for address in addresses {
        let text = address.to_string();
        ip(&["address", "replace", &text, "dev", name]).await?;
    }
    ip(&["link", "set", "up", "dev", name]).await
}
