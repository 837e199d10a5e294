//! Email over SMTP (docs/operations.md, "Email"): off unless `FERROZONE_SMTP_HOST` is set.
//! Firezone's `OUTBOUND_EMAIL_FROM` names the sender; its `OUTBOUND_EMAIL_ADAPTER` with
//! `OUTBOUND_EMAIL_ADAPTER_OPTS` (or the older `OUTBOUND_EMAIL_PROVIDER` with
//! `OUTBOUND_EMAIL_CONFIGS`) become these variables ([`firezone_variables`]).

use std::time::Duration;

use anyhow::{bail, Context};
use clap::Args;
use ferrozone_mail::{SmtpSettings, Tls};
use serde_json::{Map, Value};
use zeroize::Zeroizing;

/// The SMTP server invitations and magic links are sent through.
#[derive(Debug, Clone, Args)]
pub struct SmtpArgs {
    /// The SMTP server's host name: set, invitations can be emailed and the sign-in page
    /// offers a link by email (when password sign-in is on).
    #[arg(long, global = true, env = "FERROZONE_SMTP_HOST")]
    pub smtp_host: Option<String>,
    /// Its port (default: 587 with `starttls`, 465 with `tls`, 25 with `none`).
    #[arg(long, global = true, env = "FERROZONE_SMTP_PORT")]
    pub smtp_port: Option<u16>,
    /// `starttls` (required, the default), `tls` (from the first byte) or `none` (a relay on
    /// the same host or a trusted network only).
    #[arg(long, global = true, env = "FERROZONE_SMTP_TLS", default_value = "starttls",
          value_parser = ["starttls", "tls", "none"])]
    pub smtp_tls: String,
    /// The user name to authenticate with, if the server wants one.
    #[arg(long, global = true, env = "FERROZONE_SMTP_USERNAME")]
    pub smtp_username: Option<String>,
    /// Its password.
    #[arg(long, global = true, env = "FERROZONE_SMTP_PASSWORD", hide_env_values = true)]
    pub smtp_password: Option<String>,
    /// The sender, `address` or `Name <address>` (default: ferrozone@ the external URL's host).
    #[arg(long, global = true, env = "FERROZONE_SMTP_FROM")]
    pub smtp_from: Option<String>,
}

impl SmtpArgs {
    /// The server to send through, or `None` when no host is set; errors name the setting.
    pub fn settings(&self, external_url: &str) -> anyhow::Result<Option<SmtpSettings>> {
        let Some(host) = self.smtp_host.as_deref().map(str::trim).filter(|h| !h.is_empty()) else {
            return Ok(None);
        };
        let tls = Tls::parse(&self.smtp_tls).context("FERROZONE_SMTP_TLS: `starttls`, `tls` or `none`")?;
        let from = match self.smtp_from.as_deref().map(str::trim).filter(|f| !f.is_empty()) {
            Some(from) => from.to_owned(),
            None => {
                let url = url::Url::parse(external_url).ok();
                let host = url.as_ref().and_then(|u| u.host_str()).unwrap_or("localhost");
                format!("ferrozone@{}", host.trim_matches(['[', ']']))
            }
        };
        if self.smtp_password.is_some() && self.smtp_username.is_none() {
            bail!("FERROZONE_SMTP_PASSWORD is set but FERROZONE_SMTP_USERNAME is not");
        }
        let settings = SmtpSettings {
            host: host.to_owned(),
            port: self.smtp_port.unwrap_or(tls.default_port()),
            tls,
            username: self.smtp_username.clone(),
            password: self.smtp_password.clone().map(Zeroizing::new),
            from,
            timeout: Duration::from_secs(30),
        };
        // The sender's address is checked now, not at the first message.
        ferrozone_mail::Mailer::new(&settings)?;
        Ok(Some(settings))
    }
}

