//! `/v0/server`: what this process runs (version, start-up settings with their sources,
//! the data plane), as the console's settings page shows it. Admins only.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use ferrozone_http::error::ApiError;
use ferrozone_http::extract::Auth;
use ferrozone_http::report::ServerReport;
use ferrozone_http::{reply, AppState};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(get_server))
}

/// This process: its version, start-up settings and data plane.
#[derive(Serialize, ToSchema)]
pub struct ServerDto {
    #[serde(flatten)]
    pub report: ServerReport,
    /// The URL users reach Ferrozone at.
    #[schema(example = "https://vpn.example.com")]
    pub external_url: String,
    /// The data plane as `/healthz` reports it (`status`, `data_plane`, `routing`).
    #[schema(value_type = Object)]
    pub health: serde_json::Value,
}

/// `{"data": server}`
#[derive(Serialize, ToSchema)]
pub struct ServerData {
    pub data: ServerDto,
}

/// Show the server
///
/// The version, the start-up settings (secrets left out) each with its source (`default`,
/// `file`, `environment` or `flag`), and the data plane's health.
#[utoipa::path(get, path = "/v0/server", tag = "server",
    responses(
        (status = 200, body = ServerData),
        crate::responses::AdminErrors,
    ))]
async fn get_server(State(app): State<AppState>, Auth(actor): Auth) -> Result<Response, ApiError> {
    actor.require_admin()?;
    let mut health = super::health::report(&app.data_plane.health(), &app.warnings);
    if let Some(object) = health.as_object_mut() {
        // The database answered this request: the report is about the data plane.
        object.remove("database");
    }
    let data = ServerDto { report: (*app.report).clone(), external_url: app.web.external_url.clone(), health };
    Ok(reply::json(StatusCode::OK, &ServerData { data }))
}
