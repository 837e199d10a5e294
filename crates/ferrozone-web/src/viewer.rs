//! Who is looking at a page: the signed-in user behind the session cookie
//! ([`Viewer`]), or an administrator ([`AdminViewer`]). Pages that need one take it as an
//! extractor; a browser without a session is sent to the sign-in page and back, an
//! unprivileged user opening a console page gets a 403 page. Forms posted by a viewer carry
//! the session's CSRF token ([`super::checked_form::CheckedForm`]).

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use ferrozone_domain::model::User;
use ferrozone_domain::service::sessions::ActiveSession;
use ferrozone_domain::service::Principal;

use super::page_error::PageError;
use super::{html, redirect};
use ferrozone_http::cookies;
use ferrozone_http::AppState;

/// A signed-in user, with the session's CSRF token.
pub struct Viewer {
    pub session: ActiveSession,
}

/// The CSRF token of the session that authenticated this request's [`Viewer`], kept in the
/// request's extensions so that the form it posted is checked without authenticating again.
#[derive(Clone)]
pub struct SessionCsrf(pub String);

/// A signed-in administrator.
#[allow(dead_code)]
pub struct AdminViewer(pub Viewer);

/// The sections of the navigation, to mark the one a page belongs to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Section {
    Devices,
    Account,
    AdminUsers,
    AdminDevices,
    AdminGateways,
    AdminGroups,
    AdminRules,
    AdminProviders,
    AdminSettings,
    AdminTokens,
    AdminAudit,
}

/// What the navigation of a signed-in page shows (templates/nav.html): the sections (the
/// console's only for admins), the current one, who is signed in and a sign-out button.
pub struct Nav<'a> {
    pub email: &'a str,
    pub admin: bool,
    pub current: Section,
    pub csrf_token: &'a str,
}

impl Nav<'_> {
    /// `aria-current="page"` for the link of `section` when it is the current one.
    pub fn aria_current(&self, section: Section) -> &'static str {
        if section == self.current {
            "page"
        } else {
            "false"
        }
    }
}

// Used by the portal's and the console's pages.
#[allow(dead_code)]
impl Viewer {
    pub fn user(&self) -> &User {
        &self.session.user
    }

    pub fn principal(&self) -> &Principal {
        &self.session.principal
    }

    pub fn is_admin(&self) -> bool {
        self.session.principal.is_admin()
    }

    pub fn csrf_token(&self) -> &str {
        &self.session.csrf_token
    }

    /// The navigation for a page of `current`.
    pub fn nav(&self, current: Section) -> Nav<'_> {
        Nav { email: &self.session.user.email, admin: self.is_admin(), current, csrf_token: self.csrf_token() }
    }
}

/// Why a page has no viewer: no valid session (to the sign-in page, coming back to the
/// page afterwards), not an admin (a 403 page), or the database failed.
pub enum NoViewer {
    SignIn(String),
    NotAdmin,
    Failed(PageError),
}

impl IntoResponse for NoViewer {
    fn into_response(self) -> Response {
        match self {
            NoViewer::SignIn(return_to) if return_to == "/" => redirect("/sign_in"),
            NoViewer::SignIn(return_to) => {
                let query =
                    form_urlencoded::Serializer::new(String::new()).append_pair("return_to", &return_to).finish();
                redirect(&format!("/sign_in?{query}"))
            }
            NoViewer::NotAdmin => {
                let page = html::message("Administrators only", "This page is for administrators of this server.");
                html::response(StatusCode::FORBIDDEN, page)
            }
            NoViewer::Failed(e) => e.into_response(),
        }
    }
}

impl FromRequestParts<AppState> for Viewer {
    type Rejection = NoViewer;

    async fn from_request_parts(parts: &mut Parts, app: &AppState) -> Result<Self, NoViewer> {
        // Come back here after signing in, but only to a page one can GET.
        let here = if parts.method == axum::http::Method::GET {
            parts.uri.path_and_query().map(|p| p.as_str()).unwrap_or("/").to_owned()
        } else {
            "/".to_owned()
        };
        let Some(secret) = cookies::get_host(&parts.headers, cookies::SESSION, app.web.secure_cookies) else {
            return Err(NoViewer::SignIn(here));
        };
        match app.domain.authenticate_session(secret).await {
            Ok(Ok(session)) => {
                parts.extensions.insert(SessionCsrf(session.csrf_token.clone()));
                ferrozone_http::telemetry::record_actor(&session.principal, Some(session.id));
                Ok(Viewer { session })
            }
            Ok(Err(refusal)) => {
                ferrozone_http::telemetry::sign_ins::token_refused(
                    ferrozone_http::telemetry::sign_ins::TokenKind::Session,
                    &refusal,
                );
                Err(NoViewer::SignIn(here))
            }
            Err(e) => Err(NoViewer::Failed(e.into())),
        }
    }
}

impl FromRequestParts<AppState> for AdminViewer {
    type Rejection = NoViewer;

    async fn from_request_parts(parts: &mut Parts, app: &AppState) -> Result<Self, NoViewer> {
        let viewer = Viewer::from_request_parts(parts, app).await?;
        if viewer.is_admin() {
            Ok(AdminViewer(viewer))
        } else {
            Err(NoViewer::NotAdmin)
        }
    }
}
