//! `GET /admin/devices`: every device, 50 a page in creation order, filtered by owner
//! (email) and by presence (online: a handshake within the last 3 minutes). One paged
//! query of the store, the presence filter in SQL, then the owners of that page.

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use ferrozone_domain::model::User;
use ferrozone_domain::store::{DeviceQuery, Presence};
use ferrozone_domain::{Device, DomainError, Timestamp};

use super::hints::{hints, Hint};
use crate::format::{bytes, When};
use crate::page_error::PageError;
use crate::pager::Pager;
use crate::viewer::{AdminViewer, Nav, Section};
use crate::{html, query_value};
use ferrozone_http::cursor;
use ferrozone_http::AppState;

/// Devices a page shows.
const PAGE: u32 = 50;

pub fn routes() -> Router<AppState> {
    Router::new().route("/admin/devices", get(page))
}

/// What the filter form asked for, as sent (shown again in the form).
struct Filter {
    user: String,
    status: String,
    after: String,
}

#[derive(askama::Template)]
#[template(path = "admin_devices.html")]
struct DevicesPage<'a> {
    nav: Nav<'a>,
    hints: Vec<Hint>,
    user: &'a str,
    status: &'a str,
    /// Why the filter could not be applied, if it could not.
    error: Option<&'static str>,
    rows: Vec<Row>,
    /// The owner filtered by, when one is: "Add a device for this user" links to them.
    owner_id: Option<String>,
    pager: Pager,
}

/// One device as the table shows it.
struct Row {
    id: String,
    name: String,
    owner_id: String,
    owner_email: String,
    addresses: Vec<String>,
    online: bool,
    /// The owner is disabled: the device is off the VPN, whatever its last handshake.
    owner_disabled: bool,
    /// Paused: off the VPN until resumed.
    paused: bool,
    handshake: Option<When>,
    /// From the device's side, as in the portal (see [`crate::portal::row::DeviceRow`]).
    downloaded: String,
    uploaded: String,
    remote: String,
}

async fn page(AdminViewer(viewer): AdminViewer, State(app): State<AppState>, RawQuery(raw): RawQuery) -> Response {
    let filter = Filter {
        user: query_value(raw.as_deref(), "user").trim().to_owned(),
        status: query_value(raw.as_deref(), "status"),
        after: query_value(raw.as_deref(), "after"),
    };
    let mut page = DevicesPage {
        nav: viewer.nav(Section::AdminDevices),
        hints: hints(&app),
        user: &filter.user,
        status: &filter.status,
        error: None,
        rows: Vec::new(),
        owner_id: None,
        pager: Pager::pages((!filter.after.is_empty()).then(|| page_link(&filter, None)), None),
    };
    let status = match list(&app, &viewer, &filter, &mut page).await {
        Ok(()) => StatusCode::OK,
        Err(Refused(status, message)) => {
            page.error = Some(message);
            status
        }
    };
    html::response(status, page)
}

/// Why the list could not be read: the status and what the page says.
struct Refused(StatusCode, &'static str);

impl From<DomainError> for Refused {
    fn from(e: DomainError) -> Self {
        let status = axum::response::IntoResponse::into_response(PageError::from(e)).status();
        Refused(status, "The devices could not be read. Please try again.")
    }
}

/// Fills `page` with the devices `filter` selects.
async fn list(
    app: &AppState,
    viewer: &crate::viewer::Viewer,
    filter: &Filter,
    page: &mut DevicesPage<'_>,
) -> Result<(), Refused> {
    let mut query = DeviceQuery { limit: Some(PAGE), ..DeviceQuery::default() };
    query.presence = match filter.status.as_str() {
        "" | "all" => None,
        "online" => Some(Presence::now(true)),
        "offline" => Some(Presence::now(false)),
        _ => return Err(Refused(StatusCode::BAD_REQUEST, "Choose Online, Offline or All.")),
    };
    if !filter.after.is_empty() {
        let cursor = cursor::decode(&filter.after);
        query.after = Some(cursor.ok_or(Refused(StatusCode::BAD_REQUEST, "This page link is not valid."))?);
    }
    if !filter.user.is_empty() {
        let owner = match app.domain.find_user(&filter.user).await {
            Err(DomainError::NotFound) => return Err(Refused(StatusCode::NOT_FOUND, "No user has this email.")),
            found => found?,
        };
        query.user_id = Some(owner.id);
        page.owner_id = Some(owner.id.to_string());
    }
    let devices = app.domain.list_devices(viewer.principal(), query).await?;
    let owners = app.domain.device_owners(viewer.principal(), &devices).await?;
    if devices.len() == PAGE as usize {
        page.pager.next =
            devices.last().map(|last| page_link(filter, Some(&cursor::encode(last.inserted_at, last.id))));
    }
    let now = Timestamp::now();
    page.rows = devices
        .into_iter()
        .map(|device| {
            let owner = owners.get(&device.user_id);
            row(device, owner, now)
        })
        .collect();
    Ok(())
}

fn row(device: Device, owner: Option<&User>, now: Timestamp) -> Row {
    let stats = &device.stats;
    let owner_disabled = owner.is_some_and(|owner| owner.disabled_at.is_some());
    let addresses = device.ipv4.map(|a| a.to_string()).into_iter().chain(device.ipv6.map(|a| a.to_string())).collect();
    Row {
        id: device.id.to_string(),
        online: !owner_disabled && device.paused_at.is_none() && stats.is_online(now),
        owner_disabled,
        paused: device.paused_at.is_some(),
        handshake: stats.latest_handshake.map(|at| When::new(at, now)),
        downloaded: stats.tx_bytes.map(bytes).unwrap_or_default(),
        uploaded: stats.rx_bytes.map(bytes).unwrap_or_default(),
        remote: stats.remote_ip.clone().unwrap_or_default(),
        name: device.name,
        owner_id: device.user_id.to_string(),
        owner_email: owner.map(|owner| owner.email.clone()).unwrap_or_default(),
        addresses,
    }
}

/// The link to the page after `cursor` (the first page without one), keeping the filter.
fn page_link(filter: &Filter, cursor: Option<&str>) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    if !filter.user.is_empty() {
        query.append_pair("user", &filter.user);
    }
    if !filter.status.is_empty() {
        query.append_pair("status", &filter.status);
    }
    if let Some(cursor) = cursor {
        query.append_pair("after", cursor);
    }
    format!("/admin/devices?{}", query.finish())
}
