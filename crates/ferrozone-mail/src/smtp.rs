//! One SMTP server and how to reach it.

use std::time::Duration;

use anyhow::Context;
use ferrozone_domain::email::Message;
use lettre::message::header::ContentType;
use lettre::message::Mailbox;
use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};
use zeroize::Zeroizing;

/// How the connection is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tls {
    /// Plain SMTP, then STARTTLS, required (the submission port, 587).
    StartTls,
    /// TLS from the first byte (port 465).
    Implicit,
    /// No TLS at all: for a relay on the same host or network only.
    None,
}

impl Tls {
    /// `starttls`, `tls` or `none`.
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "starttls" => Some(Self::StartTls),
            "tls" => Some(Self::Implicit),
            "none" => Some(Self::None),
            _ => None,
        }
    }

    /// The port a server of this kind listens on unless told otherwise.
    pub fn default_port(self) -> u16 {
        match self {
            Self::StartTls => 587,
            Self::Implicit => 465,
            Self::None => 25,
        }
    }
}

/// The SMTP server and the sender (`FERROZONE_SMTP_*`).
#[derive(Debug, Clone)]
pub struct SmtpSettings {
    pub host: String,
    pub port: u16,
    pub tls: Tls,
    pub username: Option<String>,
    pub password: Option<Zeroizing<String>>,
    /// The `From` address, `Name <address>` or a bare address.
    pub from: String,
    /// How long one connection, command or answer may take.
    pub timeout: Duration,
}

/// Why a message was not sent.
#[derive(Debug)]
pub struct SendError {
    /// The server refused it for good (a 5xx answer): trying again cannot help.
    pub permanent: bool,
    pub text: String,
}

/// Sends messages through one SMTP server.
pub struct Mailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
}

impl Mailer {
    /// Checks the settings (the sender's address) and prepares the transport; nothing is
    /// connected yet.
    pub fn new(settings: &SmtpSettings) -> anyhow::Result<Self> {
        let from: Mailbox = settings
            .from
            .parse()
            .with_context(|| format!("FERROZONE_SMTP_FROM: `{}` is not an email address", settings.from))?;
        let host = settings.host.as_str();
        let builder = match settings.tls {
            Tls::StartTls => AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(host)?,
            Tls::Implicit => AsyncSmtpTransport::<Tokio1Executor>::relay(host)?,
            Tls::None => AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host),
        };
        let mut builder = builder.port(settings.port).timeout(Some(settings.timeout));
        if let Some(username) = &settings.username {
            let password = settings.password.as_deref().map(String::as_str).unwrap_or_default();
            builder = builder.credentials(Credentials::new(username.clone(), password.to_owned()));
        }
        Ok(Self { transport: builder.build(), from })
    }

    /// Sends `message`.
    pub async fn send(&self, message: &Message) -> Result<(), SendError> {
        let to: Mailbox = message
            .to
            .parse()
            .map_err(|e| SendError { permanent: true, text: format!("the recipient is not an address: {e}") })?;
        let email = lettre::Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(&message.subject)
            .header(ContentType::TEXT_PLAIN)
            .body(message.text.clone())
            .map_err(|e| SendError { permanent: true, text: format!("the message cannot be built: {e}") })?;
        match self.transport.send(email).await {
            Ok(_) => Ok(()),
            Err(e) => Err(SendError { permanent: e.is_permanent(), text: ferrozone_domain::error::error_chain(&e) }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_modes_parse_and_have_their_ports() {
        assert_eq!(Tls::parse("STARTTLS"), Some(Tls::StartTls));
        assert_eq!(Tls::parse("tls").map(Tls::default_port), Some(465));
        assert_eq!(Tls::parse("none").map(Tls::default_port), Some(25));
        assert_eq!(Tls::parse("ssl"), None);
    }

    #[test]
    fn a_sender_that_is_no_address_is_refused_by_name() {
        let settings = SmtpSettings {
            host: "localhost".into(),
            port: 25,
            tls: Tls::None,
            username: None,
            password: None,
            from: "not an address".into(),
            timeout: Duration::from_secs(5),
        };
        let error = Mailer::new(&settings).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(error.contains("FERROZONE_SMTP_FROM"), "{error}");
    }
}
