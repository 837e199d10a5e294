//! `/v0/devices`

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use ferrozone_domain::input::{DeviceChanges, NewDevice};
use ferrozone_domain::store::{DeviceQuery, Presence};
use ferrozone_domain::Device;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::dto::{DeviceData, DeviceDto, DeviceList, PageMetadata};
use crate::routes::{uuid_path, ReadAttributes};
use crate::stream;
use ferrozone_http::cursor;
use ferrozone_http::error::ApiError;
use ferrozone_http::extract::{Auth, DeviceReader, JsonObject, PathId};
use ferrozone_http::{reply, AppState};

mod config;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_devices, create_device))
        .routes(routes!(get_device, update_device, replace_device, delete_device))
        .routes(routes!(pause_device))
        .routes(routes!(resume_device))
        .routes(routes!(config::get_device_config))
}

/// List devices
///
/// Ordered by creation. Without `limit` the whole collection is returned; with it, one
/// page and `metadata.next_page_cursor`. Non-admins see only their own devices.
#[utoipa::path(get, path = "/v0/devices", tag = "devices",
    params(
        ("user_id" = Option<Uuid>, Query, description = "Only this user's devices"),
        ("limit" = Option<u32>, Query, description = "Page size, 1 to 1000", minimum = 1, maximum = 1000),
        ("page_cursor" = Option<String>, Query, description = "`next_page_cursor` of the previous page"),
        ("online" = Option<bool>, Query,
            description = "Only devices online (`true`: a handshake within the last 3 minutes) or offline (`false`)"),
    ),
    responses(
        (status = 200, body = DeviceList),
        (status = 400, body = crate::dto::ErrorBody), (status = 401, body = crate::dto::AuthErrors),
    ))]
async fn list_devices(
    State(app): State<AppState>,
    Auth(actor): Auth,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let query = parse_list_query(raw.as_deref().unwrap_or_default())?;
    let Some(limit) = query.limit else {
        let batches = app.domain.stream_devices(&actor, query).await?;
        return stream::device_list(app.domain.clone(), batches).await;
    };
    let devices = app.domain.list_devices(&actor, query).await?;
    let metadata = Some(PageMetadata {
        limit,
        next_page_cursor: (devices.len() == limit as usize)
            .then(|| devices.last().map(|d| cursor::encode(d.inserted_at, d.id)))
            .flatten(),
    });
    let data = devices.into_iter().map(|d| DeviceDto::new(&app.domain, d)).collect::<Result<_, _>>()?;
    Ok(reply::json(StatusCode::OK, &DeviceList { data, metadata }))
}

/// Create a device
///
/// Addresses are assigned from the tunnel networks when omitted; the preshared key and
/// the name are generated when omitted. Without a `public_key` the server generates the
/// device's key pair and returns its `private_key` in this response, once.
#[utoipa::path(post, path = "/v0/devices", tag = "devices",
    request_body = crate::wire::DeviceEnvelope,
    responses(
        (status = 201, body = DeviceData, headers(("location" = String, description = "/v0/devices/{id}"))),
        crate::responses::BodyErrors,
    ))]
async fn create_device(State(app): State<AppState>, Auth(actor): Auth, body: JsonObject) -> Result<Response, ApiError> {
    let input: NewDevice = body.read()?;
    let created = app.domain.create_device(&actor, &input).await?;
    let location = format!("/v0/devices/{}", created.device.id);
    Ok(reply::created(location, &DeviceData { data: DeviceDto::created(&app.domain, created)? }))
}

/// Show a device
#[utoipa::path(get, path = "/v0/devices/{id}", tag = "devices",
    params(("id" = String, Path, description = "Device UUID")),
    responses(
        (status = 200, body = DeviceData),
        (status = 401, body = crate::dto::AuthErrors), (status = 404, body = crate::dto::ErrorBody),
    ))]
async fn get_device(State(app): State<AppState>, reader: DeviceReader, id: PathId) -> Result<Response, ApiError> {
    let token = match reader {
        DeviceReader::Bearer(token) => token,
        DeviceReader::Actor(actor) => return one(&app, app.domain.get_device(&actor, uuid_path(id)?).await?),
    };
    let Ok(id) = uuid_path(id) else {
        // A malformed id is an unknown one, once the token has been checked as always.
        Auth::check(&app, &token).await?;
        return Err(ApiError::NotFound);
    };
    // The token and the device in one read of the store: the API's hottest path.
    match app.domain.get_device_with_token(&token, id).await? {
        Ok(device) => one(&app, device),
        Err(refusal) => {
            ferrozone_http::telemetry::sign_ins::token_refused(
                ferrozone_http::telemetry::sign_ins::TokenKind::ApiToken,
                &refusal,
            );
            Err(ApiError::Refused(refusal))
        }
    }
}

