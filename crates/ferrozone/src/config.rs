//! Configuration: flags, each with a `FERROZONE_*` environment variable, an optional
//! TOML file, and the Firezone 0.x variable names as aliases.
//!
//! Precedence: defaults < `--config` file < environment < flags. The file and the
//! aliases are folded into the environment before the command line is parsed, so
//! clap alone decides every value and `--help` documents each setting.

pub mod acme;
mod admin;
mod audit;
mod env;
mod firezone;
mod fixed;
pub mod gateway;
mod http;
mod monitoring;
mod report;
mod settings;
pub mod smtp;
mod table;
mod tls;
mod warnings;

pub use audit::Retention;
pub use env::prepare_environment;
pub use fixed::flags;
pub use report::report;
pub use settings::{Config, LogFormat, WireguardBackend};
