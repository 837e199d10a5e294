//! Ferrozone's core: the model, the rules, and the storage interface.
//!
//! Nothing here knows about HTTP or SQL. The HTTP API, the command line and
//! (later) the WireGuard reconciler all go through [`service`], so they all
//! enforce the same rules.

pub mod client_config;
pub mod crypto;
pub mod error;
pub mod ipam;
pub mod model;
pub mod names;
pub mod providers;
pub mod service;
pub mod settings;
pub mod store;
pub mod time;
pub mod validate;

pub use error::{DomainError, Errors};
pub use model::{ApiToken, Device, Role, Session, User};
pub use service::{Domain, Principal};
pub use settings::Settings;
pub use store::Store;
pub use time::Timestamp;
