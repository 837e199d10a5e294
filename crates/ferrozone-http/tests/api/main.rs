//! The `/v0` API through HTTP, against a real router and a fresh migrated database:
//! SQLite by default, PostgreSQL when `FERROZONE_TEST_DATABASE_URL` is set.

#![allow(clippy::unwrap_used)]

mod helpers;
#[path = "../../../../tests/support/programs.rs"]
mod programs;

mod account;
mod add_device;
mod admin_console;
mod admin_users;
mod audit;
mod audit_events;
mod auth;
mod configuration;
mod dataplane;
mod devices;
mod imported_passwords;
mod imported_tokens;
mod logs;
mod oidc;
mod outage;
mod portal;
mod robustness;
mod rules;
mod scrape;
mod signin;
mod tokens;
mod totp;
mod users;
mod web;
mod webhooks;
mod wire;
