//! "My devices" (`GET /`): the signed-in user's own devices, a page of 50 at a time, with
//! their status and traffic, how many of the limit are used, and the way to add one (or
//! why not). `assets/devices.js` keeps the rows live; without it the page shows the
//! values of when it was served.

use askama::Template;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use ferrozone_domain::service::device_rights::Allowance;
use ferrozone_domain::store::DeviceQuery;
use ferrozone_domain::Timestamp;

use super::row::DeviceRow;
use crate::page_error::PageError;
use crate::pager::Pager;
use crate::viewer::{Nav, Section, Viewer};
use crate::{html, query_value};
use ferrozone_http::cursor;
use ferrozone_http::AppState;

/// Devices per page (the live update reads the same page from `/v0/devices`).
pub const PAGE_SIZE: u32 = 50;

pub fn routes() -> Router<AppState> {
    Router::new().route("/", get(my_devices))
}

#[derive(Template)]
#[template(path = "portal/devices.html")]
struct DevicesPage<'a> {
    nav: Nav<'a>,
    /// The viewer's id: the live update asks `/v0/devices` for this user's devices only
    /// (an admin's unfiltered list holds everyone's).
    user_id: String,
    rows: Vec<DeviceRow>,
    allowance: Allowance,
    /// The cursor this page starts after (`?after=`), `""` on the first page.
    after: String,
    pager: Pager,
    page_size: u32,
}

impl DevicesPage<'_> {
    /// A blank row for the live update to copy (inside a `<template>`).
    fn blank_row(&self) -> DeviceRow {
        DeviceRow {
            id: String::new(),
            name: String::new(),
            ipv4: String::new(),
            ipv6: String::new(),
            online: false,
            owner_disabled: false,
            paused: false,
            handshake_at: String::new(),
            handshake: String::new(),
            downloaded: String::new(),
            uploaded: String::new(),
            remote: String::new(),
            created_at: String::new(),
            created: String::new(),
        }
    }
}

/// The viewer's devices after `?after=` (a cursor as `/v0/devices` gives; a bad one is
/// the first page).
async fn my_devices(
    State(app): State<AppState>,
    viewer: Viewer,
    RawQuery(query): RawQuery,
) -> Result<Response, PageError> {
    let user_id = viewer.user().id;
    let after_text = query_value(query.as_deref(), "after");
    let after = cursor::decode(&after_text);
    let query = DeviceQuery { user_id: Some(user_id), after, limit: Some(PAGE_SIZE), presence: None };
    let devices = app.domain.list_devices(viewer.principal(), query).await?;
    let allowance = app.domain.device_allowance(viewer.principal()).await?;
    let next = (devices.len() == PAGE_SIZE as usize)
        .then(|| devices.last().map(|d| format!("/?after={}", cursor::encode(d.inserted_at, d.id))));
    let now = Timestamp::now();
    let page = DevicesPage {
        nav: viewer.nav(Section::Devices),
        user_id: user_id.to_string(),
        rows: devices.iter().map(|d| DeviceRow::new(d, now)).collect(),
        allowance,
        after: if after.is_some() { after_text } else { String::new() },
        pager: Pager { label: "Pages of devices", first: after.map(|_| "/".to_owned()), next: next.flatten() },
        page_size: PAGE_SIZE,
    };
    Ok(html::response(StatusCode::OK, page))
}