/// `FERROZONE_SMTP_*` variables with their values, and warnings.
type Folded = (Vec<(&'static str, String)>, Vec<String>);

/// Firezone's names of its SMTP adapter (the Swoosh module, or the older provider name).
const SMTP_ADAPTERS: [&str; 3] = ["Elixir.Swoosh.Adapters.SMTP", "Swoosh.Adapters.SMTP", "smtp"];
/// Firezone's adapters that send nothing.
const NO_EMAIL_ADAPTERS: [&str; 4] =
    ["Elixir.Swoosh.Adapters.Local", "Swoosh.Adapters.Local", "Elixir.FzHttpWeb.Mailer.NoopAdapter", "noop"];

/// The `FERROZONE_SMTP_*` variables Firezone's email variables (read through `var`) stand
/// for, with the Firezone variable each came from, and warnings. A non-SMTP adapter
/// (Mailgun, SendGrid, …) is a warning: Ferrozone sends through SMTP only.
pub fn firezone_variables(var: impl Fn(&str) -> Option<String>) -> anyhow::Result<Folded> {
    let Some((adapter_var, adapter)) = ["OUTBOUND_EMAIL_ADAPTER", "OUTBOUND_EMAIL_PROVIDER"]
        .into_iter()
        .find_map(|name| var(name).map(|value| (name, value.trim().to_owned())))
    else {
        return Ok((Vec::new(), Vec::new()));
    };
    if NO_EMAIL_ADAPTERS.contains(&adapter.as_str()) {
        return Ok((Vec::new(), Vec::new()));
    }
    if !SMTP_ADAPTERS.contains(&adapter.as_str()) {
        let warning = format!(
            "{adapter_var}={adapter} is not supported: Ferrozone sends email through SMTP only; \
             set FERROZONE_SMTP_HOST (and the other FERROZONE_SMTP_* variables), or the provider's SMTP relay"
        );
        return Ok((Vec::new(), vec![warning]));
    }
    let options = smtp_options(&var)?;
    let text = |key: &str| match options.get(key) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let mut variables = Vec::new();
    let mut warnings = Vec::new();
    let Some(relay) = text("relay") else {
        bail!("{adapter_var}={adapter}, but its options have no `relay` (the SMTP server's host)");
    };
    variables.push(("FERROZONE_SMTP_HOST", relay));
    if let Some(port) = text("port") {
        variables.push(("FERROZONE_SMTP_PORT", port));
    }
    for (key, name) in [("username", "FERROZONE_SMTP_USERNAME"), ("password", "FERROZONE_SMTP_PASSWORD")] {
        if let Some(value) = text(key) {
            variables.push((name, value));
        }
    }
    let tls = match (options.get("ssl"), text("tls").as_deref()) {
        (Some(Value::Bool(true)), _) => "tls",
        (_, Some("never")) => "none",
        (_, Some("if_available")) => {
            warnings.push(
                "Firezone's SMTP option tls: if_available is now STARTTLS, required (FERROZONE_SMTP_TLS=starttls)"
                    .to_owned(),
            );
            "starttls"
        }
        _ => "starttls",
    };
    variables.push(("FERROZONE_SMTP_TLS", tls.to_owned()));
    Ok((variables, warnings))
}

/// The SMTP adapter's options: `OUTBOUND_EMAIL_ADAPTER_OPTS`, or the `smtp` entry of the
/// older `OUTBOUND_EMAIL_CONFIGS` (or that object itself when it has no `smtp` entry).
fn smtp_options(var: &impl Fn(&str) -> Option<String>) -> anyhow::Result<Map<String, Value>> {
    for name in ["OUTBOUND_EMAIL_ADAPTER_OPTS", "OUTBOUND_EMAIL_CONFIGS"] {
        let Some(text) = var(name) else { continue };
        let value: Value = serde_json::from_str(&text).with_context(|| format!("{name} is not JSON"))?;
        let Value::Object(mut object) = value else { bail!("{name} is not a JSON object") };
        return Ok(match object.remove("smtp") {
            Some(Value::Object(smtp)) => smtp,
            _ => object,
        });
    }
    Ok(Map::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        |name| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).to_owned())
    }

    #[test]
    fn the_swoosh_smtp_adapter_becomes_the_smtp_variables() {
        let opts =
            r#"{"relay": "smtp.example.com", "port": 465, "username": "vpn", "password": "s3cret", "ssl": true}"#;
        let (vars, warnings) = firezone_variables(env(&[
            ("OUTBOUND_EMAIL_ADAPTER", "Elixir.Swoosh.Adapters.SMTP"),
            ("OUTBOUND_EMAIL_ADAPTER_OPTS", opts),
        ]))
        .unwrap();
        assert!(warnings.is_empty());
        assert_eq!(
            vars,
            [
                ("FERROZONE_SMTP_HOST", "smtp.example.com".to_owned()),
                ("FERROZONE_SMTP_PORT", "465".to_owned()),
                ("FERROZONE_SMTP_USERNAME", "vpn".to_owned()),
                ("FERROZONE_SMTP_PASSWORD", "s3cret".to_owned()),
                ("FERROZONE_SMTP_TLS", "tls".to_owned()),
            ]
        );
    }

    #[test]
    fn the_older_provider_and_configs_names_work_too() {
        let configs = r#"{"smtp": {"relay": "mail.internal", "port": 25, "tls": "never"}}"#;
        let (vars, _) =
            firezone_variables(env(&[("OUTBOUND_EMAIL_PROVIDER", "smtp"), ("OUTBOUND_EMAIL_CONFIGS", configs)]))
                .unwrap();
        assert!(vars.contains(&("FERROZONE_SMTP_HOST", "mail.internal".to_owned())));
        assert!(vars.contains(&("FERROZONE_SMTP_TLS", "none".to_owned())));
    }

    #[test]
    fn other_adapters_warn_and_set_nothing_and_a_missing_relay_is_an_error() {
        let (vars, warnings) =
            firezone_variables(env(&[("OUTBOUND_EMAIL_ADAPTER", "Elixir.Swoosh.Adapters.Mailgun")])).unwrap();
        assert!(vars.is_empty());
        assert!(warnings[0].contains("SMTP only"), "{warnings:?}");
        let (vars, warnings) =
            firezone_variables(env(&[("OUTBOUND_EMAIL_ADAPTER", "Elixir.Swoosh.Adapters.Local")])).unwrap();
        assert!(vars.is_empty() && warnings.is_empty());
        let error = firezone_variables(env(&[("OUTBOUND_EMAIL_ADAPTER", "smtp")])).unwrap_err();
        assert!(error.to_string().contains("relay"), "{error}");
    }

    #[test]
    fn the_settings_default_the_port_and_the_sender_and_check_the_sender() {
        let args = SmtpArgs {
            smtp_host: Some("mail.example.com".into()),
            smtp_port: None,
            smtp_tls: "tls".into(),
            smtp_username: None,
            smtp_password: None,
            smtp_from: None,
        };
        let settings = args.settings("https://vpn.example.com").unwrap().unwrap();
        assert_eq!((settings.port, settings.from.as_str()), (465, "ferrozone@vpn.example.com"));
        let unset = SmtpArgs { smtp_host: None, ..args.clone() };
        assert!(unset.settings("https://vpn.example.com").unwrap().is_none());
        let bad = SmtpArgs { smtp_from: Some("nobody".into()), ..args };
        assert!(bad.settings("https://vpn.example.com").unwrap_err().to_string().contains("FERROZONE_SMTP_FROM"));
    }
}
