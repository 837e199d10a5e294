//! The second step of a password sign-in (docs/web.md, "Two-factor sign-in"): after a
//! right password for a user with an authenticator, no session yet but a short-lived signed
//! pending-sign-in cookie, and `GET`/`POST /sign_in/code` asking for a code or a recovery
//! code; a user the server requires two-factor of who has none sets one up here. Wrong codes
//! count against the account's sign-in throttle, as wrong passwords do.

use askama::Template;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use ferrozone_domain::crypto::PendingSignIn;
use ferrozone_domain::model::User;
use ferrozone_domain::service::totp::{TotpEnrolment, PENDING_SIGN_IN_SECS};
use ferrozone_domain::DomainError;

use super::page_error::PageError;
use super::{html, redirect, with_retry_after};
use ferrozone_domain::service::throttle;
use ferrozone_http::cookies;
use ferrozone_http::error::ApiError;
use ferrozone_http::extract::{ClientAddr, FormFields};
use ferrozone_http::telemetry::sign_ins::{self, Method, Outcome};
pub(crate) use ferrozone_http::throttled::throttled;
use ferrozone_http::throttled::throttled_as;
use ferrozone_http::AppState;

/// The cookie of a sign-in waiting for its code: a token of
/// [`ferrozone_domain::crypto::PendingSignInKey`].
pub const PENDING: &str = "ferrozone_pending_sign_in";

const WRONG_CODE: &str = "That code is incorrect or was already used. Please try again.";
const THROTTLED: &str = "Too many wrong codes. Please wait a minute and try again.";
const EXPIRED: &str = "This form has expired. Please enter the code again.";

pub fn routes() -> Router<AppState> {
    Router::new().route("/sign_in/code", get(code_page).post(submit_code))
}

/// An authenticator being set up, as a page shows it.
pub struct SetupView {
    /// The QR code of the `otpauth://` URI, as a `data:` URL.
    pub qr: String,
    /// The base32 key, to type in.
    pub secret: String,
}

impl SetupView {
    pub fn new(enrolment: &TotpEnrolment) -> Result<Self, ApiError> {
        let png = ferrozone_http::qr::png(&enrolment.uri).map_err(|e| ApiError::Internal(e.into()))?;
        Ok(Self { qr: format!("data:image/png;base64,{}", STANDARD.encode(png)), secret: enrolment.secret.to_string() })
    }
}

/// The page asking for the code (or, with `setup`, setting an authenticator up).
#[derive(Template)]
#[template(path = "sign_in_code.html")]
struct CodePage<'a> {
    form_token: &'a str,
    setup: Option<SetupView>,
    error: Option<&'a str>,
}

/// The recovery codes of an authenticator set up while signing in, and the way on.
#[derive(Template)]
#[template(path = "sign_in_recovery_codes.html")]
struct RecoveryCodesPage<'a> {
    codes: Vec<String>,
    continue_to: &'a str,
}

/// The `Set-Cookie` that starts the second step for `user_id`, going to `return_to` after.
pub(super) fn pending_cookie(app: &AppState, user_id: uuid::Uuid, return_to: &str) -> axum::http::HeaderValue {
    let token = app.domain.pending_sign_in_token(user_id, return_to);
    cookies::set(PENDING, &token, "/", PENDING_SIGN_IN_SECS.unsigned_abs(), app.web.secure_cookies)
}

/// The pending sign-in of this browser and its user, if both are still good.
async fn pending(app: &AppState, headers: &HeaderMap) -> Result<Option<(PendingSignIn, User)>, DomainError> {
    let Some(token) = cookies::get_host(headers, PENDING, app.web.secure_cookies) else { return Ok(None) };
    let Some(pending) = app.domain.check_pending_sign_in(token) else { return Ok(None) };
    Ok(app.domain.pending_user(&pending).await?.map(|user| (pending, user)))
}

/// What the second step asks of `user`: a code (`None`), or setting up an authenticator;
/// nothing at all (`Err`) when neither applies any more (reset meanwhile).
async fn setup_of(app: &AppState, user: &User) -> Result<Result<Option<SetupView>, ()>, PageError> {
    let status = app.domain.totp_status(user).await?;
    if status.enrolled {
        return Ok(Ok(None));
    }
    if !status.required {
        return Ok(Err(()));
    }
    let enrolment = match app.domain.pending_totp(user).await? {
        Some(enrolment) => enrolment,
        None => app.domain.start_totp(user).await?,
    };
    Ok(Ok(Some(SetupView::new(&enrolment)?)))
}

