//! `GET /admin/settings`: what this server runs with: its version, the data plane's
//! health (as `/healthz` reports it), the start-up settings each with its source
//! ([`ferrozone_http::ServerReport`], secrets left out), the identity providers in effect (no
//! secrets) and the runtime configuration of `/v0/configuration`. Read-only: the runtime
//! configuration is changed through `PATCH /v0/configuration`, start-up settings by
//! restarting with other values.

use std::time::SystemTime;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use ferrozone_domain::configuration::{Source, KEYS};
use ferrozone_domain::Timestamp;

use super::hints::{hints, Hint};
use crate::format::When;
use crate::html;
use crate::viewer::{AdminViewer, Nav, Section};
use ferrozone_http::health::{DataPlaneHealth, RoutingHealth};
use ferrozone_http::report::ReportedSetting;
use ferrozone_http::AppState;

pub fn routes() -> Router<AppState> {
    Router::new().route("/admin/settings", get(page))
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
    runtime: Vec<RuntimeValue>,
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

/// A key of `/v0/configuration` with its effective value and whether a PATCH may change it.
struct RuntimeValue {
    key: &'static str,
    value: String,
    /// The variable or flag that fixes it, if one does.
    fixed_by: Option<String>,
}

async fn page(AdminViewer(viewer): AdminViewer, State(app): State<AppState>) -> Response {
    let report = &app.report;
    let page = SettingsPage {
        nav: viewer.nav(Section::AdminSettings),
        hints: hints(&app),
        version: &report.version,
        commit: report.commit.as_deref(),
        external_url: &app.web.external_url,
        data_plane: data_plane(&app.data_plane.health()),
        groups: groups(&report.settings),
        providers: providers(&app),
        runtime: runtime(&app),
    };
    html::response(StatusCode::OK, page)
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

/// The runtime configuration's effective values, in the API's key order.
fn runtime(app: &AppState) -> Vec<RuntimeValue> {
    let values = serde_json::to_value(&*app.domain.current_values()).unwrap_or_default();
    let fixed = &app.domain.settings().fixed;
    KEYS.iter()
        .map(|key| RuntimeValue {
            key,
            value: shown(&values[*key]),
            fixed_by: fixed.source(key).map(|source| match source {
                Source::Variable(name) | Source::Flag(name) => name.clone(),
            }),
        })
        .collect()
}

/// A JSON value as plain text: lists comma-separated, `null` as "none".
fn shown(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Null => "none".to_owned(),
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(items) => items.iter().map(shown).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}
