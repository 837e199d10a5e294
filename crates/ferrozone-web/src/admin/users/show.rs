//! `GET /admin/users/{id}`: a user's facts, devices and sessions, and the actions on the
//! user, each a form posting to its own URL that comes back here with a notice
//! (POST-redirect-GET), or shows the domain's refusal on this page (422).

use std::collections::HashMap;

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use ferrozone_domain::egress::applying_to;
use ferrozone_domain::group::Group;
use ferrozone_domain::input::{Patch, UserChanges};
use ferrozone_domain::model::{Device, Session, User};
use ferrozone_domain::store::DeviceQuery;
use ferrozone_domain::{DomainError, Role, Timestamp};
use uuid::Uuid;
use zeroize::Zeroizing;

use super::super::super::html;
use super::super::super::page_error::PageError;
use super::super::super::redirect;
use super::super::super::viewer::{Nav, Section, Viewer};
use super::super::rules::RuleRow;
use super::new::FieldErrors;
use super::{last_sign_in, refusal, LastSignIn, Status};
use crate::checked_form::CheckedForm;
use crate::format;
use crate::viewer::AdminViewer;
use ferrozone_http::error::ApiError;
use ferrozone_http::AppState;

/// How many of a user's devices the page lists.
const DEVICES_SHOWN: u32 = 50;

#[derive(askama::Template)]
#[template(path = "admin/user.html")]
struct UserPage<'a> {
    nav: Nav<'a>,
    user: &'a User,
    admin: bool,
    own: bool,
    created: String,
    status: Status,
    last: Option<LastSignIn>,
    devices: Vec<DeviceRow>,
    device_count: u64,
    /// The rules that apply to the user's traffic, in lookup order (the first ones).
    rules: Vec<RuleRow>,
    rule_count: usize,
    /// The groups the user is a member of, by name.
    groups: Vec<GroupRow>,
    sessions: Vec<SessionRow>,
    two_factor: TwoFactor,
    notice: Option<&'static str>,
    errors: Vec<String>,
    password_errors: FieldErrors,
}

impl UserPage<'_> {
    /// Where a group comes from, in the groups pages' words.
    fn source(&self, source: &str) -> String {
        super::super::groups::source_label(source)
    }

    /// The user's email as a query value, for the links to the rules pages.
    fn email_in_query(&self) -> String {
        form_urlencoded::byte_serialize(self.user.email.as_bytes()).collect()
    }
}

/// A group the user is a member of, and where the membership comes from.
struct GroupRow {
    id: Uuid,
    name: String,
    source: String,
}

impl GroupRow {
    fn new(group: &Group) -> Self {
        GroupRow { id: group.id, name: group.name.clone(), source: group.source.clone() }
    }
}

struct DeviceRow {
    id: Uuid,
    name: String,
    addresses: String,
    online: bool,
    /// The owner is disabled: the device is off the VPN, whatever its last handshake.
    owner_disabled: bool,
    /// Paused: off the VPN until resumed.
    paused: bool,
    seen: Option<String>,
}

impl DeviceRow {
    fn new(device: Device, owner_disabled: bool, now: Timestamp) -> Self {
        let addresses = [device.ipv4.map(|a| a.to_string()), device.ipv6.map(|a| a.to_string())];
        let addresses: Vec<String> = addresses.into_iter().flatten().collect();
        Self {
            id: device.id,
            name: device.name,
            addresses: if addresses.is_empty() { "none".to_owned() } else { addresses.join(", ") },
            online: !owner_disabled && device.paused_at.is_none() && device.stats.is_online(now),
            owner_disabled,
            paused: device.paused_at.is_some(),
            seen: device.stats.latest_handshake.map(|at| format::ago(at, now)),
        }
    }
}

/// The user's two-factor sign-in, as the page says it.
struct TwoFactor {
    /// When the authenticator was confirmed, if there is one.
    since: Option<String>,
    recovery_codes_left: u32,
    required: bool,
}

struct SessionRow {
    created: String,
    expires: String,
}

impl SessionRow {
    fn new(session: &Session) -> Self {
        Self { created: format::date(session.inserted_at), expires: format::date(session.expires_at) }
    }
}

/// What the page says after an action, by the `done` the action's redirect carries.
fn notice(query: Option<&str>) -> Option<&'static str> {
    let done = form_urlencoded::parse(query.unwrap_or_default().as_bytes()).find(|(k, _)| k == "done")?.1;
    Some(match done.as_ref() {
        "created" => "The user was created.",
        "promoted" => "The user is now an admin.",
        "demoted" => "The user is no longer an admin.",
        "disabled" => "The user was disabled: their sessions ended and their devices left the VPN.",
        "enabled" => "The user was enabled: their devices are back on the VPN.",
        "password" => "The password was changed and the user’s sessions ended.",
        "signed_out" => "Every session of the user ended.",
        "two_factor_reset" => "The user's authenticator was removed: their next password sign-in asks for no code, or sets a new one up where the server requires it.",
        _ => return None,
    })
}

