//! The `/scim/v2` face of Ferrozone's HTTP service: a SCIM 2.0 service provider (RFC 7643,
//! RFC 7644) through which a directory such as Okta or Microsoft Entra ID provisions users
//! and groups (docs/design/scim.md). It stands on ferrozone-http and knows nothing of the
//! API or the pages; the use cases are [`ferrozone_domain::Domain`]'s.
//!
//! Every answer is `application/scim+json`, errors included (the `Error` schema, with a
//! `scimType`), and every request needs a provisioning token ([`auth`]).

mod auth;
mod discovery;
mod error;
mod filter;
mod groups;
mod list;
mod patch;
mod reply;
mod resource;
mod users;

use axum::extract::DefaultBodyLimit;
use axum::Router;
use ferrozone_http::AppState;

pub use reply::SCIM_JSON;

/// The routes under `/scim/v2`, with a SCIM 404 for any other path there.
pub fn routes() -> Router<AppState> {
    let scim = Router::new()
        .merge(users::routes())
        .merge(groups::routes())
        .merge(discovery::routes())
        .fallback(|| async { error::ScimError::not_found("endpoint") })
        .layer(DefaultBodyLimit::max(ferrozone_http::extract::BODY_LIMIT));
    Router::new().nest("/scim/v2", scim)
}
