//! The `/v0` API through HTTP, against a real router and a fresh migrated database:
//! SQLite by default, PostgreSQL when `FERROZONE_TEST_DATABASE_URL` is set. The router
//! serves the API face alone, as it would without the pages.

#![allow(clippy::unwrap_used)]

mod helpers;

mod audit_events;
mod auth;
mod configuration;
mod dataplane;
mod devices;
mod gateway_protocol;
mod gateways;
mod group_rules;
mod groups;
mod imported_tokens;
mod invitations;
mod outage;
mod remote_gateway;
mod robustness;
mod rules;
mod rules_check;
mod scim_tokens;
mod tokens;
mod users;
mod webhooks;
mod wire;
