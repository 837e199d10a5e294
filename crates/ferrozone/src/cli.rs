//! The command line. Scripts depend on these forms: change them only compatibly.

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use uuid::Uuid;

use crate::config::Config;

#[derive(Debug, Parser)]
#[command(name = "ferrozone", version, about = "WireGuard VPN control plane", propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    pub config: Config,
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// Parses `args` as `Cli::try_parse_from` does, and also notes which configuration keys
    /// a command-line flag set: those a PATCH of `/v0/configuration` may not change.
    pub fn parse_args<I, T>(args: I) -> Result<Self, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let matches = Self::command().try_get_matches_from(args)?;
        let mut cli = Self::from_arg_matches(&matches)?;
        cli.config.flags = crate::config::flags(&matches);
        cli.config.report = crate::config::report(&matches);
        Ok(cli)
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the API (migrates the database first).
    Serve,
    /// Apply database migrations and exit.
    Migrate,
    /// Manage users.
    #[command(subcommand)]
    User(UserCommand),
    /// Manage API tokens.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Print the OpenAPI document of the `/v0` API.
    Openapi,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum RoleArg {
    Admin,
    Unprivileged,
}

#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Create a user.
    Create {
        #[arg(long)]
        email: String,
        #[arg(long, value_enum, default_value = "unprivileged")]
        role: RoleArg,
        /// Read the password from the first line of standard input.
        #[arg(long)]
        password_stdin: bool,
    },
    /// List users.
    List,
    /// Disable a user: its API tokens are refused (401 `user_disabled`) until it is enabled.
    /// Disabling a disabled user changes nothing.
    Disable {
        #[arg(long)]
        email: String,
    },
    /// Enable a disabled user again; its unexpired tokens work again.
    Enable {
        #[arg(long)]
        email: String,
    },
    /// End every browser session of a user (its API tokens are not touched).
    SignOut {
        #[arg(long)]
        email: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create an API token; prints the token alone on standard output.
    Create {
        #[arg(long)]
        email: String,
        #[arg(long)]
        name: Option<String>,
        /// Lifetime in days [default: FERROZONE_API_TOKEN_DAYS].
        #[arg(long)]
        days: Option<u32>,
    },
    /// List a user's tokens (never the secrets).
    List {
        #[arg(long)]
        email: String,
    },
    /// Revoke a token by its id.
    Revoke { id: Uuid },
}
