//! `GET/POST /admin/users/new`: the form that creates a user, with the domain's validation
//! messages next to their fields and the values kept (never the passwords).

use std::collections::HashMap;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use ferrozone_domain::error::Errors;
use ferrozone_domain::input::NewUser;
use ferrozone_domain::{DomainError, Role};
use zeroize::Zeroizing;

use super::super::super::html;
use super::super::super::page_error::PageError;
use super::super::super::redirect;
use super::super::super::viewer::{AdminViewer, Nav, Section};
use super::sentence;
use crate::checked_form::CheckedForm;
use ferrozone_http::AppState;

#[derive(askama::Template)]
#[template(path = "admin/user_new.html")]
struct NewUserPage<'a> {
    nav: Nav<'a>,
    email: &'a str,
    admin: bool,
    errors: FieldErrors,
}

/// The messages of each field of the form, as sentences.
#[derive(Default)]
pub(super) struct FieldErrors {
    pub email: Vec<String>,
    pub role: Vec<String>,
    pub password: Vec<String>,
    pub password_confirmation: Vec<String>,
    pub base: Vec<String>,
}

impl FieldErrors {
    pub fn from(errors: &Errors) -> Self {
        let of = |field: &str| -> Vec<String> {
            errors.get(field).unwrap_or_default().iter().map(|m| sentence(field, m)).collect()
        };
        Self {
            email: of("email"),
            role: of("role"),
            password: of("password"),
            password_confirmation: of("password_confirmation"),
            base: of("base"),
        }
    }
}

pub(super) async fn form(AdminViewer(viewer): AdminViewer) -> Response {
    let page =
        NewUserPage { nav: viewer.nav(Section::AdminUsers), email: "", admin: false, errors: FieldErrors::default() };
    html::response(StatusCode::OK, page)
}

/// Creates the user and goes to its page; a refusal shows the form again (422).
pub(super) async fn create(
    State(app): State<AppState>,
    AdminViewer(viewer): AdminViewer,
    CheckedForm(fields): CheckedForm,
) -> Result<Response, PageError> {
    let field = |name: &str| fields.get(name).cloned().unwrap_or_default();
    let admin = field("role") == "admin";
    let input = new_user(&fields, admin);
    match app.domain.create_user(viewer.principal(), &input).await {
        Ok(user) => Ok(redirect(&format!("/admin/users/{}?done=created", user.id))),
        Err(DomainError::Invalid(errors)) => {
            let email = field("email");
            let page = NewUserPage {
                nav: viewer.nav(Section::AdminUsers),
                email: &email,
                admin,
                errors: FieldErrors::from(&errors),
            };
            Ok(html::response(StatusCode::UNPROCESSABLE_ENTITY, page))
        }
        Err(e) => Err(e.into()),
    }
}

/// The form as the domain's input: an empty password sets none.
fn new_user(fields: &HashMap<String, String>, admin: bool) -> NewUser {
    let secret = |name: &str| fields.get(name).filter(|v| !v.is_empty()).map(|v| Zeroizing::new(v.clone()));
    NewUser {
        email: fields.get("email").cloned(),
        role: Some(if admin { Role::Admin } else { Role::Unprivileged }),
        password: secret("password"),
        password_confirmation: secret("password_confirmation"),
        ..NewUser::default()
    }
}
