//! User attributes (docs/api.md section 4).

use zeroize::Zeroizing;

use super::input::Check;
use super::{at_least, at_most, CANT_BE_BLANK};
use crate::error::DomainError;
use crate::input::{NewUser, PasswordChange, Patch, UserChanges};
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

pub fn create(input: &NewUser) -> Result<UserCreate, DomainError> {
    let mut c = Check::new(&input.wrong_types);
    let email = email(&mut c, input.email.as_deref());
    let role = match input.role {
        _ if c.wrong_type("role") => None,
        Some(role) => Some(role),
        None => Some(Role::Unprivileged),
    };
    let password = password(&mut c, input.password.as_deref(), input.password_confirmation.as_deref());
    c.finish(())?;
    Ok(UserCreate { email: email.unwrap_or_default(), role: role.unwrap_or(Role::Unprivileged), password })
}

pub fn update(input: &UserChanges) -> Result<UserEdit, DomainError> {
    let mut c = Check::new(&input.wrong_types);
    let email = match c.sent("email", &input.email) {
        true => email(&mut c, input.email.value().map(String::as_str)),
        false => None,
    };
    let role = match input.role {
        _ if c.wrong_type("role") => None,
        Patch::Absent => None,
        Patch::Null => {
            c.add("role", CANT_BE_BLANK);
            None
        }
        Patch::Value(role) => Some(role),
    };
    let password = password(&mut c, input.password.as_deref(), input.password_confirmation.as_deref());
    c.finish(UserEdit { email, role, password })
}

/// What a change of one's own password holds before the stored password is looked at: the
/// current password as sent, and the new one (valid and confirmed). Each is `None` when it
/// is missing or invalid, recorded in `c`; the caller checks the current one against the
/// stored hash.
pub fn password_change(
    c: &mut Check<'_>,
    input: &PasswordChange,
) -> (Option<Zeroizing<String>>, Option<Zeroizing<String>>) {
    let current = match input.current_password.as_deref() {
        _ if c.wrong_type("current_password") => None,
        Some(sent) if !sent.is_empty() => Some(Zeroizing::new(sent.clone())),
        _ => {
            c.add("current_password", CANT_BE_BLANK);
            None
        }
    };
    let new = password(c, input.password.as_deref(), input.password_confirmation.as_deref());
    let blank = input.password.as_deref().is_none_or(|p| p.is_empty());
    if blank && !c.is_wrong_type("password") {
        c.add("password", CANT_BE_BLANK);
    }
    (current, new)
}

