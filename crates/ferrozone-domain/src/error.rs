//! One error type for the domain: it says what went wrong, not where.

use std::collections::BTreeMap;

use serde::Serialize;

/// Validation errors: attribute name → messages. Non-field errors go under `base`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Errors(BTreeMap<String, Vec<String>>);

impl Errors {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn one(field: &str, message: impl Into<String>) -> Self {
        let mut errors = Self::new();
        errors.add(field, message);
        errors
    }

    pub fn add(&mut self, field: &str, message: impl Into<String>) {
        let messages = self.0.entry(field.to_owned()).or_default();
        let message = message.into();
        if !messages.contains(&message) {
            messages.push(message);
        }
    }

    pub fn has(&self, field: &str) -> bool {
        self.0.contains_key(field)
    }

    /// Number of attributes with errors.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn get(&self, field: &str) -> Option<&[String]> {
        self.0.get(field).map(Vec::as_slice)
    }

    /// Each attribute with its messages, in the attributes' order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &[String])> {
        self.0.iter().map(|(field, messages)| (field.as_str(), messages.as_slice()))
    }

    /// `Ok(value)` when nothing was recorded, the errors otherwise.
    pub fn finish<T>(self, value: T) -> Result<T, DomainError> {
        if self.is_empty() {
            Ok(value)
        } else {
            Err(DomainError::Invalid(self))
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DomainError {
    /// The record does not exist, or the caller may not know it exists.
    #[error("not found")]
    NotFound,
    /// The caller is known but not allowed to do this.
    #[error("forbidden")]
    Forbidden,
    /// The caller is known, but the server's configuration turns this off for it (an
    /// unprivileged user with `allow_unprivileged_device_management` off, say); the message
    /// says which switch, for the client to show.
    #[error("forbidden: {0}")]
    Disallowed(&'static str),
    /// The input breaks one or more rules.
    #[error("invalid attributes: {0:?}")]
    Invalid(Errors),
    /// The database cannot be reached right now; retrying later may work.
    #[error("storage unavailable")]
    Unavailable(#[source] anyhow::Error),
    /// Too much work of this kind is in progress (password hashing); retrying later may work.
    #[error("busy: {0}")]
    Busy(&'static str),
    /// A bug or an unexpected failure.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl DomainError {
    pub fn invalid(field: &str, message: impl Into<String>) -> Self {
        Self::Invalid(Errors::one(field, message))
    }
}

pub type Result<T, E = DomainError> = std::result::Result<T, E>;

/// An error and its causes on one line (an HTTP or SMTP client puts "connection refused" in
/// a source), for logs and for the errors an operator reads.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
