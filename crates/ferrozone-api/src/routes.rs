//! Route tables. Routes are registered through `utoipa_axum`, so a route cannot exist
//! without its entry in the OpenAPI document.

pub mod audit;
pub mod configuration;
pub mod devices;
pub mod health;
pub mod me;
pub mod rules;
pub mod server;
pub mod tokens;
pub mod totp;
pub mod users;
pub mod webhooks;

use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;

use crate::openapi::ApiDoc;
use ferrozone_http::AppState;

pub fn api() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(devices::routes())
        .merge(users::routes())
        .merge(rules::routes())
        .merge(tokens::routes())
        .merge(configuration::routes())
        .merge(me::routes())
        .merge(totp::routes())
        .merge(server::routes())
        .merge(webhooks::routes())
        .merge(audit::routes())
}
