//! Ferrozone's core: the model, validation, address pools, secrets, the use cases and the
//! storage interface.
//!
//! Nothing here knows about HTTP or SQL. The HTTP API and its sign-in pages, the command
//! line, the OpenID Connect refresh job and the WireGuard data plane all go through
//! [`service`], so they all enforce the same rules. [`Store`] is the interface the use cases
//! write through; `ferrozone-store` implements it for SQLite and PostgreSQL, running the
//! rules that need a write transaction ([`rules`]) on its own transactions.

pub mod audit;
pub mod client;
pub mod client_config;
pub mod configuration;
pub mod crypto;
pub mod egress;
pub mod email;
pub mod error;
pub mod gateway;
pub mod group;
pub mod group_sync;
pub mod import;
pub mod input;
pub mod ipam;
pub mod model;
pub mod names;
pub mod percent;
pub mod providers;
pub mod rules;
pub mod scim;
pub mod service;
pub mod settings;
pub mod sign_in_link;
pub mod store;
pub mod time;
pub mod validate;
pub mod vpn_session;
pub mod webhook;

pub use error::{DomainError, Errors};
pub use model::{ApiToken, Device, Role, Session, User};
pub use service::{Domain, Principal};
pub use settings::Settings;
pub use store::Store;
pub use time::Timestamp;
