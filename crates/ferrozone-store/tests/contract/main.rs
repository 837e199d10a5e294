//! The store contract, run through `ferrozone_store::testing::fresh()`: on SQLite by
//! default, on PostgreSQL when `FERROZONE_TEST_DATABASE_URL` is set.

#![allow(clippy::unwrap_used)]

mod addresses;
mod audit;
mod audit_recording;
mod audit_sealing;
mod audit_tampering;
mod cancellation;
mod configuration;
mod dataplane;
mod devices;
mod groups;
mod import;
mod metrics;
mod migrations;
mod oidc;
mod rules;
mod scim;
mod sessions;
mod streams;
mod support;
mod tokens;
mod users;
mod webhooks;
