//! Email over SMTP (docs/operations.md, "Email"): [`smtp::Mailer`] sends one message with
//! the configured server, and [`Worker`] works through the outbox
//! ([`MailOutbox`](ferrozone_domain::service::mail::MailOutbox)), beside the API and never
//! on a request's path: a slow or dead SMTP server delays only the mail.

pub mod smtp;
pub mod worker;

pub use smtp::{Mailer, SmtpSettings, Tls};
pub use worker::{Options, Worker};
