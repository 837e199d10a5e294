//! `GET /admin/gateways`: the gateways on other hosts (docs/design/gateways.md) with their
//! status, enrolment and last contact, a form that creates one (`POST /admin/gateways`, which
//! shows its enrolment token once) and Revoke (`POST /admin/gateways/{id}/revoke`).

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use ferrozone_domain::gateway::{Gateway, GatewayStatus};
use ferrozone_domain::service::gateways::NewGateway;
use ferrozone_domain::{DomainError, Timestamp};
use uuid::Uuid;

use crate::checked_form::CheckedForm;
use crate::format::{sentences, When};
use crate::page_error::PageError;
use crate::viewer::{AdminViewer, Nav, Section, Viewer};
use crate::{html, query_value, redirect};
use ferrozone_http::error::ApiError;
use ferrozone_http::AppState;

pub fn routes() -> Router<AppState> {
    Router::new().route("/admin/gateways", get(page).post(create)).route("/admin/gateways/{id}/revoke", post(revoke))
}

#[derive(askama::Template)]
#[template(path = "admin/gateways.html")]
struct GatewaysPage<'a> {
    nav: Nav<'a>,
    rows: Vec<Row>,
    name: String,
    name_error: String,
    notice: Option<&'static str>,
}

struct Row {
    id: String,
    name: String,
    status: GatewayStatus,
    /// An enrolled gateway's connection: `connected`, `disconnected` (it polled before, not
    /// within the last minute) or `never` (it has not polled yet).
    connection: &'static str,
    version: String,
    /// Enrolled, connected since, last seen, or until when its token works: whichever tells most.
    when: Option<(&'static str, When)>,
    /// Its data plane as it last said: backend and peers applied.
    data_plane: String,
    /// Peers over its backend's limit.
    refused: i64,
    reconcile_failed: bool,
}

#[derive(askama::Template)]
#[template(path = "admin/gateway_created.html")]
struct CreatedPage<'a> {
    nav: Nav<'a>,
    name: String,
    token: String,
    expires: When,
    external_url: &'a str,
}

async fn page(
    AdminViewer(viewer): AdminViewer,
    State(app): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Result<Response, PageError> {
    let notice = (query_value(raw.as_deref(), "revoked") == "1")
        .then_some("The gateway was revoked: its credential no longer works.");
    render(&app, &viewer, String::new(), String::new(), notice, StatusCode::OK).await
}

async fn render(
    app: &AppState,
    viewer: &Viewer,
    name: String,
    name_error: String,
    notice: Option<&'static str>,
    status: StatusCode,
) -> Result<Response, PageError> {
    let now = Timestamp::now();
    let rows = app.domain.list_gateways(viewer.principal()).await?.into_iter().map(|g| row(g, now)).collect();
    let page = GatewaysPage { nav: viewer.nav(Section::AdminGateways), rows, name, name_error, notice };
    Ok(html::response(status, page))
}

fn row(gateway: Gateway, now: Timestamp) -> Row {
    let status = gateway.status(now);
    let connection = match (gateway.connected(now), gateway.last_seen_at) {
        (true, _) => "connected",
        (false, Some(_)) => "disconnected",
        (false, None) => "never",
    };
    let when = match status {
        GatewayStatus::AwaitingEnrolment | GatewayStatus::EnrolmentExpired => {
            gateway.enrolment_expires_at.map(|at| ("Token expires", When::new(at, now)))
        }
        GatewayStatus::Enrolled => match (connection, gateway.connected_since) {
            ("connected", Some(since)) => Some(("Connected since", When::new(since, now))),
            _ => gateway
                .last_seen_at
                .map(|at| ("Last seen", When::new(at, now)))
                .or(gateway.enrolled_at.map(|at| ("Enrolled", When::new(at, now)))),
        },
        GatewayStatus::Revoked => gateway.revoked_at.map(|at| ("Revoked", When::new(at, now))),
    };
    let report = &gateway.report;
    let data_plane = match (&report.backend, report.peers_applied) {
        (Some(backend), Some(peers)) => format!("{peers} peers ({backend})"),
        (Some(backend), None) => backend.clone(),
        (None, _) => String::new(),
    };
    Row {
        id: gateway.id.to_string(),
        name: gateway.name,
        status,
        connection,
        version: gateway.version.unwrap_or_default(),
        when,
        data_plane,
        refused: report.peers_refused.unwrap_or(0),
        reconcile_failed: report.reconcile_failed.unwrap_or(false),
    }
}

async fn create(
    AdminViewer(viewer): AdminViewer,
    State(app): State<AppState>,
    CheckedForm(fields): CheckedForm,
) -> Result<Response, PageError> {
    let name = fields.get("name").cloned().unwrap_or_default();
    let input = NewGateway { name: Some(name.clone()), ..NewGateway::default() };
    match app.domain.create_gateway(viewer.principal(), &input).await {
        Ok(created) => {
            let page = CreatedPage {
                nav: viewer.nav(Section::AdminGateways),
                expires: When::new(
                    created.gateway.enrolment_expires_at.unwrap_or(created.gateway.inserted_at),
                    Timestamp::now(),
                ),
                name: created.gateway.name,
                token: created.enrolment_token.as_str().to_owned(),
                external_url: &app.web.external_url,
            };
            Ok(html::response(StatusCode::CREATED, page))
        }
        Err(DomainError::Invalid(errors)) => {
            let name_error = sentences("Name", errors.get("name").unwrap_or_default());
            render(&app, &viewer, name, name_error, None, StatusCode::UNPROCESSABLE_ENTITY).await
        }
        Err(e) => Err(e.into()),
    }
}

/// Revokes a gateway (one revoked already: nothing to do).
async fn revoke(
    AdminViewer(viewer): AdminViewer,
    State(app): State<AppState>,
    Path(id): Path<String>,
    _: CheckedForm,
) -> Result<Response, PageError> {
    let id = Uuid::parse_str(&id).map_err(|_| PageError::from(ApiError::NotFound))?;
    match app.domain.revoke_gateway(viewer.principal(), id).await {
        Ok(_) | Err(DomainError::NotFound) => Ok(redirect("/admin/gateways?revoked=1")),
        Err(e) => Err(e.into()),
    }
}
