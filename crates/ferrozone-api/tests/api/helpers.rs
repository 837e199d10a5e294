//! The HTTP test harness of ferrozone-http, serving the API face alone.

use axum::Router;
pub use ferrozone_http::testing::*;
use ferrozone_http::AppState;

/// The API's routes, and the API's JSON 404 where none matches.
pub struct ApiFace;

impl Faces for ApiFace {
    fn routes() -> Router<AppState> {
        ferrozone_api::routes().fallback(ferrozone_http::error::not_found)
    }
}

pub type TestApp = ferrozone_http::testing::TestApp<ApiFace>;

/// The application of this crate's faces on `state` (with a data plane, say).
pub fn app(state: AppState) -> Router {
    ferrozone_http::app(state, ApiFace::routes())
}

/// A store that fails on demand ([`ferrozone_http::testing::flaky`]), under this crate's app.
pub mod flaky {
    pub use ferrozone_http::testing::flaky::*;

    /// A [`super::TestApp`] on a store that fails as the returned switch says.
    pub async fn flaky_app() -> (super::TestApp, Switch) {
        ferrozone_http::testing::flaky::flaky_app().await
    }
}
