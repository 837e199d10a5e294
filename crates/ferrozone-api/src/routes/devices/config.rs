//! `/v0/devices/{id}/config`: the device's wg-quick configuration, as text or a QR code.

use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use ferrozone_domain::Errors;
use utoipa::ToSchema;

use crate::routes::uuid_path;
use ferrozone_http::error::ApiError;
use ferrozone_http::extract::{Auth, PathId};
use ferrozone_http::qr::{self, QrFailure};
use ferrozone_http::AppState;

/// How `GET /v0/devices/{id}/config` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ToSchema)]
#[schema(rename_all = "kebab-case")]
pub enum ConfigFormat {
    /// `text/plain; charset=utf-8`: the wg-quick file (the default).
    Text,
    /// `image/png`: the file as a QR code.
    Qr,
    /// `image/svg+xml`: the file as a QR code.
    QrSvg,
}

impl ConfigFormat {
    fn parse(value: &str) -> Option<Self> {
        match value {
            "text" => Some(Self::Text),
            "qr" => Some(Self::Qr),
            "qr-svg" => Some(Self::QrSvg),
            _ => None,
        }
    }
}

/// A PNG image.
#[derive(ToSchema)]
#[schema(value_type = String, format = Binary)]
pub struct Png(());

/// Show a device's WireGuard configuration
///
/// The device's wg-quick file, built from its effective settings (server defaults where
/// `use_default_*` is on), as an attachment named for the device (`<name>.conf`). `PrivateKey` is the placeholder `<PRIVATE_KEY>`: the server
/// never stores a device's private key. `format=qr` and `format=qr-svg` give the same text
/// as a QR code (PNG or SVG) for WireGuard's mobile apps. Non-admins see only their own
/// devices.
#[utoipa::path(get, path = "/v0/devices/{id}/config", tag = "devices",
    params(
        ("id" = String, Path, description = "Device UUID"),
        ("format" = inline(Option<ConfigFormat>), Query, description = "`text` (default), `qr` (PNG) or `qr-svg`"),
    ),
    responses(
        (status = 200, description = "The configuration", content(
            (String = "text/plain"), (Png = "image/png"), (String = "image/svg+xml"),
        )),
        (status = 400, body = crate::dto::ErrorBody), (status = 401, body = crate::dto::AuthErrors),
        (status = 404, body = crate::dto::ErrorBody),
        (status = 422, description = "Too long for a QR code", body = crate::dto::ValidationErrors),
    ))]
pub(super) async fn get_device_config(
    State(app): State<AppState>,
    Auth(actor): Auth,
    id: PathId,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let format = parse_format(raw.as_deref().unwrap_or_default())?;
    let id = uuid_path(id)?;
    // The name, for the file's: as the web's download does.
    let name = app.domain.get_device(&actor, id).await?.name;
    let text = app.domain.device_config(&actor, id).await?;
    let (content_type, body) = match format {
        ConfigFormat::Text => ("text/plain; charset=utf-8", text.into_bytes()),
        ConfigFormat::Qr => ("image/png", qr::png(&text).map_err(qr_error)?),
        ConfigFormat::QrSvg => ("image/svg+xml", qr::svg(&text).map_err(qr_error)?.into_bytes()),
    };
    // The file holds the preshared key: no cache may keep it.
    let headers = [
        (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
        (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
    ];
    let mut response = (StatusCode::OK, headers, body).into_response();
    if format == ConfigFormat::Text {
        response.headers_mut().insert(header::CONTENT_DISPOSITION, ferrozone_http::disposition::config_file(&name));
    }
    Ok(response)
}

/// `format` from the query string; other parameters are ignored, like on the list.
fn parse_format(raw: &str) -> Result<ConfigFormat, ApiError> {
    let mut format = ConfigFormat::Text;
    for (key, value) in form_urlencoded::parse(raw.as_bytes()) {
        if key == "format" {
            format = ConfigFormat::parse(&value)
                .ok_or_else(|| ApiError::BadRequest("`format` must be `text`, `qr` or `qr-svg`".to_owned()))?;
        }
    }
    Ok(format)
}

fn qr_error(e: QrFailure) -> ApiError {
    match e {
        QrFailure::TooLong => {
            let mut errors = Errors::new();
            errors.add("format", "the configuration is too long for a QR code");
            ApiError::Invalid(errors)
        }
        other => ApiError::Internal(other.into()),
    }
}
