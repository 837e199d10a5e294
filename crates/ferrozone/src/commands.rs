//! The subcommands.

mod admin;
mod audit;
mod audit_list;
mod audit_retention;
mod backup;
mod device;
mod explain;
mod gateway;
mod gateway_sessions;
mod import;
mod serve;
mod status;
mod user_edit;

use clap::CommandFactory;
use ferrozone_domain::audit::{context, Actor, Origin};
use tracing::Instrument;

pub use audit_list::ListArgs as AuditListArgs;

use crate::cli::{Cli, Command};

/// Runs the command; every log line of a command other than `serve` names the command
/// line as the actor of what it writes (`actor=cli`), as a request's names its caller,
/// and so does every audit event it records.
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve => return serve::run(&cli.config).await,
        Command::Gateway => return gateway::run(&cli.config).await,
        _ => {}
    }
    let cli_context = context::Context::new(Actor::cli(), Origin::default());
    context::scope(cli_context, run_command(cli)).instrument(tracing::info_span!("command", actor = "cli")).await
}

async fn run_command(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve => serve::run(&cli.config).await,
        Command::Gateway => gateway::run(&cli.config).await,
        Command::Migrate => {
            crate::startup::create_data_dir(&cli.config.data_dir)?;
            let url = cli.config.database_url();
            let cipher = crate::secret::load(&cli.config)?;
            ferrozone_store::migrate(&url, &crate::startup::store_options(&cli.config, &cipher)).await?;
            eprintln!("database {} is up to date", ferrozone_store::Redacted(&url));
            Ok(())
        }
        Command::User(cmd) => admin::user(&cli.config, cmd).await,
        Command::Token(cmd) => admin::token(&cli.config, cmd).await,
        Command::Import(cmd) => import::run(&cli.config, cmd).await,
        Command::Backup { out, force } => backup::backup(&cli.config, &out, force),
        Command::Restore { file } => backup::restore(&cli.config, &file),
        Command::EnvFile => {
            print!("{}", crate::env_file::render(&Cli::command()));
            Ok(())
        }
        Command::Openapi => {
            println!("{}", ferrozone_api::openapi_json());
            Ok(())
        }
        Command::Device(cmd) => device::run(&cli.config, cmd).await,
        Command::Status => status::run(&cli.config).await,
        Command::Audit(cmd) => audit::run(&cli.config, cmd).await,
    }
}