/// Update a device
///
/// A partial update: omitted attributes keep their stored value.
#[utoipa::path(patch, path = "/v0/devices/{id}", tag = "devices",
    params(("id" = String, Path, description = "Device UUID")),
    request_body = crate::wire::DeviceEnvelope,
    responses(
        (status = 200, body = DeviceData),
        crate::responses::ItemBodyErrors,
    ))]
async fn update_device(
    State(app): State<AppState>,
    Auth(actor): Auth,
    id: PathId,
    body: JsonObject,
) -> Result<Response, ApiError> {
    let id = uuid_path(id)?;
    let changes: DeviceChanges = match body.read() {
        Ok(changes) => changes,
        Err(malformed) => {
            // Authorization before validation: a device the caller may not see is 404,
            // whatever the body holds.
            app.domain.get_device(&actor, id).await?;
            return Err(malformed);
        }
    };
    let device = app.domain.update_device(&actor, id, &changes).await?;
    one(&app, device)
}

/// Update a device (PUT)
///
/// The same partial update as PATCH, for clients written for Firezone.
#[utoipa::path(put, path = "/v0/devices/{id}", tag = "devices",
    params(("id" = String, Path, description = "Device UUID")),
    request_body = crate::wire::DeviceEnvelope,
    responses(
        (status = 200, body = DeviceData),
        crate::responses::ItemBodyErrors,
    ))]
async fn replace_device(
    state: State<AppState>,
    auth: Auth,
    id: PathId,
    body: JsonObject,
) -> Result<Response, ApiError> {
    update_device(state, auth, id, body).await
}

/// Delete a device
#[utoipa::path(delete, path = "/v0/devices/{id}", tag = "devices",
    params(("id" = String, Path, description = "Device UUID")),
    responses(
        (status = 204, description = "Deleted"),
        crate::responses::ItemErrors,
    ))]
async fn delete_device(State(app): State<AppState>, Auth(actor): Auth, id: PathId) -> Result<StatusCode, ApiError> {
    app.domain.delete_device(&actor, uuid_path(id)?).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Pause a device
///
/// Ferrozone's own: the device leaves the VPN (its peer leaves the interface, its address
/// the egress rules) and keeps its keys, address and settings; `paused_at` appears in its
/// JSON. The owner or an admin; pausing a paused device changes nothing.
#[utoipa::path(post, path = "/v0/devices/{id}/pause", tag = "devices",
    params(("id" = String, Path, description = "Device UUID")),
    responses(
        (status = 200, body = DeviceData),
        crate::responses::ItemErrors,
    ))]
async fn pause_device(State(app): State<AppState>, Auth(actor): Auth, id: PathId) -> Result<Response, ApiError> {
    let device = app.domain.set_device_paused(&actor, uuid_path(id)?, true).await?;
    one(&app, device)
}

/// Resume a device
///
/// Ferrozone's own: a paused device returns to the VPN as it was; `paused_at` leaves its
/// JSON. The owner or an admin; resuming an active device changes nothing.
#[utoipa::path(post, path = "/v0/devices/{id}/resume", tag = "devices",
    params(("id" = String, Path, description = "Device UUID")),
    responses(
        (status = 200, body = DeviceData),
        crate::responses::ItemErrors,
    ))]
async fn resume_device(State(app): State<AppState>, Auth(actor): Auth, id: PathId) -> Result<Response, ApiError> {
    let device = app.domain.set_device_paused(&actor, uuid_path(id)?, false).await?;
    one(&app, device)
}

fn one(app: &AppState, device: Device) -> Result<Response, ApiError> {
    Ok(reply::json(StatusCode::OK, &DeviceData { data: DeviceDto::new(&app.domain, device)? }))
}

fn parse_list_query(raw: &str) -> Result<DeviceQuery, ApiError> {
    let mut query = DeviceQuery::default();
    for (key, value) in form_urlencoded::parse(raw.as_bytes()) {
        match key.as_ref() {
            "user_id" => {
                let id = Uuid::parse_str(&value).map_err(|_| bad("`user_id` must be a UUID"))?;
                query.user_id = Some(id);
            }
            "limit" => match value.parse::<u32>() {
                Ok(n @ 1..=1000) => query.limit = Some(n),
                _ => return Err(bad("`limit` must be an integer from 1 to 1000")),
            },
            "page_cursor" => query.after = Some(cursor::from_query(&value)?),
            "online" => match value.as_ref() {
                "true" => query.presence = Some(Presence::now(true)),
                "false" => query.presence = Some(Presence::now(false)),
                _ => return Err(bad("`online` must be true or false")),
            },
            _ => {}
        }
    }
    Ok(query)
}

fn bad(message: &str) -> ApiError {
    ApiError::BadRequest(message.to_owned())
}
