//! The `ferrozone` binary as operators run it: real processes, real sockets.

#![allow(clippy::unwrap_used)]

mod harness;
#[path = "../../../../tests/support/programs.rs"]
#[allow(clippy::duplicate_mod, reason = "the ACME test's pebble harness includes it too")]
mod programs;

mod acme;
mod admin_commands;
mod audit_chain;
mod backup;
mod cli;
mod connections;
mod durability;
mod files;
mod first_day;
mod import;
mod monitoring;
mod postgres_restart;
mod shared_postgres;
mod supervision;
mod tls;
mod webhooks;
