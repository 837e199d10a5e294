//! The HTTP test harness of ferrozone-http, serving the pages beside the API as `serve`
//! does.

use axum::Router;
pub use ferrozone_http::testing::*;
use ferrozone_http::AppState;

/// Both faces, assembled as `serve` assembles them.
pub struct Served;

impl Faces for Served {
    fn routes() -> Router<AppState> {
        ferrozone_api::routes().merge(ferrozone_web::routes())
    }
}

pub type TestApp = ferrozone_http::testing::TestApp<Served>;

/// The application of this crate's faces on `state` (with a data plane, say).
pub fn app(state: AppState) -> Router {
    ferrozone_http::app(state, Served::routes())
}

/// A store that fails on demand ([`ferrozone_http::testing::flaky`]), under this crate's app.
pub mod flaky {
    pub use ferrozone_http::testing::flaky::*;

    /// A [`super::TestApp`] on a store that fails as the returned switch says.
    pub async fn flaky_app() -> (super::TestApp, Switch) {
        ferrozone_http::testing::flaky::flaky_app().await
    }
}