async fn code_page(State(app): State<AppState>, headers: HeaderMap) -> Result<Response, PageError> {
    let Some((_, user)) = pending(&app, &headers).await? else { return Ok(redirect("/sign_in")) };
    match setup_of(&app, &user).await? {
        Ok(setup) => Ok(page(&app, StatusCode::OK, setup, None)),
        Err(()) => Ok(redirect("/sign_in")),
    }
}

async fn submit_code(
    State(app): State<AppState>,
    ClientAddr(address): ClientAddr,
    headers: HeaderMap,
    sent: Result<FormFields, ApiError>,
) -> Result<Response, PageError> {
    let FormFields(fields) = sent?;
    let field = |name: &str| fields.get(name).map(String::as_str).unwrap_or_default();
    let token_valid = super::form_token_is_valid(&app, &headers, field("csrf_token"));
    let Some((pending, user)) = pending(&app, &headers).await? else { return Ok(redirect("/sign_in")) };
    let Ok(setup) = setup_of(&app, &user).await? else { return Ok(redirect("/sign_in")) };
    if !token_valid {
        // Nothing checked: the form again, with a fresh token.
        return Ok(page(&app, StatusCode::FORBIDDEN, setup, Some(EXPIRED)));
    }
    let (code, return_to) = (field("code"), super::local_path(&pending.return_to));
    if setup.is_some() {
        let outcome = throttled(&app, &user, address, app.domain.sign_in_setting_up(user.clone(), code)).await?;
        count(Method::Totp, &outcome);
        return match outcome {
            Err(refused) => Ok(with_retry_after(
                page(&app, StatusCode::TOO_MANY_REQUESTS, setup, Some(THROTTLED)),
                refused.retry_after_secs(),
            )),
            Ok(None) => Ok(page(&app, StatusCode::UNAUTHORIZED, setup, Some(WRONG_CODE))),
            Ok(Some((codes, session))) => {
                let codes = codes.0.iter().map(|c| c.to_string()).collect();
                let mut response = html::response(StatusCode::OK, RecoveryCodesPage { codes, continue_to: return_to });
                let started = super::session_started(&app, &headers, &session, return_to).await?;
                for cookie in started.headers().get_all(header::SET_COOKIE) {
                    response.headers_mut().append(header::SET_COOKIE, cookie.clone());
                }
                Ok(finished(&app, response))
            }
        };
    }
    let method = Method::of_code(code);
    let outcome = throttled_as(&app, &user, address, method, app.domain.sign_in_with_code(user.clone(), code)).await?;
    count(method, &outcome);
    match outcome {
        Err(refused) => Ok(with_retry_after(
            page(&app, StatusCode::TOO_MANY_REQUESTS, None, Some(THROTTLED)),
            refused.retry_after_secs(),
        )),
        Ok(None) => Ok(page(&app, StatusCode::UNAUTHORIZED, None, Some(WRONG_CODE))),
        Ok(Some(session)) => Ok(finished(&app, super::session_started(&app, &headers, &session, return_to).await?)),
    }
}

/// Counts a second step's `outcome` in the sign-in metrics.
fn count<T>(method: Method, outcome: &Result<Option<T>, throttle::Refused>) {
    let outcome = match outcome {
        Err(_) => Outcome::Throttled,
        Ok(None) => Outcome::Refused,
        Ok(Some(_)) => Outcome::Success,
    };
    sign_ins::sign_in(method, outcome);
}

/// `response` with the pending sign-in's and the form's cookies cleared: the sign-in is done.
fn finished(app: &AppState, mut response: Response) -> Response {
    let secure = app.web.secure_cookies;
    response.headers_mut().append(header::SET_COOKIE, cookies::clear(PENDING, "/", secure));
    response.headers_mut().append(header::SET_COOKIE, cookies::clear(cookies::SIGN_IN_FORM, "/", secure));
    response
}

/// The code page with a fresh form token (also set as the form's cookie).
fn page(app: &AppState, status: StatusCode, setup: Option<SetupView>, error: Option<&str>) -> Response {
    let token = app.domain.sign_in_form_token(cookies::FORM_TOKEN_SECS);
    let mut response = html::response(status, CodePage { form_token: &token, setup, error });
    let cookie = cookies::set(cookies::SIGN_IN_FORM, &token, "/", cookies::FORM_TOKEN_SECS, app.web.secure_cookies);
    response.headers_mut().append(header::SET_COOKIE, cookie);
    response
}
