//! `/account/two_factor`: the signed-in user's two-factor sign-in (docs/web.md, "Two-factor
//! sign-in"). Off: set an authenticator up (its QR code and key shown once, confirmed by a
//! code, then the recovery codes shown once). On: its status, new recovery codes and turning
//! it off, each proven by a current code (turning off also by the password). Codes sent here
//! count against the account's sign-in throttle.

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use ferrozone_domain::service::totp::{RecoveryCodes, TotpStatus, REQUIRED};
use ferrozone_domain::DomainError;
use serde::Deserialize;

use crate::checked_form::CheckedForm;
use crate::page_error::PageError;
use crate::sign_in_code::{throttled, SetupView};
use crate::viewer::{Nav, Section, Viewer};
use crate::{html, redirect, with_retry_after};
use ferrozone_http::extract::ClientAddr;
use ferrozone_http::AppState;

const PATH: &str = "/account/two_factor";
const WRONG_CODE: &str = "That code is incorrect or was already used. Please try again.";
const WRONG_PROOF: &str = "Neither the code nor the password is right. Nothing was changed.";
const THROTTLED: &str = "Too many wrong codes. Please wait a minute and try again.";

pub fn routes() -> Router<AppState> {
    Router::new()
        .route(PATH, get(show))
        .route("/account/two_factor/start", post(start))
        .route("/account/two_factor/confirm", post(confirm))
        .route("/account/two_factor/recovery_codes", post(new_codes))
        .route("/account/two_factor/turn_off", post(turn_off))
}

/// What a form proves a change with: an authenticator's (or a recovery) code, and to turn
/// two-factor sign-in off the password instead; a field not sent is blank.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Proof {
    code: String,
    password: String,
}

/// The status as the page shows it.
pub struct StatusView {
    pub enrolled: bool,
    pub since: String,
    pub recovery_codes_left: u32,
    pub required: bool,
}

impl From<TotpStatus> for StatusView {
    fn from(s: TotpStatus) -> Self {
        let since = s.since.map(|t| t.to_string().chars().take(10).collect()).unwrap_or_default();
        Self { enrolled: s.enrolled, since, recovery_codes_left: s.recovery_codes_left, required: s.required }
    }
}

#[derive(Template)]
#[template(path = "two_factor.html")]
struct TwoFactorPage<'a> {
    nav: Nav<'a>,
    status: StatusView,
    setup: Option<SetupView>,
    codes: Option<Vec<String>>,
    error: Option<&'a str>,
}

/// What the page shows besides the status.
#[derive(Default)]
struct Shown<'a> {
    setup: Option<SetupView>,
    codes: Option<RecoveryCodes>,
    error: Option<&'a str>,
}

async fn render(app: &AppState, viewer: &Viewer, status: StatusCode, shown: Shown<'_>) -> Result<Response, PageError> {
    let totp = app.domain.totp_status(viewer.user()).await?;
    let codes = shown.codes.map(|c| c.0.iter().map(|code| code.to_string()).collect());
    let page = TwoFactorPage {
        nav: viewer.nav(Section::Account),
        status: totp.into(),
        setup: shown.setup,
        codes,
        error: shown.error,
    };
    Ok(html::response(status, page))
}

async fn show(State(app): State<AppState>, viewer: Viewer) -> Result<Response, PageError> {
    render(&app, &viewer, StatusCode::OK, Shown::default()).await
}

/// Makes a new secret and shows it (the one time it is shown, with its QR code).
async fn start(State(app): State<AppState>, viewer: Viewer, _: CheckedForm) -> Result<Response, PageError> {
    match app.domain.start_totp(viewer.user()).await {
        Ok(enrolment) => {
            let shown = Shown { setup: Some(SetupView::new(&enrolment)?), ..Shown::default() };
            render(&app, &viewer, StatusCode::OK, shown).await
        }
        // Set up already (in another tab, say): show it.
        Err(DomainError::Invalid(_)) => Ok(redirect(PATH)),
        Err(e) => Err(e.into()),
    }
}

async fn confirm(
    State(app): State<AppState>,
    ClientAddr(address): ClientAddr,
    viewer: Viewer,
    CheckedForm(Proof { code, .. }): CheckedForm<Proof>,
) -> Result<Response, PageError> {
    let user = viewer.user();
    let (status, error, retry_after) =
        match throttled(&app, user, address, app.domain.confirm_totp(user.id, &code)).await? {
            Ok(Some(codes)) => {
                return render(&app, &viewer, StatusCode::OK, Shown { codes: Some(codes), ..Shown::default() }).await;
            }
            Ok(None) => (StatusCode::UNPROCESSABLE_ENTITY, WRONG_CODE, None),
            Err(refused) => (StatusCode::TOO_MANY_REQUESTS, THROTTLED, Some(refused.retry_after_secs())),
        };
    // The set-up again, to try another code; none when it is gone (done in another tab).
    let setup = app.domain.pending_totp(user).await?.map(|e| SetupView::new(&e)).transpose()?;
    let page = render(&app, &viewer, status, Shown { setup, error: Some(error), ..Shown::default() }).await?;
    Ok(match retry_after {
        Some(secs) => with_retry_after(page, secs),
        None => page,
    })
}

async fn new_codes(
    State(app): State<AppState>,
    ClientAddr(address): ClientAddr,
    viewer: Viewer,
    CheckedForm(Proof { code, .. }): CheckedForm<Proof>,
) -> Result<Response, PageError> {
    let user = viewer.user();
    match throttled(&app, user, address, app.domain.new_recovery_codes(user.id, &code)).await? {
        Ok(Some(codes)) => {
            render(&app, &viewer, StatusCode::OK, Shown { codes: Some(codes), ..Shown::default() }).await
        }
        Ok(None) => render(&app, &viewer, StatusCode::UNPROCESSABLE_ENTITY, error(WRONG_CODE)).await,
        Err(refused) => {
            let page = render(&app, &viewer, StatusCode::TOO_MANY_REQUESTS, error(THROTTLED)).await?;
            Ok(with_retry_after(page, refused.retry_after_secs()))
        }
    }
}

async fn turn_off(
    State(app): State<AppState>,
    ClientAddr(address): ClientAddr,
    viewer: Viewer,
    CheckedForm(Proof { code, password }): CheckedForm<Proof>,
) -> Result<Response, PageError> {
    let user = viewer.user();
    let proof = async { Ok(app.domain.turn_off_totp(user, given(&code), given(&password)).await?.then_some(())) };
    match throttled(&app, user, address, proof).await {
        Ok(Ok(Some(()))) => Ok(redirect(PATH)),
        Ok(Ok(None)) => render(&app, &viewer, StatusCode::UNPROCESSABLE_ENTITY, error(WRONG_PROOF)).await,
        Ok(Err(refused)) => {
            let page = render(&app, &viewer, StatusCode::TOO_MANY_REQUESTS, error(THROTTLED)).await?;
            Ok(with_retry_after(page, refused.retry_after_secs()))
        }
        Err(DomainError::Disallowed(_)) => render(&app, &viewer, StatusCode::FORBIDDEN, error(REQUIRED)).await,
        Err(e) => Err(e.into()),
    }
}

/// A field of a [`Proof`] as the domain takes it: a blank one was not given.
fn given(value: &str) -> Option<&str> {
    Some(value).filter(|v| !v.is_empty())
}

fn error(message: &str) -> Shown<'_> {
    Shown { error: Some(message), ..Shown::default() }
}
