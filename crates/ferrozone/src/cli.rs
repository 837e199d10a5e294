//! The command line. Scripts depend on these forms: change them only compatibly.

mod help;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use uuid::Uuid;

use crate::config::Config;

/// `ferrozone --version`: the version and the commit it was built from (build.rs).
const VERSION: &str = env!("BUILD_VERSION_LINE");

#[derive(Debug, Parser)]
#[command(name = "ferrozone", version = VERSION, about = "WireGuard VPN control plane", propagate_version = true)]
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
        let matches = Self::scoped_command().try_get_matches_from(args)?;
        let mut cli = Self::from_arg_matches(&matches)?;
        cli.config.flags = crate::config::flags(&matches);
        cli.config.report = crate::config::report(&matches);
        Ok(cli)
    }

    /// The command line, each subcommand's help listing only the settings it uses.
    pub fn scoped_command() -> clap::Command {
        help::scoped(Self::command())
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the API (migrates the database first).
    Serve,
    /// Run a gateway on this host: the WireGuard interface and the nftables table of a
    /// control plane elsewhere, which it polls over HTTPS (enrols once with its token).
    Gateway,
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
    /// Import another installation into this one.
    #[command(subcommand)]
    Import(ImportCommand),
    /// Copy the SQLite database, also while `serve` runs, to FILE and check the copy.
    Backup {
        /// Where to write the backup (mode 0600).
        #[arg(long, value_name = "FILE")]
        out: std::path::PathBuf,
        /// Replace FILE if it exists.
        #[arg(long)]
        force: bool,
    },
    /// Replace the SQLite database with a checked backup; refused while `serve` runs on it.
    Restore {
        /// A file written by `ferrozone backup`.
        file: std::path::PathBuf,
    },
    /// Print an environment file (`KEY=value` lines, as systemd's `EnvironmentFile=` reads)
    /// with every setting commented out, each with its description and default.
    EnvFile,
    /// Manage devices.
    #[command(subcommand)]
    Device(DeviceCommand),
    /// Who is online, and the state of the running server's data plane.
    Status,
    /// The audit log: who changed what, from where and when.
    #[command(subcommand)]
    Audit(AuditCommand),
}

/// `ferrozone audit ...`: one variant per subcommand.
#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Check that no event was edited, deleted or reordered (with the secret key); exit
    /// status 1 names the first event that breaks the chain.
    Verify,
    /// List audit events, newest first (secrets are named, never shown).
    List(crate::commands::AuditListArgs),
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum RoleArg {
    /// Manages every user, device and setting.
    Admin,
    /// Manages its own devices and account only.
    Unprivileged,
}

#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Create a user; prints its id.
    Create {
        /// The new user's email, its sign-in name.
        #[arg(long)]
        email: String,
        /// What the user may manage.
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
        /// The user's email (any case).
        #[arg(long)]
        email: String,
    },
    /// Enable a disabled user again; its unexpired tokens work again.
    Enable {
        /// The user's email (any case).
        #[arg(long)]
        email: String,
    },
    /// End every browser session of a user (its API tokens are not touched).
    SignOut {
        /// The user's email (any case).
        #[arg(long)]
        email: String,
    },
    /// Set a user's password, read from standard input; this ends the user's browser
    /// sessions, as a password change through the API does (its API tokens are not touched).
    SetPassword {
        /// The user's email (any case).
        #[arg(long)]
        email: String,
        /// Read the password from the first line of standard input (the only way: a
        /// password in the arguments would show in the process list).
        #[arg(long, required = true)]
        password_stdin: bool,
    },
    /// Make a user an admin or an unprivileged user; the last admin cannot be demoted.
    SetRole {
        /// The user's email (any case).
        #[arg(long)]
        email: String,
        /// The new role.
        #[arg(long, value_enum)]
        role: RoleArg,
    },
    /// Delete a user with its devices and API tokens; the last admin cannot be deleted.
    Delete {
        /// The user's email (any case).
        #[arg(long)]
        email: String,
        /// Delete: without it, the command only says what it would delete.
        #[arg(long)]
        yes: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum DeviceCommand {
    /// List devices, one a line: id, name, user, tunnel addresses, public key, latest
    /// handshake (or `never`).
    List {
        /// Only this user's devices.
        #[arg(long)]
        email: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create an API token; prints the token alone on standard output.
    Create {
        /// The email of the user the token acts as.
        #[arg(long)]
        email: String,
        /// A name to recognise the token by [default: api].
        #[arg(long)]
        name: Option<String>,
        /// Lifetime in days [default: FERROZONE_API_TOKEN_DAYS].
        #[arg(long)]
        days: Option<u32>,
    },
    /// List a user's tokens (never the secrets).
    List {
        /// The user's email (any case).
        #[arg(long)]
        email: String,
    },
    /// Revoke a token by its id.
    Revoke {
        /// The token's id, as `token list` prints it.
        id: Uuid,
    },
}

#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// Import a Firezone 0.7.26–0.7.36 installation: users, devices (with their keys and
    /// addresses), API tokens, rules, authenticators, provider sign-ins and configuration.
    Firezone(FirezoneImport),
}

/// Where the Firezone installation is and what opens it. `--database-url` names this
/// installation's own database, so the source's is `--source-database-url`.
#[derive(Debug, clap::Args)]
pub struct FirezoneImport {
    /// The Firezone database (`postgres://…`), read in one snapshot and never changed.
    #[arg(long, value_name = "URL", required_unless_present = "dump", conflicts_with = "dump")]
    pub source_database_url: Option<String>,
    /// A plain-SQL `pg_dump -O -x` of the Firezone database, loaded with `psql` into a
    /// scratch database that is dropped afterwards. It is checked first: psql
    /// meta-commands and `COPY` other than `FROM stdin` are refused.
    #[arg(long, value_name = "FILE", requires = "scratch_database_url")]
    pub dump: Option<std::path::PathBuf>,
    /// A PostgreSQL server (`postgres://…`, a role with CREATEDB) for the scratch database of `--dump`.
    #[arg(long, value_name = "URL")]
    pub scratch_database_url: Option<String>,
    /// Load the dump even though the scratch role is a superuser, may run programs or use
    /// the server's files, or may grant itself that: only for a dump you trust.
    #[arg(long, requires = "dump")]
    pub allow_privileged_scratch_role: bool,
    /// A Docker install's `.env` (`$HOME/.firezone/.env`): secrets and tunnel networks.
    #[arg(long, value_name = "FILE", conflicts_with = "secrets_file")]
    pub env_file: Option<std::path::PathBuf>,
    /// An Omnibus install's `/etc/firezone/secrets.json`.
    #[arg(long, value_name = "FILE")]
    pub secrets_file: Option<std::path::PathBuf>,
    /// The source's DATABASE_ENCRYPTION_KEY, when no file gives it.
    #[arg(long, value_name = "KEY")]
    pub database_encryption_key: Option<String>,
    /// The source's GUARDIAN_SECRET_KEY, when no file gives it: needed to keep API tokens.
    #[arg(long, value_name = "KEY")]
    pub guardian_secret_key: Option<String>,
    /// The source server's WireGuard private key file (Docker: `$HOME/.firezone/firezone/private_key`,
    /// Omnibus: `/var/opt/firezone/cache/wg_private_key`): needed for clients to keep working.
    #[arg(long, value_name = "FILE")]
    pub private_key_file: Option<std::path::PathBuf>,
    /// Print what would be imported and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Import into a database that already holds users or devices, skipping rows that clash.
    #[arg(long)]
    pub merge: bool,
}
