//! The `/v0` API through HTTP, against a real router and a fresh migrated database:
//! SQLite by default, PostgreSQL when `FERROZONE_TEST_DATABASE_URL` is set.

#![allow(clippy::unwrap_used)]

mod helpers;

mod admin_console;
mod auth;
mod configuration;
mod dataplane;
mod devices;
mod logs;
mod oidc;
mod outage;
mod robustness;
mod rules;
mod signin;
mod tokens;
mod users;
mod web;
mod wire;
