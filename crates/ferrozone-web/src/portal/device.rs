//! A device's page (`/devices/{id}`): every fact of one's own device (an admin may open
//! any, with its owner), a form to rename it and change its description, its deletion with
//! a confirmation step, and its configuration without the private key, shown and as a
//! download. Another user's device, like an unknown id, is a 404 page.

use askama::Template;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use ferrozone_domain::client_config::{self, Effective};
use ferrozone_domain::input::{DeviceChanges, Patch};
use ferrozone_domain::model::{Device, User};
use ferrozone_domain::service::device_rights;
use ferrozone_domain::{DomainError, Errors, Timestamp};
use serde::Deserialize;
use uuid::Uuid;

use super::row::{DeviceRow, NONE};
use crate::checked_form::CheckedForm;
use crate::page_error::PageError;
use crate::viewer::{Nav, Section, Viewer};
use crate::{html, query_value, redirect};
use ferrozone_http::error::ApiError;
use ferrozone_http::AppState;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/devices/{id}", get(show).post(rename))
        .route("/devices/{id}/delete", get(confirm_delete).post(delete))
        .route("/devices/{id}/tunnel", get(super::tunnel::form).post(super::tunnel::save))
        .route("/devices/{id}/pause", post(pause))
        .route("/devices/{id}/resume", post(resume))
        .route("/devices/{id}/config", get(download_config))
}

#[derive(Template)]
#[template(path = "portal/device.html")]
struct DevicePage<'a> {
    nav: Nav<'a>,
    device: &'a Device,
    row: DeviceRow,
    /// What is going on with the device, in a sentence ([`super::row::diagnosis`]).
    diagnosis: String,
    settings: Effective,
    /// The device's owner, when an admin looks at another user's device.
    owner: Option<User>,
    config: String,
    config_file: String,
    /// The rename form's values: as stored, or as sent when refused.
    name: &'a str,
    description: &'a str,
    errors: Errors,
    /// Why the viewer may not change or delete this device, if not.
    refused: Option<&'static str>,
    saved: bool,
}

impl DevicePage<'_> {
    /// The messages for `field`, joined, for the text next to it.
    fn error(&self, field: &str) -> String {
        self.errors.get(field).map(|m| m.join("; ")).unwrap_or_default()
    }

    /// An optional value, or the sign for none.
    fn or_none(&self, value: &Option<i32>) -> String {
        value.map_or(NONE.to_owned(), |v| v.to_string())
    }

    /// A list of values, or the sign for none.
    fn list(&self, values: &[String]) -> String {
        if values.is_empty() {
            NONE.to_owned()
        } else {
            values.join(", ")
        }
    }

    fn updated(&self) -> String {
        crate::format::day(self.device.updated_at)
    }
}

#[derive(Template)]
#[template(path = "portal/device_delete.html")]
struct DeletePage<'a> {
    nav: Nav<'a>,
    device: &'a Device,
}

/// The device `id` as `viewer` may see it; a malformed id is an unknown one (404).
async fn visible(app: &AppState, viewer: &Viewer, id: &str) -> Result<Device, PageError> {
    let id = Uuid::parse_str(id).map_err(|_| ApiError::NotFound)?;
    Ok(app.domain.get_device(viewer.principal(), id).await?)
}

async fn show(
    State(app): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Response, PageError> {
    let device = visible(&app, &viewer, &id).await?;
    let saved = query_value(query.as_deref(), "saved") == "1";
    let description = device.description.clone().unwrap_or_default();
    let form = Form { name: &device.name, description: &description, errors: Errors::new(), refused: None, saved };
    page(&app, &viewer, &device, form, StatusCode::OK).await
}

/// What the rename form shows.
struct Form<'a> {
    name: &'a str,
    description: &'a str,
    errors: Errors,
    refused: Option<&'static str>,
    saved: bool,
}

