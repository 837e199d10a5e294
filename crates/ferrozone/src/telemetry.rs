//! Logging to standard error (standard output carries command results such as tokens).

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

use crate::cli::{Cli, Command};
use crate::config::LogFormat;

pub fn init(cli: &Cli) {
    let default = match cli.command {
        Command::Serve | Command::Gateway => "info",
        _ => "warn",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    match cli.config.log_format {
        LogFormat::Json => builder.json().flatten_event(true).init(),
        LogFormat::Text => builder.init(),
    }
}