/// Validates an email that was sent (absent counts as blank).
fn email(c: &mut Check<'_>, value: Option<&str>) -> Option<String> {
    let email = c.trimmed("email", value)?;
    let Some(email) = email else {
        c.add("email", CANT_BE_BLANK);
        return None;
    };
    if !is_email(email) {
        c.add("email", INVALID_EMAIL);
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

/// What is wrong with `password` as a password (its length), if anything: for a password
/// that comes from elsewhere than a request, such as the first admin's from the environment.
pub fn password_problem(password: &str) -> Option<String> {
    let length = password.chars().count();
    if length < PASSWORD_MIN {
        Some(at_least(PASSWORD_MIN))
    } else if length > PASSWORD_MAX {
        Some(at_most(PASSWORD_MAX))
    } else {
        None
    }
}

/// The password, when one is set (`None` and `""` set none), with its confirmation checked.
fn password(c: &mut Check<'_>, password: Option<&String>, confirmation: Option<&String>) -> Option<Zeroizing<String>> {
    if c.wrong_type("password") {
        return None;
    }
    let password = password.filter(|p| !p.is_empty())?;
    let mut valid = true;
    if let Some(problem) = password_problem(password) {
        c.add("password", problem);
        valid = false;
    }
    match confirmation {
        _ if c.wrong_type("password_confirmation") => valid = false,
        Some(confirmation) if confirmation == password => {}
        Some(confirmation) if !confirmation.is_empty() => {
            c.add("password_confirmation", "does not match confirmation");
            valid = false;
        }
        Some(_) | None => {
            c.add("password_confirmation", CANT_BE_BLANK);
            valid = false;
        }
    }
    valid.then(|| Zeroizing::new(password.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Errors;
    use crate::input::WrongTypes;

    fn errors_of(r: Result<impl std::fmt::Debug, DomainError>) -> Errors {
        match r {
            Err(DomainError::Invalid(e)) => e,
            other => panic!("expected validation errors, got {other:?}"),
        }
    }

    fn secret(s: &str) -> Option<Zeroizing<String>> {
        Some(Zeroizing::new(s.to_owned()))
    }

    fn new_user(email: &str) -> NewUser {
        NewUser { email: Some(email.to_owned()), ..NewUser::default() }
    }

    fn wrong(attribute: &str) -> WrongTypes {
        let mut wrong = WrongTypes::default();
        wrong.insert(attribute, true);
        wrong
    }

    #[test]
    fn short_password_without_confirmation_matches_firezone() {
        let e = errors_of(create(&NewUser { password: secret("test1234"), ..new_user("test@test.com") }));
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            serde_json::json!({"password": ["should be at least 12 character(s)"], "password_confirmation": ["can't be blank"]})
        );
    }

    #[test]
    fn create_defaults_and_trims() {
        let u = create(&new_user("  a@b  ")).unwrap();
        assert_eq!((u.email.as_str(), u.role), ("a@b", Role::Unprivileged));
        assert!(u.password.is_none());
        let twelve = "x".repeat(12);
        let u = create(&NewUser {
            role: Some(Role::Admin),
            password: secret(&twelve),
            password_confirmation: secret(&twelve),
            ..new_user("a@b")
        })
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
        assert_eq!(errors_of(create(&NewUser::default())).get("email").unwrap(), ["can't be blank"]);
        let e = errors_of(create(&NewUser { wrong_types: wrong("email"), ..NewUser::default() }));
        assert_eq!(e.get("email").unwrap(), ["is invalid"]);
    }

    #[test]
    fn role_and_password_rules() {
        let e = errors_of(create(&NewUser { wrong_types: wrong("role"), ..new_user("a@b") }));
        assert_eq!(e.get("role").unwrap(), ["is invalid"]);
        let e = errors_of(create(&NewUser {
            password: secret(&"y".repeat(65)),
            password_confirmation: secret("z"),
            ..new_user("a@b")
        }));
        assert_eq!(e.get("password").unwrap(), ["should be at most 64 character(s)"]);
        assert_eq!(e.get("password_confirmation").unwrap(), ["does not match confirmation"]);
        let e = errors_of(update(&UserChanges {
            role: Patch::Null,
            email: Patch::Value(String::new()),
            ..UserChanges::default()
        }));
        assert_eq!(e.get("role").unwrap(), ["can't be blank"]);
        assert_eq!(e.get("email").unwrap(), ["can't be blank"]);
    }

    #[test]
    fn empty_update_changes_nothing() {
        let edit = update(&UserChanges::default()).unwrap();
        assert!(edit.email.is_none() && edit.role.is_none() && edit.password.is_none());
        assert!(update(&UserChanges { password: secret(""), ..UserChanges::default() }).unwrap().password.is_none());
    }

    #[test]
    fn a_password_change_needs_the_current_password_and_a_valid_new_one() {
        let empty = PasswordChange::default();
        let mut c = Check::new(&empty.wrong_types);
        let (current, new) = password_change(&mut c, &empty);
        assert!(current.is_none() && new.is_none());
        let e = errors_of(c.finish(()));
        assert_eq!(e.get("current_password").unwrap(), ["can't be blank"]);
        assert_eq!(e.get("password").unwrap(), ["can't be blank"]);

        let change = PasswordChange {
            current_password: secret("old"),
            password: secret("short"),
            password_confirmation: secret("short"),
            ..PasswordChange::default()
        };
        let mut c = Check::new(&change.wrong_types);
        let (current, new) = password_change(&mut c, &change);
        assert_eq!((current.as_deref().map(String::as_str), new), (Some("old"), None));
        assert_eq!(errors_of(c.finish(())).get("password").unwrap(), ["should be at least 12 character(s)"]);

        let change = PasswordChange {
            current_password: secret("old"),
            password: secret("a new long password"),
            password_confirmation: secret("a new long password"),
            wrong_types: WrongTypes::default(),
        };
        let mut c = Check::new(&change.wrong_types);
        let (_, new) = password_change(&mut c, &change);
        assert_eq!(new.as_deref().map(String::as_str), Some("a new long password"));
        c.finish(()).unwrap();
    }
}
