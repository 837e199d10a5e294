//! User attributes (docs/api.md section 4).

use serde_json::{Map, Value};
use zeroize::Zeroizing;

use super::input::{field, trimmed, Field};
use super::{at_least, at_most, CANT_BE_BLANK, IS_INVALID};
use crate::error::{DomainError, Errors};
use crate::model::Role;

pub const INVALID_EMAIL: &str = "is invalid email address";
const EMAIL_MAX: usize = 320;
const PASSWORD_MIN: usize = 12;
const PASSWORD_MAX: usize = 64;

/// A validated create request.
#[derive(Debug)]
pub struct UserCreate {
    pub email: String,
    pub role: Role,
    pub password: Option<Zeroizing<String>>,
}

/// A validated update request; `None` keeps the stored value.
#[derive(Debug, Default)]
pub struct UserEdit {
    pub email: Option<String>,
    pub role: Option<Role>,
    pub password: Option<Zeroizing<String>>,
}

pub fn create(attrs: &Map<String, Value>) -> Result<UserCreate, DomainError> {
    let mut errors = Errors::new();
    let email = email(attrs, &mut errors, true);
    let role = match field(attrs, "role") {
        Field::Absent | Field::Null => Some(Role::Unprivileged),
        _ => role(attrs, &mut errors),
    };
    let password = password(attrs, &mut errors);
    errors.finish(())?;
    Ok(UserCreate { email: email.unwrap_or_default(), role: role.unwrap_or(Role::Unprivileged), password })
}

pub fn update(attrs: &Map<String, Value>) -> Result<UserEdit, DomainError> {
    let mut errors = Errors::new();
    let email = email(attrs, &mut errors, false);
    let role = match field(attrs, "role") {
        Field::Absent => None,
        _ => role(attrs, &mut errors),
    };
    let password = password(attrs, &mut errors);
    errors.finish(UserEdit { email, role, password })
}

/// Validates the email attribute. On update an absent email is `None` (kept).
fn email(attrs: &Map<String, Value>, errors: &mut Errors, required: bool) -> Option<String> {
    if !required && matches!(field(attrs, "email"), Field::Absent) {
        return None;
    }
    let email = trimmed(attrs, "email", errors)?;
    let Some(email) = email else {
        errors.add("email", CANT_BE_BLANK);
        return None;
    };
    if !is_email(email) {
        errors.add("email", INVALID_EMAIL);
        return None;
    }
    Some(email.to_owned())
}

/// One `@`, non-empty local part and domain, no white space, at most 320 characters.
pub fn is_email(s: &str) -> bool {
    let Some((local, domain)) = s.split_once('@') else {
        return false;
    };
    s.chars().count() <= EMAIL_MAX
        && !local.is_empty()
        && !domain.is_empty()
        && !domain.contains('@')
        && !s.chars().any(|c| c.is_whitespace() || c.is_control())
}

fn role(attrs: &Map<String, Value>, errors: &mut Errors) -> Option<Role> {
    match field(attrs, "role") {
        Field::Null => {
            errors.add("role", CANT_BE_BLANK);
            None
        }
        Field::Value(Value::String(s)) if Role::parse(s).is_some() => Role::parse(s),
        _ => {
            errors.add("role", IS_INVALID);
            None
        }
    }
}

/// The password, when one is set (`null` and `""` set none), with its confirmation checked.
fn password(attrs: &Map<String, Value>, errors: &mut Errors) -> Option<Zeroizing<String>> {
    let password = match field(attrs, "password") {
        Field::Absent | Field::Null => return None,
        Field::Value(Value::String(s)) if s.is_empty() => return None,
        Field::Value(Value::String(s)) => s,
        Field::Value(_) => {
            errors.add("password", IS_INVALID);
            return None;
        }
    };
    let length = password.chars().count();
    let mut valid = true;
    if length < PASSWORD_MIN {
        errors.add("password", at_least(PASSWORD_MIN));
        valid = false;
    } else if length > PASSWORD_MAX {
        errors.add("password", at_most(PASSWORD_MAX));
        valid = false;
    }
    match field(attrs, "password_confirmation") {
        Field::Value(Value::String(c)) if c == password => {}
        Field::Value(Value::String(c)) if !c.is_empty() => {
            errors.add("password_confirmation", "does not match confirmation");
            valid = false;
        }
        Field::Value(Value::String(_)) | Field::Absent | Field::Null => {
            errors.add("password_confirmation", CANT_BE_BLANK);
            valid = false;
        }
        Field::Value(_) => {
            errors.add("password_confirmation", IS_INVALID);
            valid = false;
        }
    }
    valid.then(|| Zeroizing::new(password.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn attrs(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    fn errors_of(r: Result<impl std::fmt::Debug, DomainError>) -> Errors {
        match r {
            Err(DomainError::Invalid(e)) => e,
            other => panic!("expected validation errors, got {other:?}"),
        }
    }

    #[test]
    fn short_password_without_confirmation_matches_firezone() {
        let e = errors_of(create(&attrs(json!({"email": "test@test.com", "password": "test1234"}))));
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            json!({"password": ["should be at least 12 character(s)"], "password_confirmation": ["can't be blank"]})
        );
    }

    #[test]
    fn create_defaults_and_trims() {
        let u = create(&attrs(json!({"email": "  a@b  "}))).unwrap();
        assert_eq!((u.email.as_str(), u.role), ("a@b", Role::Unprivileged));
        assert!(u.password.is_none());
        let u = create(&attrs(json!({"email": "a@b", "role": "admin", "password": "x".repeat(12),
            "password_confirmation": "x".repeat(12)})))
        .unwrap();
        assert_eq!(u.role, Role::Admin);
        assert_eq!(u.password.as_deref().map(String::as_str), Some("xxxxxxxxxxxx"));
    }

    #[test]
    fn email_rules() {
        for bad in ["a", "@b", "a@", "a b@c", "a@b@c", &format!("{}@b", "a".repeat(320))] {
            assert!(!is_email(bad), "{bad}");
        }
        assert!(is_email("new-user@test"));
        assert_eq!(errors_of(create(&attrs(json!({})))).get("email").unwrap(), ["can't be blank"]);
        assert_eq!(errors_of(create(&attrs(json!({"email": 5})))).get("email").unwrap(), ["is invalid"]);
    }

    #[test]
    fn role_and_password_rules() {
        let e = errors_of(create(&attrs(json!({"email": "a@b", "role": "superuser"}))));
        assert_eq!(e.get("role").unwrap(), ["is invalid"]);
        let e = errors_of(create(&attrs(
            json!({"email": "a@b", "password": "y".repeat(65), "password_confirmation": "z"}),
        )));
        assert_eq!(e.get("password").unwrap(), ["should be at most 64 character(s)"]);
        assert_eq!(e.get("password_confirmation").unwrap(), ["does not match confirmation"]);
        let e = errors_of(update(&attrs(json!({"role": null, "email": ""}))));
        assert_eq!(e.get("role").unwrap(), ["can't be blank"]);
        assert_eq!(e.get("email").unwrap(), ["can't be blank"]);
    }

    #[test]
    fn empty_update_changes_nothing() {
        let edit = update(&attrs(json!({"password": null, "disabled_at": "2020-01-01"}))).unwrap();
        assert!(edit.email.is_none() && edit.role.is_none() && edit.password.is_none());
        assert!(update(&attrs(json!({"password": ""}))).unwrap().password.is_none());
    }
}
