//! Builds the test fixture's Docker installation of Firezone 0.7.36 on a PostgreSQL server
//! and prints, as JSON, what `scripts/wg-e2e --firezone-source` needs to import it and to
//! bring up one of its clients exactly as Firezone configured it. The database is left in
//! place: the caller drops it (its name is in the output).
//!
//!   cargo run -p ferrozone-import --features testing --example firezone_fixture -- URL

use ferrozone_import::firezone::fixture::{self, Layout};

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let url = std::env::args().nth(1).ok_or_else(|| anyhow::anyhow!("usage: firezone_fixture POSTGRES_URL"))?;
    let fz = fixture::realistic(&url, Layout::Docker).await?;
    let client = &fz.expected.client;
    let out = serde_json::json!({
        "database_url": fz.database.url,
        "database_name": fz.database.name(),
        "env_file": fz.env_file,
        "private_key_file": fz.private_key_file,
        "server_public_key": fz.server_public_key,
        "client": {
            "device_id": client.device_id,
            "private_key": client.private_key,
            "preshared_key": client.preshared_key,
            "ipv4": client.ipv4,
            "ipv6": client.ipv6,
        },
    });
    println!("{out}");
    // Kept for the caller, who drops it.
    std::mem::forget(fz);
    Ok(())
}