/// The device's page as `viewer` may see it, its form showing `form`.
async fn page(
    app: &AppState,
    viewer: &Viewer,
    device: &Device,
    form: Form<'_>,
    status: StatusCode,
) -> Result<Response, PageError> {
    let owner = if device.user_id == viewer.user().id {
        None
    } else {
        Some(app.domain.get_user(viewer.principal(), &device.user_id.to_string()).await?)
    };
    let settings = device.effective(&app.domain.client_defaults());
    let now = Timestamp::now();
    let row = DeviceRow::new(device, now).owned_by(owner.as_ref().unwrap_or(viewer.user()));
    let diagnosis = super::row::diagnosis(device, row.owner_disabled, now);
    let management = device_rights::may_manage(viewer.principal(), &app.domain.current_values());
    let refused = form.refused.or(management.err().map(|_| device_rights::MANAGEMENT_OFF));
    let page = DevicePage {
        nav: viewer.nav(Section::Devices),
        device,
        row,
        diagnosis,
        settings,
        owner,
        config: app.domain.device_config(viewer.principal(), device.id).await?,
        config_file: client_config::file_name(&device.name),
        name: form.name,
        description: form.description,
        errors: form.errors,
        refused,
        saved: form.saved,
    };
    Ok(html::response(status, page))
}

/// The rename form: the device's new name and description (blank when not sent).
#[derive(Deserialize, Default)]
#[serde(default)]
struct Rename {
    name: String,
    description: String,
}

/// Renames the device and sets its description, then back to its page; refused, the page
/// again with the messages next to the fields and the values sent.
async fn rename(
    State(app): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
    CheckedForm(Rename { name, description }): CheckedForm<Rename>,
) -> Result<Response, PageError> {
    let device = visible(&app, &viewer, &id).await?;
    let changes = DeviceChanges {
        name: Patch::Value(name.clone()),
        description: Patch::Value(description.clone()),
        ..DeviceChanges::default()
    };
    let (errors, refused, status) = match app.domain.update_device(viewer.principal(), device.id, &changes).await {
        Ok(_) => return Ok(redirect(&format!("/devices/{}?saved=1", device.id))),
        Err(DomainError::Invalid(errors)) => (errors, None, StatusCode::UNPROCESSABLE_ENTITY),
        Err(DomainError::Disallowed(why)) => (Errors::new(), Some(why), StatusCode::FORBIDDEN),
        Err(e) => return Err(e.into()),
    };
    let form = Form { name: &name, description: &description, errors, refused, saved: false };
    page(&app, &viewer, &device, form, status).await
}

/// Pauses the device (`POST /v0/devices/{id}/pause`) and goes back to its page.
async fn pause(
    State(app): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
    _: CheckedForm,
) -> Result<Response, PageError> {
    set_paused(&app, &viewer, &id, true).await
}

/// Resumes the device (`POST /v0/devices/{id}/resume`) and goes back to its page.
async fn resume(
    State(app): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
    _: CheckedForm,
) -> Result<Response, PageError> {
    set_paused(&app, &viewer, &id, false).await
}

/// The domain's use case finds the device as the viewer may see it (another user's, like an
/// unknown one, is a 404 page), so it is not read here first.
async fn set_paused(app: &AppState, viewer: &Viewer, id: &str, paused: bool) -> Result<Response, PageError> {
    let id = Uuid::parse_str(id).map_err(|_| ApiError::NotFound)?;
    app.domain.set_device_paused(viewer.principal(), id, paused).await?;
    Ok(redirect(&format!("/devices/{id}")))
}

async fn confirm_delete(
    State(app): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
) -> Result<Response, PageError> {
    let device = visible(&app, &viewer, &id).await?;
    let page = DeletePage { nav: viewer.nav(Section::Devices), device: &device };
    Ok(html::response(StatusCode::OK, page))
}

/// Deletes the device and goes to "My devices"; refused by the configuration, a page
/// saying so.
async fn delete(
    State(app): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
    _: CheckedForm,
) -> Result<Response, PageError> {
    let device = visible(&app, &viewer, &id).await?;
    match app.domain.delete_device(viewer.principal(), device.id).await {
        Ok(()) => Ok(redirect("/")),
        Err(DomainError::Disallowed(why)) => {
            Ok(html::response(StatusCode::FORBIDDEN, html::message("Not deleted", why)))
        }
        Err(e) => Err(e.into()),
    }
}

/// The configuration as a file to save: the same text as `/v0/devices/{id}/config` (the
/// private key a placeholder), named for wg-quick ([`client_config::file_name`]).
async fn download_config(
    State(app): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
) -> Result<Response, PageError> {
    let device = visible(&app, &viewer, &id).await?;
    let text = app.domain.device_config(viewer.principal(), device.id).await?;
    let mut response = (StatusCode::OK, text).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    headers.insert(header::CONTENT_DISPOSITION, ferrozone_http::disposition::config_file(&device.name));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    Ok(response)
}
