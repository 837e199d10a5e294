//! Test sign-in (docs/web.md, "Console: identity providers"): an admin runs a provider's
//! flow in the browser, and the flow's end shows what the provider proved and what signing
//! in would do, without signing anyone in. Started by `GET
//! /admin/providers/{oidc|saml}/{id}/test` (a link, as the sign-in page's provider links: a
//! form posting to this server may not be redirected to the provider, whose origin the
//! page's `form-action` does not name); the flow is marked by its `return_to`
//! ([`crate::oidc::TEST_SIGN_IN`]). Starting one from another site only shows the admin a
//! test's result.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use ferrozone_domain::{DomainError, Role};
use ferrozone_http::extract::ClientAddr;
use ferrozone_http::AppState;
use ferrozone_oidc::{Completed, Identity, Provider, SignInError};
use ferrozone_saml::signin::SamlProvider;

use crate::html;
use crate::oidc::{begin, TEST_SIGN_IN};
use crate::page_error::PageError;
use crate::viewer::AdminViewer;

/// `GET /admin/providers/oidc/{id}/test`: a flow that ends on the test's page.
pub(super) async fn start(
    State(app): State<AppState>,
    AdminViewer(_admin): AdminViewer,
    Path(id): Path<String>,
    ClientAddr(client): ClientAddr,
) -> Result<Response, PageError> {
    begin(&app, &id, TEST_SIGN_IN, client).await
}

/// `GET /admin/providers/saml/{id}/test`: the same for a SAML IdP.
pub(super) async fn start_saml(
    State(app): State<AppState>,
    AdminViewer(_admin): AdminViewer,
    Path(id): Path<String>,
    ClientAddr(client): ClientAddr,
) -> Result<Response, PageError> {
    crate::saml::start_test(&app, &id, client).await
}

#[derive(askama::Template)]
#[template(path = "admin/provider_test.html")]
struct TestPage<'a> {
    label: &'a str,
    id: &'a str,
    /// `oidc` or `saml`: the provider's page is under it.
    kind: &'a str,
    /// What the provider proved, when it did: (what, value).
    claims: Vec<(&'static str, String)>,
    /// What signing in would do, or why the test got no identity.
    outcome: String,
    passed: bool,
}

/// What a test proved: the email and the claims to show; or why it proved nothing.
type Proved = Result<(String, Vec<(&'static str, String)>), String>;

/// Which provider was tested, and its policy.
struct Tested<'a> {
    kind: &'a str,
    id: &'a str,
    label: &'a str,
    auto_create_users: bool,
    allow_admins: bool,
}

/// The test's page for what an OpenID Connect callback came to.
pub(crate) async fn page(
    app: &AppState,
    provider: &Provider,
    tested: Result<Identity, Completed>,
) -> Result<Response, PageError> {
    let sign_in = app.web.sign_in(&app.domain);
    let label = sign_in.providers.oidc.iter().find(|p| p.id == provider.id).map_or(provider.id.as_str(), |p| &p.label);
    let who = Tested {
        kind: "oidc",
        id: &provider.id,
        label,
        auto_create_users: provider.auto_create_users,
        allow_admins: provider.allow_admins,
    };
    let proved = tested.map(|identity| {
        let refresh = if identity.refresh_token.is_some() { "yes" } else { "no" };
        let claims = vec![
            ("Email", identity.email.clone()),
            ("Subject (sub)", identity.subject),
            ("Refresh token issued", refresh.to_owned()),
        ];
        (identity.email, claims)
    });
    render(app, &who, proved.map_err(|ended| failure(&ended))).await
}

/// The test's page for what a SAML response came to: the verified email, or why the
/// response was refused.
pub(crate) async fn saml_page(
    app: &AppState,
    provider: &SamlProvider,
    tested: Result<String, String>,
) -> Result<Response, PageError> {
    let config = provider.config();
    let who = Tested {
        kind: "saml",
        id: &config.id,
        label: &config.label,
        auto_create_users: config.auto_create_users,
        allow_admins: config.allow_admins,
    };
    let proved = tested.map(|email| (email.clone(), vec![("Email (NameID or email attribute)", email)]));
    let refused = |reason: String| format!("The identity provider's answer failed verification: {reason}.");
    render(app, &who, proved.map_err(refused)).await
}

/// The page: the claims and what signing in would do (200), or why there is no identity
/// (422).
async fn render(app: &AppState, who: &Tested<'_>, proved: Proved) -> Result<Response, PageError> {
    let (claims, outcome, passed) = match proved {
        Ok((email, claims)) => (claims, would(app, who, &email).await?, true),
        Err(why) => (Vec::new(), why, false),
    };
    let page = TestPage { label: who.label, id: who.id, kind: who.kind, claims, outcome, passed };
    let status = if passed { StatusCode::OK } else { StatusCode::UNPROCESSABLE_ENTITY };
    Ok(html::response(status, page))
}

/// What a sign-in with `email` through the provider would do now.
async fn would(app: &AppState, who: &Tested<'_>, email: &str) -> Result<String, DomainError> {
    Ok(match app.domain.find_user(email).await {
        Ok(user) if user.disabled_at.is_some() => format!("Signing in would be refused: {email} is disabled."),
        Ok(user) if user.role == Role::Admin && !who.allow_admins => {
            format!("Signing in would be refused: {email} is an administrator, and administrators may not use this provider.")
        }
        Ok(user) => {
            let role = if user.role == Role::Admin { "an administrator" } else { "a user" };
            format!("Signing in would sign {email} in, {role}.")
        }
        Err(DomainError::NotFound) if who.auto_create_users => {
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

/// Why an OpenID Connect test got no identity, in words.
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
