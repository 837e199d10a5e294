//! The user portal: the pages of every signed-in user (docs/web.md): their devices and
//! their account. Each page takes a [`Viewer`](super::viewer::Viewer) and calls the
//! domain's use cases, never `/v0`.

use axum::Router;

use ferrozone_http::AppState;

mod account;
mod add_device;
mod device;
mod devices;
pub mod row;
mod tunnel;
mod two_factor;

pub fn routes() -> Router<AppState> {
    Router::new()
        .merge(devices::routes())
        .merge(device::routes())
        .merge(add_device::routes())
        .merge(account::routes())
        .merge(two_factor::routes())
}