/// A path id that is not a UUID names no user: a 404 page.
pub(super) fn user_id(id: &str) -> Result<Uuid, PageError> {
    Uuid::parse_str(id).map_err(|_| ApiError::NotFound.into())
}

pub(super) async fn page(
    State(app): State<AppState>,
    AdminViewer(viewer): AdminViewer,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Response, PageError> {
    let shown = Shown { notice: notice(query.as_deref()), ..Shown::default() };
    render(&app, &viewer, user_id(&id)?, StatusCode::OK, shown).await
}

/// What the page shows besides the user: a notice, or a refusal.
#[derive(Default)]
struct Shown {
    notice: Option<&'static str>,
    errors: Vec<String>,
    password_errors: FieldErrors,
}

async fn render(
    app: &AppState,
    viewer: &Viewer,
    id: Uuid,
    status: StatusCode,
    shown: Shown,
) -> Result<Response, PageError> {
    let actor = viewer.principal();
    let (user, sessions) = app.domain.user_sessions(actor, &id.to_string()).await?;
    let belongings = app.domain.user_belongings(actor, id).await?;
    let totp = app.domain.totp_status_of(actor, id).await?;
    let two_factor = TwoFactor {
        since: totp.enrolled.then(|| totp.since.map(format::date).unwrap_or_default()),
        recovery_codes_left: totp.recovery_codes_left,
        required: totp.required,
    };
    let query = DeviceQuery { user_id: Some(id), after: None, limit: Some(DEVICES_SHOWN), presence: None };
    let devices = app.domain.list_devices(actor, query).await?;
    let groups = app.domain.user_groups(actor, id).await?;
    let (rules, rule_count) = applying_rules(app, viewer, &user, &groups).await?;
    let now = Timestamp::now();
    let page = UserPage {
        nav: viewer.nav(Section::AdminUsers),
        admin: user.role == Role::Admin,
        own: viewer.user().id == user.id,
        created: format::date(user.inserted_at),
        status: Status::of(&user),
        last: last_sign_in(&user, now),
        devices: devices.into_iter().map(|d| DeviceRow::new(d, user.disabled_at.is_some(), now)).collect(),
        device_count: belongings.devices,
        rules,
        rule_count,
        groups: groups.iter().map(GroupRow::new).collect(),
        sessions: sessions.iter().map(SessionRow::new).collect(),
        two_factor,
        notice: shown.notice,
        errors: shown.errors,
        password_errors: shown.password_errors,
        user: &user,
    };
    Ok(html::response(status, page))
}

/// Rules the user's page lists at most.
const RULES_SHOWN: usize = 50;

/// The first rules that apply to `user`'s traffic, in the order the gateway tries them
/// (the user's own, then its groups', then everyone's), and how many apply in all.
async fn applying_rules(
    app: &AppState,
    viewer: &Viewer,
    user: &User,
    groups: &[Group],
) -> Result<(Vec<RuleRow>, usize), PageError> {
    let rules = app.domain.list_rules(viewer.principal()).await?;
    let ids: Vec<Uuid> = groups.iter().map(|group| group.id).collect();
    let applying = applying_to(&rules, user.id, &ids);
    let users = HashMap::from([(user.id, user.clone())]);
    let names = groups.iter().map(|group| (group.id, group.name.clone())).collect();
    let rows = applying.iter().take(RULES_SHOWN).map(|rule| RuleRow::new(rule, &users, &names)).collect();
    Ok((rows, applying.len()))
}

/// `change` applied to the user; success goes back to the page with `done`, a refusal
/// shows on the page.
async fn act(
    app: &AppState,
    viewer: &Viewer,
    id: &str,
    change: UserChanges,
    done: &str,
) -> Result<Response, PageError> {
    let id = user_id(id)?;
    let result = app.domain.update_user(viewer.principal(), &id.to_string(), &change).await;
    outcome(app, viewer, id, result.map(drop), done).await
}

/// Where an action on the user leads: back to the page with `done`, or the page showing
/// the refusal (422).
async fn outcome(
    app: &AppState,
    viewer: &Viewer,
    id: Uuid,
    result: Result<(), DomainError>,
    done: &str,
) -> Result<Response, PageError> {
    match result {
        Ok(()) => Ok(redirect(&format!("/admin/users/{id}?done={done}"))),
        Err(DomainError::Invalid(errors)) if errors.has("password") || errors.has("password_confirmation") => {
            let shown = Shown { password_errors: FieldErrors::from(&errors), ..Shown::default() };
            render(app, viewer, id, StatusCode::UNPROCESSABLE_ENTITY, shown).await
        }
        Err(e) => {
            let errors = refusal(e, &["role", "email"])?;
            render(app, viewer, id, StatusCode::UNPROCESSABLE_ENTITY, Shown { errors, ..Shown::default() }).await
        }
    }
}

/// Disables or enables the user through the use case the API and the command line share.
async fn set_disabled(app: &AppState, viewer: &Viewer, id: &str, disabled: bool) -> Result<Response, PageError> {
    let id = user_id(id)?;
    let result = app.domain.set_user_disabled(viewer.principal(), &id.to_string(), disabled).await;
    outcome(app, viewer, id, result.map(drop), if disabled { "disabled" } else { "enabled" }).await
}

/// `POST /admin/users/{id}/role`: `role` is `admin` or `unprivileged`.
pub(super) async fn set_role(
    State(app): State<AppState>,
    AdminViewer(viewer): AdminViewer,
    Path(id): Path<String>,
    CheckedForm(fields): CheckedForm,
) -> Result<Response, PageError> {
    let role = match fields.get("role").map(String::as_str) {
        Some("admin") => Role::Admin,
        Some("unprivileged") => Role::Unprivileged,
        _ => return Err(ApiError::BadRequest("`role` must be admin or unprivileged".into()).into()),
    };
    let done = if role == Role::Admin { "promoted" } else { "demoted" };
    let change = UserChanges { role: Patch::Value(role), ..UserChanges::default() };
    act(&app, &viewer, &id, change, done).await
}

/// `POST /admin/users/{id}/disable`: the user's sessions end, its devices leave the peers.
pub(super) async fn disable(
    State(app): State<AppState>,
    AdminViewer(viewer): AdminViewer,
    Path(id): Path<String>,
    _: CheckedForm,
) -> Result<Response, PageError> {
    set_disabled(&app, &viewer, &id, true).await
}

/// `POST /admin/users/{id}/enable`: its devices return to the peers.
pub(super) async fn enable(
    State(app): State<AppState>,
    AdminViewer(viewer): AdminViewer,
    Path(id): Path<String>,
    _: CheckedForm,
) -> Result<Response, PageError> {
    set_disabled(&app, &viewer, &id, false).await
}

/// `POST /admin/users/{id}/password`: a new password (and its confirmation); the store ends
/// the user's sessions with it. An empty one is refused here: the API's update reads an
/// empty password as "keep it".
pub(super) async fn set_password(
    State(app): State<AppState>,
    AdminViewer(viewer): AdminViewer,
    Path(id): Path<String>,
    CheckedForm(fields): CheckedForm,
) -> Result<Response, PageError> {
    let secret = |name: &str| fields.get(name).map(|v| Zeroizing::new(v.clone()));
    let password = secret("password").filter(|p| !p.is_empty());
    if password.is_none() {
        let errors = ferrozone_domain::Errors::one("password", "can't be blank");
        let shown = Shown { password_errors: FieldErrors::from(&errors), ..Shown::default() };
        return render(&app, &viewer, user_id(&id)?, StatusCode::UNPROCESSABLE_ENTITY, shown).await;
    }
    let change =
        UserChanges { password, password_confirmation: secret("password_confirmation"), ..UserChanges::default() };
    act(&app, &viewer, &id, change, "password").await
}

/// `POST /admin/users/{id}/sign_out`: ends every session of the user.
pub(super) async fn sign_out(
    State(app): State<AppState>,
    AdminViewer(viewer): AdminViewer,
    Path(id): Path<String>,
    _: CheckedForm,
) -> Result<Response, PageError> {
    let id = user_id(&id)?;
    app.domain.sign_out_user(viewer.principal(), &id.to_string()).await?;
    Ok(redirect(&format!("/admin/users/{id}?done=signed_out")))
}

/// `POST /admin/users/{id}/two_factor/reset`: removes the user's authenticator (they lost
/// it); their sessions go on.
pub(super) async fn reset_two_factor(
    State(app): State<AppState>,
    AdminViewer(viewer): AdminViewer,
    Path(id): Path<String>,
    _: CheckedForm,
) -> Result<Response, PageError> {
    let id = user_id(&id)?;
    app.domain.reset_totp(viewer.principal(), id).await?;
    Ok(redirect(&format!("/admin/users/{id}?done=two_factor_reset")))
}
