//! What the account pages show (templates `account.html`, `account_token_created.html`).

use askama::Template;
use ferrozone_domain::model::ApiToken;
use ferrozone_domain::service::sessions::PASSWORD_METHOD;
use ferrozone_domain::{DomainError, Errors, Timestamp};
use uuid::Uuid;

use super::sentence;
use crate::portal::two_factor::StatusView;
use crate::viewer::{Nav, Section, Viewer};
use ferrozone_http::AppState;

/// The account page.
#[derive(Template)]
#[template(path = "account.html")]
pub struct AccountPage<'a> {
    pub nav: Nav<'a>,
    pub email: &'a str,
    pub role: &'static str,
    pub member_since: When,
    /// When and how the user last signed in.
    pub last_sign_in: Option<(When, String)>,
    /// Whether the user has a password here (else an identity provider manages it).
    pub has_password: bool,
    /// Whether two-factor sign-in (of a password sign-in) is on.
    pub two_factor: StatusView,
    /// What the action just done says.
    pub notice: Option<&'static str>,
    pub password: PasswordForm,
    pub tokens: Vec<TokenRow>,
    pub token_form: TokenForm,
    /// The longest lifetime a token may have, in days.
    pub max_days: u32,
}

impl<'a> AccountPage<'a> {
    /// The page of `viewer`'s account, with empty forms and no notice.
    pub async fn new(app: &AppState, viewer: &'a Viewer) -> Result<Self, DomainError> {
        let user = viewer.user();
        let now = Timestamp::now();
        let tokens = app.domain.list_tokens_as(viewer.principal(), None).await?;
        let two_factor = app.domain.totp_status(user).await?.into();
        let settings = app.domain.settings();
        let default_days = settings.token_days.min(settings.token_max_days);
        let last_sign_in = user.last_signed_in_at.map(|at| {
            let method = user.last_signed_in_method.as_deref().unwrap_or_default();
            (When::of(at), method_label(app, method))
        });
        Ok(AccountPage {
            nav: viewer.nav(Section::Account),
            email: &user.email,
            role: if viewer.is_admin() { "Administrator" } else { "User" },
            member_since: When::of(user.inserted_at),
            last_sign_in,
            has_password: user.password_hash.is_some(),
            two_factor,
            notice: None,
            password: PasswordForm::default(),
            tokens: tokens.iter().map(|t| TokenRow::of(t, now)).collect(),
            token_form: TokenForm { days: default_days.to_string(), ..TokenForm::default() },
            max_days: settings.token_max_days,
        })
    }
}

/// How a sign-in happened, in words: with the password, or the name of the provider (its
/// id when it is no longer configured).
fn method_label(app: &AppState, method: &str) -> String {
    if method == PASSWORD_METHOD {
        return "with a password".to_owned();
    }
    let sign_in = app.web.sign_in(&app.domain);
    let providers = &sign_in.providers;
    let oidc = providers.oidc.iter().map(|p| (&p.id, &p.label));
    let saml = providers.saml.iter().map(|p| (&p.id, &p.label));
    let label = oidc.chain(saml).find(|(id, _)| id.as_str() == method).map_or(method, |(_, label)| label.as_str());
    format!("through {label}")
}

/// A moment, for a `<time>` element: its machine-readable value and its text in UTC to the
/// minute.
pub struct When {
    pub datetime: String,
    pub text: String,
}

impl When {
    pub fn of(at: Timestamp) -> Self {
        let datetime = at.to_string();
        let text = format!("{} UTC", datetime.get(..16).unwrap_or(&datetime).replacen('T', " ", 1));
        When { datetime, text }
    }
}

/// The password form's messages, each under its field.
#[derive(Default)]
pub struct PasswordForm {
    pub current: Option<String>,
    pub new: Option<String>,
    pub confirmation: Option<String>,
    /// What refused the form as a whole.
    pub failure: Option<String>,
}

impl PasswordForm {
    pub fn invalid(errors: &Errors) -> Self {
        PasswordForm {
            current: sentence(errors, "current_password", "Current password"),
            new: sentence(errors, "password", "New password"),
            confirmation: confirmation_message(errors),
            failure: Some("The password was not changed.".to_owned()),
        }
    }

    pub fn failed(why: &str) -> Self {
        PasswordForm { failure: Some(why.to_owned()), ..PasswordForm::default() }
    }
}

/// The confirmation's message: the API's "does not match confirmation" names the field from
/// the other side, which reads oddly under it.
fn confirmation_message(errors: &Errors) -> Option<String> {
    let messages = errors.get("password_confirmation")?;
    if messages.iter().any(|m| m == "does not match confirmation") {
        return Some("The confirmation does not match the new password.".to_owned());
    }
    sentence(errors, "password_confirmation", "Confirmation")
}

/// One of the user's tokens.
pub struct TokenRow {
    pub id: Uuid,
    pub name: String,
    pub created: When,
    pub expires: When,
    pub expired: bool,
    pub last_used: Option<When>,
}

impl TokenRow {
    fn of(token: &ApiToken, now: Timestamp) -> Self {
        TokenRow {
            id: token.id,
            name: token.name.clone(),
            created: When::of(token.inserted_at),
            expires: When::of(token.expires_at),
            expired: token.expires_at <= now,
            last_used: token.last_used_at.map(When::of),
        }
    }
}

/// The new token form: the values sent (kept when refused) and the messages.
#[derive(Default)]
pub struct TokenForm {
    pub name: String,
    pub days: String,
    pub name_error: Option<String>,
    pub days_error: Option<String>,
    /// What refused the form as a whole (too many tokens).
    pub failure: Option<String>,
}

impl TokenForm {
    pub fn invalid(name: String, days: String, errors: &Errors) -> Self {
        TokenForm {
            name,
            days,
            name_error: sentence(errors, "name", "Name"),
            days_error: sentence(errors, "expires_in_days", "Expires in days"),
            failure: errors.get("base").map(|m| format!("{}.", capitalized(&m.join(" and ")))),
        }
    }
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map(|first| first.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

/// The answer to a new token: its secret, shown this once.
#[derive(Template)]
#[template(path = "account_token_created.html")]
pub struct TokenCreatedPage<'a> {
    pub nav: Nav<'a>,
    pub name: &'a str,
    pub secret: &'a str,
    pub expires: When,
}

impl<'a> TokenCreatedPage<'a> {
    pub fn new(nav: Nav<'a>, token: &'a ApiToken, secret: &'a str) -> Self {
        TokenCreatedPage { nav, name: &token.name, secret, expires: When::of(token.expires_at) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moments_read_to_the_minute_in_utc() {
        let when = When::of(Timestamp::from_micros(1_795_000_000_123_456));
        assert_eq!(when.datetime, "2026-11-18T11:06:40.123456Z");
        assert_eq!(when.text, "2026-11-18 11:06 UTC");
    }

    #[test]
    fn a_refused_token_form_keeps_its_values_and_says_why() {
        let mut errors = Errors::new();
        errors.add("base", "a user may have at most 50 tokens; revoke one first");
        errors.add("expires_in_days", "must be between 1 and 365");
        let form = TokenForm::invalid("ci".into(), "999".into(), &errors);
        assert_eq!((form.name.as_str(), form.days.as_str()), ("ci", "999"));
        assert_eq!(form.days_error.as_deref(), Some("Expires in days must be between 1 and 365."));
        assert_eq!(form.failure.as_deref(), Some("A user may have at most 50 tokens; revoke one first."));
        assert!(form.name_error.is_none());
    }
}
