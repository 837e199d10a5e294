//! Domain errors in words an operator can act on: one line, no JSON.

use ferrozone_domain::{Domain, DomainError};

/// Turns a domain error into a message; `missing` says what a `NotFound` did not find.
pub fn explain(e: DomainError, missing: &str) -> anyhow::Error {
    match e {
        DomainError::NotFound => anyhow::anyhow!("{missing} does not exist"),
        DomainError::Invalid(errors) => {
            let sentences: Vec<String> =
                errors.iter().flat_map(|(field, messages)| messages.iter().map(move |m| sentence(field, m))).collect();
            anyhow::anyhow!("{}", sentences.join("; "))
        }
        other => anyhow::Error::new(other),
    }
}

/// `email has already been taken`; a message about no one field (`base`) stands alone.
fn sentence(field: &str, message: &str) -> String {
    if field == "base" {
        message.to_owned()
    } else {
        format!("{field} {message}")
    }
}

/// The user with `email` (any case), or an error naming the email.
pub async fn user_by_email(domain: &Domain, email: &str) -> anyhow::Result<ferrozone_domain::model::User> {
    domain.user_with_email(email).await.map_err(|e| explain(e, "the user"))?.ok_or_else(|| no_user(email))
}

/// The error for an email no user has.
pub fn no_user(email: &str) -> anyhow::Error {
    anyhow::anyhow!("no user with email {email:?}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrozone_domain::error::Errors;

    #[test]
    fn validation_errors_read_as_sentences() {
        let mut errors = Errors::one("email", "has already been taken");
        errors.add("base", "cannot remove the last admin");
        let text = explain(DomainError::Invalid(errors), "x").to_string();
        assert_eq!(text, "cannot remove the last admin; email has already been taken");
        assert_eq!(explain(DomainError::NotFound, "the token").to_string(), "the token does not exist");
    }
}
