//! `/v0/configuration`: the Firezone configuration singleton (docs/design/configuration.md,
//! "Configuration"). Admins only.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use ferrozone_domain::configuration::Values;
use ferrozone_domain::service::configuration::Configuration;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::dto::Time;
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

/// The keys a client may change; others are ignored.
#[derive(ToSchema)]
#[allow(dead_code)] // a schema only: the body is read as JSON and checked by the domain
pub struct ConfigurationAttrs {
    local_auth_enabled: Option<bool>,
    allow_unprivileged_device_management: Option<bool>,
    allow_unprivileged_device_configuration: Option<bool>,
    disable_vpn_on_oidc_error: Option<bool>,
    #[schema(minimum = 0, maximum = 2147483647)]
    vpn_session_duration: Option<i64>,
    #[schema(minimum = 0, maximum = 120)]
    default_client_persistent_keepalive: Option<i32>,
    #[schema(minimum = 576, maximum = 1500)]
    default_client_mtu: Option<i32>,
    default_client_endpoint: Option<String>,
    default_client_dns: Option<Vec<String>>,
    default_client_allowed_ips: Option<Vec<String>>,
    /// Who must sign in with an authenticator code after the password.
    require_totp: Option<ferrozone_domain::configuration::RequireTotp>,
    /// Replaces the whole list; each provider is checked as at start-up.
    #[schema(value_type = Option<Vec<Object>>)]
    openid_connect_providers: Option<Vec<serde_json::Value>>,
    /// Replaces the whole list; each provider is checked as at start-up.
    #[schema(value_type = Option<Vec<Object>>)]
    saml_identity_providers: Option<Vec<serde_json::Value>>,
}

/// `{"configuration": ConfigurationAttrs}`
#[derive(ToSchema)]
#[allow(dead_code)] // a schema only
pub struct ConfigurationEnvelope {
    configuration: ConfigurationAttrs,
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
    let sent = body.wrapped("configuration")?;
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
