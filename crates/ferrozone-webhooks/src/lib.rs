//! Webhook delivery: the audit events, signed, POSTed to the endpoints administrators
//! registered (docs/operations.md, "Webhooks").
//!
//! [`Worker`] works through the [`Outbox`](ferrozone_domain::service::webhooks::Outbox):
//! it leases due endpoints, reads each one's next events after its cursor in seq order and
//! delivers them one at a time with [`client::Client`], which refuses to call loopback,
//! link-local and private addresses unless allowed. It runs beside the API, never on a
//! request's path: a slow or dead receiver holds up only its own endpoint.

pub mod client;
pub mod resolve;
pub mod sign;
pub mod worker;

pub use client::Client;
pub use worker::{Options, Worker};
