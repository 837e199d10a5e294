//! The admin console (docs/web.md): users, every device, API tokens and the effective
//! settings. Each page takes an [`AdminViewer`](super::viewer::AdminViewer) (an
//! unprivileged user gets a 403 page) and calls the domain's use cases, never `/v0`.

mod audit;
mod devices;
mod gateways;
mod groups;
mod hints;
mod invitations;
pub(crate) mod provider_test;
mod providers;
mod rules;
mod settings;
mod tokens;

use axum::response::Response;
use axum::routing::get;
use axum::Router;

use super::redirect;
use super::viewer::AdminViewer;
use ferrozone_http::AppState;

mod users;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/admin", get(console))
        .merge(users::routes())
        .merge(invitations::routes())
        .merge(devices::routes())
        .merge(gateways::routes())
        .merge(groups::routes())
        .merge(rules::routes())
        .merge(providers::routes())
        .merge(settings::routes())
        .merge(tokens::routes())
        .merge(audit::routes())
}

/// The console's first page.
async fn console(_admin: AdminViewer) -> Response {
    redirect("/admin/users")
}
