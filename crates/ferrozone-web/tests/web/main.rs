//! The web pages through HTTP, against a real router and a fresh migrated database:
//! SQLite by default, PostgreSQL when `FERROZONE_TEST_DATABASE_URL` is set. The router
//! serves the pages beside the API, as `serve` does: these tests sign in through the pages
//! and check what the API then answers.

#![allow(clippy::unwrap_used)]

mod helpers;
#[path = "../../../../tests/support/programs.rs"]
mod programs;

mod account;
mod add_device;
mod admin_console;
mod admin_users;
mod audit;
mod configuration_providers;
mod gateways;
mod groups;
mod imported_passwords;
mod invitations;
mod logs;
mod oidc;
mod portal;
mod providers_console;
mod rules;
mod scrape;
mod signin;
mod totp;
mod users_disable;
mod web;
