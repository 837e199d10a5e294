//! `GET /admin/settings`: what this server runs with: its version, the data plane's
//! health (as `/healthz` reports it), the start-up settings each with its source
//! ([`ferrozone_http::ServerReport`], secrets left out), the identity providers in effect (no
//! secrets) and the runtime configuration of `/v0/configuration` as a form ([`runtime`]),
//! saved by `POST /admin/settings` as `PATCH /v0/configuration` saves it. Start-up settings
//! change by restarting with other values.

mod runtime;

use std::time::SystemTime;

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use ferrozone_domain::{DomainError, Timestamp};

use super::hints::{hints, Hint};
use crate::checked_form::CheckedForm;
use crate::format::When;
use crate::html;
use crate::page_error::PageError;
use crate::viewer::{AdminViewer, Nav, Section, Viewer};
use crate::{query_value, redirect};
use ferrozone_http::health::{DataPlaneHealth, RoutingHealth};
use ferrozone_http::report::ReportedSetting;
use ferrozone_http::AppState;
use runtime::Field;

pub fn routes() -> Router<AppState> {
    Router::new().route("/admin/settings", get(page).post(save))
}

#[derive(askama::Template)]
#[template(path = "admin_settings.html")]
struct SettingsPage<'a> {
    nav: Nav<'a>,
    hints: Vec<Hint>,
    version: &'a str,
    commit: Option<&'a str>,
    external_url: &'a str,
    data_plane: DataPlane,
    groups: Vec<Group<'a>>,
    providers: Vec<Provider>,
    runtime: Vec<Field>,
    /// Set by the redirect after a save.
    saved: bool,
}

/// The data plane in words.
struct DataPlane {
    backend: &'static str,
    /// `Healthy`, `Degraded` (a pass failed) or `Not running` (no backend).
    state: &'static str,
    healthy: bool,
    last_reconcile: Option<When>,
    routing: String,
}

/// Start-up settings under one heading.
struct Group<'a> {
    title: &'a str,
    settings: Vec<&'a ReportedSetting>,
}

struct Provider {
    kind: &'static str,
    id: String,
    label: String,
    /// Where its sign-in is discovered (OpenID Connect), if shown.
    issuer: Option<String>,
}

async fn page(AdminViewer(viewer): AdminViewer, State(app): State<AppState>, RawQuery(raw): RawQuery) -> Response {
    let runtime = runtime::current(&app.domain.current_values(), app.domain.settings());
    let saved = query_value(raw.as_deref(), "saved") == "1";
    render(&app, &viewer, runtime, saved, StatusCode::OK)
}

/// Saves the keys the form changed; back to the page saying so, or the page again (422)
/// with the messages at their fields and the values as sent.
async fn save(
    State(app): State<AppState>,
    AdminViewer(viewer): AdminViewer,
    CheckedForm(fields): CheckedForm,
) -> Result<Response, PageError> {
    let mut shown = runtime::current(&app.domain.current_values(), app.domain.settings());
    let (changes, mut errors) = runtime::changes(&mut shown, &fields);
    if errors.is_empty() {
        let web = app.web.clone();
        let check = move |providers: &ferrozone_domain::providers::Providers| web.check_providers(providers);
        match app.domain.update_configuration(viewer.principal(), &changes, &check).await {
            Ok(_) => return Ok(redirect("/admin/settings?saved=1#runtime-heading")),
            Err(DomainError::Invalid(invalid)) => errors = invalid,
            Err(e) => return Err(e.into()),
        }
    }
    for field in &mut shown {
        if let Some(messages) = errors.get(field.key) {
            field.error = crate::format::sentences(field.label, messages);
        }
    }
    Ok(render(&app, &viewer, shown, false, StatusCode::UNPROCESSABLE_ENTITY))
}

fn render(app: &AppState, viewer: &Viewer, runtime: Vec<Field>, saved: bool, status: StatusCode) -> Response {
    let report = &app.report;
    let page = SettingsPage {
        nav: viewer.nav(Section::AdminSettings),
        hints: hints(app),
        version: &report.version,
        commit: report.commit.as_deref(),
        external_url: &app.web.external_url,
        data_plane: data_plane(&app.data_plane.health()),
        groups: groups(&report.settings),
        providers: providers(app),
        runtime,
        saved,
    };
    html::response(status, page)
}

fn data_plane(health: &DataPlaneHealth) -> DataPlane {
    let now = Timestamp::now();
    let at = |time: SystemTime| {
        let micros = time.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_micros());
        When::new(Timestamp::from_micros(i64::try_from(micros).unwrap_or(i64::MAX)), now)
    };
    let (routing, routing_failed) = match &health.routing {
        RoutingHealth::NotApplied { reason } => (format!("Not applied: {reason}."), false),
        RoutingHealth::Applied { rules, default_action, last_apply, last_pass_failed } => {
            let when = last_apply.map(|t| format!(", last written {}", at(t).relative)).unwrap_or_default();
            let failed = if *last_pass_failed { "; the last pass FAILED" } else { "" };
            (
                format!("Applied: {rules} egress rules, unmatched traffic {default_action}{when}{failed}."),
                *last_pass_failed,
            )
        }
    };
    let running = health.backend != "none";
    let healthy = running && !health.last_reconcile_failed && !routing_failed;
    DataPlane {
        backend: health.backend,
        state: if !running {
            "Not running"
        } else if healthy {
            "Healthy"
        } else {
            "Degraded"
        },
        healthy,
        last_reconcile: health.last_reconcile.map(at),
        routing,
    }
}

/// The report's settings under their headings, in the report's order.
fn groups(settings: &[ReportedSetting]) -> Vec<Group<'_>> {
    let mut groups: Vec<Group<'_>> = Vec::new();
    for setting in settings {
        match groups.last_mut() {
            Some(group) if group.title == setting.group => group.settings.push(setting),
            _ => groups.push(Group { title: &setting.group, settings: vec![setting] }),
        }
    }
    groups
}

/// The identity providers in effect: ids, labels and discovery URLs, never a secret.
fn providers(app: &AppState) -> Vec<Provider> {
    let sign_in = app.web.sign_in(&app.domain);
    let oidc = sign_in.providers.oidc.iter().map(|p| Provider {
        kind: "OpenID Connect",
        id: p.id.clone(),
        label: p.label.clone(),
        issuer: Some(p.discovery_document_uri.clone()),
    });
    let saml = sign_in.providers.saml.iter().map(|p| Provider {
        kind: "SAML",
        id: p.id.clone(),
        label: p.label.clone(),
        issuer: None,
    });
    oidc.chain(saml).collect()
}
