//! Test sign-in (docs/web.md, "Console: identity providers"): an admin runs a provider's
//! flow in the browser, and the callback shows what the provider proved and what signing in
//! would do, without signing anyone in. Started by `POST /admin/providers/oidc/{id}/test`;
//! the flow is marked by its `return_to` ([`crate::oidc::TEST_SIGN_IN`]).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use ferrozone_domain::{DomainError, Role};
use ferrozone_http::extract::ClientAddr;
use ferrozone_http::AppState;
use ferrozone_oidc::{Completed, Identity, Provider, SignInError};

use crate::checked_form::CheckedForm;
use crate::html;
use crate::oidc::{begin, TEST_SIGN_IN};
use crate::page_error::PageError;
use crate::viewer::AdminViewer;

/// `POST /admin/providers/oidc/{id}/test`: a flow that ends on the test's page.
pub(super) async fn start(
    State(app): State<AppState>,
    AdminViewer(_admin): AdminViewer,
    Path(id): Path<String>,
    ClientAddr(client): ClientAddr,
    CheckedForm(_): CheckedForm,
) -> Result<Response, PageError> {
    begin(&app, &id, TEST_SIGN_IN, client).await
}

#[derive(askama::Template)]
#[template(path = "admin/provider_test.html")]
struct TestPage<'a> {
    label: &'a str,
    id: &'a str,
    /// What the provider proved, when it did: (what, value).
    claims: Vec<(&'static str, String)>,
    /// What signing in would do, or why the test got no identity.
    outcome: String,
    passed: bool,
}

/// The test's page for what the callback came to.
pub(crate) async fn page(
    app: &AppState,
    provider: &Provider,
    tested: Result<Identity, Completed>,
) -> Result<Response, PageError> {
    let (claims, outcome, passed) = match tested {
        Ok(identity) => {
            let outcome = would(app, provider, &identity.email).await?;
            let refresh = if identity.refresh_token.is_some() { "yes" } else { "no" };
            let claims = vec![
                ("Email", identity.email),
                ("Subject (sub)", identity.subject),
                ("Refresh token issued", refresh.to_owned()),
            ];
            (claims, outcome, true)
        }
        Err(ended) => (Vec::new(), failure(&ended), false),
    };
    let sign_in = app.web.sign_in(&app.domain);
    let label = sign_in.providers.oidc.iter().find(|p| p.id == provider.id).map_or(provider.id.as_str(), |p| &p.label);
    let page = TestPage { label, id: &provider.id, claims, outcome, passed };
    let status = if passed { StatusCode::OK } else { StatusCode::UNPROCESSABLE_ENTITY };
    Ok(html::response(status, page))
}

/// What a sign-in with `email` through `provider` would do now.
async fn would(app: &AppState, provider: &Provider, email: &str) -> Result<String, DomainError> {
    Ok(match app.domain.find_user(email).await {
        Ok(user) if user.disabled_at.is_some() => format!("Signing in would be refused: {email} is disabled."),
        Ok(user) if user.role == Role::Admin && !provider.allow_admins => {
            format!("Signing in would be refused: {email} is an administrator, and administrators may not use this provider.")
        }
        Ok(user) => {
            let role = if user.role == Role::Admin { "an administrator" } else { "a user" };
            format!("Signing in would sign {email} in, {role}.")
        }
        Err(DomainError::NotFound) if provider.auto_create_users => {
            format!("Signing in would create {email} as a user and sign them in.")
        }
        Err(DomainError::NotFound) => {
            format!(
                "Signing in would be refused: no user has the email {email}, and this provider does not create users."
            )
        }
        Err(e) => return Err(e),
    })
}

/// Why the test got no identity, in words.
fn failure(ended: &Completed) -> String {
    match ended {
        Completed::ProviderRefused { code } => format!("The provider refused ({code})."),
        Completed::UnknownFlow => {
            "The test's flow was not found: start the test again from the provider's page.".to_owned()
        }
        Completed::Failed(SignInError::Unavailable(reason)) => format!("The provider could not be reached: {reason}."),
        Completed::Failed(SignInError::Refused(reason)) => format!("The provider's answer failed a check: {reason}."),
        Completed::Failed(SignInError::UnverifiedEmail) => "The provider said the email is not verified.".to_owned(),
        Completed::Failed(SignInError::NoEmail) => "The provider gave no email.".to_owned(),
        Completed::Done(_) => "The test signed someone in, which it must not.".to_owned(),
    }
}
