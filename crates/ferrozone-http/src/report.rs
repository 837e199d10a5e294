//! What the server was started with, as the console's settings page and `GET /v0/server`
//! show it. The binary builds it from its configuration sources at start-up (it alone knows
//! which value came from a default, the config file, the environment or a flag) and leaves
//! every secret out; tests get [`ServerReport::default`].

use serde::Serialize;
use utoipa::ToSchema;

/// The version and the start-up settings of this process.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ServerReport {
    /// Ferrozone's version.
    #[schema(example = "0.1.0")]
    pub version: String,
    /// The source commit the binary was built from, when the build recorded it.
    pub commit: Option<String>,
    /// The start-up settings, secrets left out, in the order the settings page shows them.
    pub settings: Vec<ReportedSetting>,
}

impl Default for ServerReport {
    /// This crate's version and no settings: a process that did not report them.
    fn default() -> Self {
        Self { version: env!("CARGO_PKG_VERSION").to_owned(), commit: None, settings: Vec::new() }
    }
}

/// One start-up setting: its value as shown, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct ReportedSetting {
    /// The heading it is shown under.
    #[schema(example = "Defaults for new devices")]
    pub group: String,
    /// Its environment variable.
    #[schema(example = "FERROZONE_DEFAULT_CLIENT_MTU")]
    pub name: String,
    /// Its value as shown (never a secret).
    #[schema(example = "1280")]
    pub value: String,
    pub source: SettingSource,
    /// The variable, alias or flag that set it, when that is not `name` itself.
    #[schema(example = "WIREGUARD_MTU")]
    pub via: Option<String>,
}

/// Where a start-up value came from; later ones win: default < file < environment < flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SettingSource {
    Default,
    File,
    Environment,
    Flag,
}

impl SettingSource {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Default => "default",
            Self::File => "file",
            Self::Environment => "environment",
            Self::Flag => "flag",
        }
    }
}
