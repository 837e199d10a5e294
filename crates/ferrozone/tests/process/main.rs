//! The `ferrozone` binary as operators run it: real processes, real sockets.

#![allow(clippy::unwrap_used)]

mod harness;

mod backup;
mod admin_commands;
mod cli;
mod connections;
mod durability;
mod files;
mod import;
mod postgres_restart;
mod shared_postgres;
mod supervision;
mod tls;
