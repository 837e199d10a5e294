//! `/v0/configuration`: the Firezone configuration singleton (docs/design/configuration.md,
//! "Configuration"). Admins only.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use ferrozone_domain::configuration::Values;
use ferrozone_domain::input::ConfigurationChanges;
use ferrozone_domain::service::configuration::Configuration;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::dto::Time;
use crate::routes::ReadAttributes;
use crate::wire::ConfigurationEnvelope;
use ferrozone_http::error::ApiError;
use ferrozone_http::extract::{Auth, JsonObject};
use ferrozone_http::{reply, AppState};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(get_configuration, update_configuration, replace_configuration))
}

/// The effective configuration: each value is the environment's when it sets the key, else
/// the stored one, else the default.
#[derive(Serialize, ToSchema)]
pub struct ConfigurationDto {
    pub id: Uuid,
    /// The effective values.
    #[serde(flatten)]
    pub values: Values,
    /// The OpenID Connect providers in effect, as sent (`client_secret` in clear, as in
    /// Firezone).
    #[schema(value_type = Vec<Object>)]
    pub openid_connect_providers: Vec<serde_json::Value>,
    /// The SAML identity providers in effect, as sent.
    #[schema(value_type = Vec<Object>)]
    pub saml_identity_providers: Vec<serde_json::Value>,
    /// Always `{}`: Ferrozone has no logo.
    #[schema(value_type = Object)]
    pub logo: serde_json::Map<String, serde_json::Value>,
    pub inserted_at: Time,
    pub updated_at: Time,
}

/// `{"data": configuration}`
#[derive(Serialize, ToSchema)]
pub struct ConfigurationData {
    pub data: ConfigurationDto,
}

impl From<Configuration> for ConfigurationDto {
    fn from(c: Configuration) -> Self {
        Self {
            id: c.id,
            values: c.values,
            openid_connect_providers: c.providers.oidc,
            saml_identity_providers: c.providers.saml,
            logo: serde_json::Map::new(),
            inserted_at: Time(c.inserted_at),
            updated_at: Time(c.updated_at),
        }
    }
}

fn ok(configuration: Configuration) -> Response {
    reply::json(StatusCode::OK, &ConfigurationData { data: configuration.into() })
}

/// Show the configuration
#[utoipa::path(get, path = "/v0/configuration", tag = "configuration",
    responses(
        (status = 200, body = ConfigurationData),
        crate::responses::AdminErrors,
    ))]
async fn get_configuration(State(app): State<AppState>, Auth(actor): Auth) -> Result<Response, ApiError> {
    Ok(ok(app.domain.configuration(&actor).await?))
}

/// Update the configuration
///
/// Only the keys sent change. A key the environment sets cannot be changed (422).
#[utoipa::path(patch, path = "/v0/configuration", tag = "configuration",
    request_body = ConfigurationEnvelope,
    responses(
        (status = 200, body = ConfigurationData),
        crate::responses::BodyErrors,
    ))]
async fn update_configuration(
    State(app): State<AppState>,
    Auth(actor): Auth,
    body: JsonObject,
) -> Result<Response, ApiError> {
    actor.require_admin()?;
    let sent: ConfigurationChanges = body.read()?;
    let web = app.web.clone();
    let check = move |providers: &ferrozone_domain::providers::Providers| web.check_providers(providers);
    Ok(ok(app.domain.update_configuration(&actor, &sent, &check).await?))
}

/// Update the configuration (as PATCH)
#[utoipa::path(put, path = "/v0/configuration", tag = "configuration",
    request_body = ConfigurationEnvelope,
    responses(
        (status = 200, body = ConfigurationData),
        crate::responses::BodyErrors,
    ))]
async fn replace_configuration(state: State<AppState>, auth: Auth, body: JsonObject) -> Result<Response, ApiError> {
    update_configuration(state, auth, body).await
}
