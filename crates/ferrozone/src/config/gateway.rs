//! The settings of `ferrozone gateway` alone (docs/operations.md, "Gateways on other hosts"):
//! where its control plane is and where it keeps its state. Its data-plane settings are
//! `serve`'s.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use ferrozone_gateway::remote::RemoteOptions;
use zeroize::Zeroizing;

/// Where a gateway's control plane is, and where the gateway keeps its state.
#[derive(Debug, Clone, Args)]
pub struct GatewaySettings {
    /// The control plane's external URL (its FERROZONE_EXTERNAL_URL), for `ferrozone gateway`.
    #[arg(long, global = true, env = "FERROZONE_GATEWAY_CONTROL_PLANE", value_name = "URL")]
    pub gateway_control_plane: Option<String>,
    /// Where `ferrozone gateway` keeps its credential, a key of its own and its last state.
    #[arg(long, global = true, env = "FERROZONE_GATEWAY_STATE_DIR", default_value = "/var/lib/ferrozone-gateway")]
    pub gateway_state_dir: PathBuf,
    /// The gateway's enrolment token (console or `POST /v0/gateways`): used once, while the
    /// state directory holds no credential.
    #[arg(long, global = true, env = "FERROZONE_GATEWAY_ENROLMENT_TOKEN", hide_env_values = true)]
    pub gateway_enrolment_token: Option<String>,
    /// A file holding the enrolment token (instead of the variable).
    #[arg(long, global = true, env = "FERROZONE_GATEWAY_ENROLMENT_TOKEN_FILE", value_name = "FILE")]
    pub gateway_enrolment_token_file: Option<PathBuf>,
    /// PEM certificates to trust for the control plane besides the system's (a private CA).
    #[arg(long, global = true, env = "FERROZONE_GATEWAY_CA_FILE", value_name = "FILE")]
    pub gateway_ca_file: Option<PathBuf>,
}

impl GatewaySettings {
    /// The gateway's remote options; errors name the setting.
    pub fn remote(&self) -> anyhow::Result<RemoteOptions> {
        let control_plane = self
            .gateway_control_plane
            .as_deref()
            .map(str::trim)
            .filter(|url| !url.is_empty())
            .context("FERROZONE_GATEWAY_CONTROL_PLANE: the control plane's external URL is required")?;
        let url = url::Url::parse(control_plane)
            .with_context(|| format!("FERROZONE_GATEWAY_CONTROL_PLANE: `{control_plane}` is not a URL"))?;
        anyhow::ensure!(
            matches!(url.scheme(), "https" | "http"),
            "FERROZONE_GATEWAY_CONTROL_PLANE: `{control_plane}` is not an http(s) URL"
        );
        let enrolment_token = match (&self.gateway_enrolment_token, &self.gateway_enrolment_token_file) {
            (Some(_), Some(_)) => anyhow::bail!(
                "FERROZONE_GATEWAY_ENROLMENT_TOKEN and FERROZONE_GATEWAY_ENROLMENT_TOKEN_FILE are both set: set one"
            ),
            (Some(token), None) => Some(Zeroizing::new(token.trim().to_owned())),
            (None, Some(path)) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("FERROZONE_GATEWAY_ENROLMENT_TOKEN_FILE: reading {}", path.display()))?;
                Some(Zeroizing::new(text.trim().to_owned()))
            }
            (None, None) => None,
        };
        Ok(RemoteOptions {
            control_plane: control_plane.to_owned(),
            state_dir: self.gateway_state_dir.clone(),
            enrolment_token,
            ca_file: self.gateway_ca_file.clone(),
        })
    }
}
