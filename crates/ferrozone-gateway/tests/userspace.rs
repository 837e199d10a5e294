//! The userspace backend's start-up, with the real `wireguard-go` (Debian's package). Skipped
//! where it is not installed, except in CI (tests/support/programs.rs).

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use ferrozone_gateway::userspace::Userspace;
use ferrozone_gateway::{InterfaceConfig, Key};
use tokio::sync::Notify;

#[path = "../../../tests/support/programs.rs"]
mod programs;

/// A `wireguard-go` that cannot start says why, in its own words: the operator reads that in
/// Ferrozone's log line rather than an exit status alone.
#[tokio::test]
async fn a_wireguard_go_that_cannot_start_is_quoted_in_the_error() {
    let Some(program) = programs::find("wireguard-go", "apt-get install wireguard-go") else { return };
    // One character over the kernel's limit on interface names: wireguard-go refuses it
    // before it creates anything, whoever runs the test.
    let config = InterfaceConfig {
        name: "wg-ferrozone-xyz".to_owned(),
        private_key: Key::from_base64("YFk3mMW5Ne1+jTEK3LBA6bVzpk6Xg8Vcmc7ynOLgp0A=").unwrap(),
        listen_port: 0,
        addresses: vec!["10.3.2.1/24".parse().unwrap()],
    };
    let started = Userspace::start(program.to_str().unwrap(), config, Arc::new(Notify::new())).await;
    let error = format!("{:#}", started.err().expect("an interface name of 16 bytes cannot be created"));
    assert!(error.contains("exited during start-up"), "{error}");
    assert!(error.contains("Failed to create TUN device"), "wireguard-go's reason is missing: {error}");
}
