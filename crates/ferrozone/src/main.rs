//! `ferrozone`: the WireGuard VPN control plane in one binary.

mod cli;
mod commands;
mod config;
mod dataplane;
mod env_file;
mod memory;
mod monitoring;
mod secret;
mod serve_lock;
mod startup;
mod supervisor;
mod telemetry;

use std::collections::BTreeSet;
use std::process::ExitCode;

use crate::cli::Cli;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let known = known_variables();
    // Runs before the async runtime exists: it edits the process environment.
    let warnings = match config::prepare_environment(&args, &known) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::from(2);
        }
    };
    let cli = Cli::parse_args(args).unwrap_or_else(|e| e.exit());
    telemetry::init(&cli);
    for warning in warnings {
        tracing::warn!("{warning}");
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    // An error is said once, on one line with its causes; not logged as well.
    match runtime.block_on(commands::run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Every `FERROZONE_*` variable some flag reads, to warn about misspelt ones.
fn known_variables() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut stack = vec![Cli::scoped_command()];
    while let Some(cmd) = stack.pop() {
        for arg in cmd.get_arguments() {
            if let Some(env) = arg.get_env() {
                names.insert(env.to_string_lossy().into_owned());
            }
        }
        stack.extend(cmd.get_subcommands().cloned());
    }
    names
}
