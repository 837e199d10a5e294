//! The console's identity providers (docs/web.md, "Identity providers"): the OpenID Connect
//! and SAML providers in effect with what to paste into each (here), and adding, editing
//! and removing one (`form`). A change replaces the provider list through the use case of
//! `PATCH /v0/configuration`, with its parser and checks; a list the environment sets is
//! shown read-only.

mod form;

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use ferrozone_domain::configuration::provider_lists::{OIDC_KEY, SAML_KEY};
use serde_json::Value;

use crate::viewer::{AdminViewer, Nav, Section};
use crate::{html, query_value};
use ferrozone_http::AppState;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/admin/providers", get(list))
        .route("/admin/providers/{kind}/new", get(form::new).post(form::create))
        .route("/admin/providers/{kind}/{id}", get(form::edit).post(form::update))
        .route("/admin/providers/{kind}/{id}/delete", post(form::delete))
        .route("/admin/providers/oidc/{id}/test", get(super::provider_test::start))
        .route("/admin/providers/saml/{id}/test", get(super::provider_test::start_saml))
}

/// OpenID Connect or SAML, as the paths name them.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Oidc,
    Saml,
}

impl Kind {
    pub fn parse(path: &str) -> Option<Self> {
        match path {
            "oidc" => Some(Kind::Oidc),
            "saml" => Some(Kind::Saml),
            _ => None,
        }
    }

    pub fn path(self) -> &'static str {
        match self {
            Kind::Oidc => "oidc",
            Kind::Saml => "saml",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Oidc => "OpenID Connect",
            Kind::Saml => "SAML",
        }
    }

    /// The configuration key of the kind's list.
    pub fn key(self) -> &'static str {
        match self {
            Kind::Oidc => OIDC_KEY,
            Kind::Saml => SAML_KEY,
        }
    }

    /// The variable or flag that sets the kind's list, if one does.
    pub fn fixed_by(self, app: &AppState) -> Option<String> {
        app.domain.settings().fixed.variable(self.key()).map(str::to_owned)
    }
}

/// What the provider must be told about this server, as (what, value) pairs.
pub(super) fn to_paste(app: &AppState, kind: Kind, entry: &Value) -> Vec<(&'static str, String)> {
    let id = entry["id"].as_str().unwrap_or_default();
    let external = app.web.external_url.trim_end_matches('/');
    match kind {
        Kind::Oidc => {
            let redirect = entry["redirect_uri"]
                .as_str()
                .map_or_else(|| format!("{external}/auth/oidc/{id}/callback/"), str::to_owned);
            vec![("Redirect URI", redirect)]
        }
        Kind::Saml => {
            let base = entry["base_url"].as_str().map_or(external, |b| b.trim_end_matches('/'));
            let entity = app.web.sign_in(&app.domain).saml.entity_id().to_owned();
            vec![
                ("Service provider entity ID", entity),
                ("Assertion consumer service (ACS) URL", format!("{base}/auth/saml/sp/consume/{id}")),
                ("Service provider metadata URL", format!("{base}/auth/saml/sp/metadata/{id}")),
            ]
        }
    }
}

/// One provider as the list shows it.
struct Row {
    kind: Kind,
    id: String,
    label: String,
    to_paste: Vec<(&'static str, String)>,
}

#[derive(askama::Template)]
#[template(path = "admin/providers.html")]
struct ListPage<'a> {
    nav: Nav<'a>,
    rows: Vec<Row>,
    oidc_fixed_by: Option<String>,
    saml_fixed_by: Option<String>,
    done: &'static str,
}

/// `GET /admin/providers`.
async fn list(State(app): State<AppState>, AdminViewer(viewer): AdminViewer, RawQuery(raw): RawQuery) -> Response {
    let lists = app.domain.current_providers().lists.clone();
    let rows = [(Kind::Oidc, &lists.oidc), (Kind::Saml, &lists.saml)]
        .into_iter()
        .flat_map(|(kind, list)| list.iter().map(move |entry| (kind, entry)))
        .map(|(kind, entry)| {
            let id = entry["id"].as_str().unwrap_or_default().to_owned();
            let label = entry["label"].as_str().map_or_else(|| id.clone(), str::to_owned);
            Row { kind, to_paste: to_paste(&app, kind, entry), id, label }
        })
        .collect();
    let done = match query_value(raw.as_deref(), "done").as_str() {
        "saved" => "The provider was saved; it is in effect for the next sign-in.",
        "removed" => "The provider was removed.",
        _ => "",
    };
    let page = ListPage {
        nav: viewer.nav(Section::AdminProviders),
        rows,
        oidc_fixed_by: Kind::Oidc.fixed_by(&app),
        saml_fixed_by: Kind::Saml.fixed_by(&app),
        done,
    };
    html::response(StatusCode::OK, page)
}
