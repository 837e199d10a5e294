//! The `ferrozone` binary as operators run it: real processes, real sockets.

#![allow(clippy::unwrap_used)]

mod harness;
#[path = "../../../../tests/support/programs.rs"]
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
