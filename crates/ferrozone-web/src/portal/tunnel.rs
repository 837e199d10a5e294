//! `GET/POST /devices/{id}/tunnel`: a device's tunnel settings (AllowedIPs, DNS, endpoint,
//! MTU, keepalive), each either the server's default or the device's own, as Firezone's
//! device form had them. The use case of `PATCH /v0/devices/{id}` with the `use_default_*`
//! switches and the values: an admin always, an unprivileged owner while
//! `allow_unprivileged_device_configuration` (and device management) is on.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use ferrozone_domain::input::{DeviceChanges, Patch, TunnelSettings};
use ferrozone_domain::model::Device;
use ferrozone_domain::service::device_rights;
use ferrozone_domain::settings::ClientDefaults;
use ferrozone_domain::{DomainError, Errors};
use uuid::Uuid;

use crate::checked_form::{CheckedForm, Fields};
use crate::page_error::PageError;
use crate::viewer::{Nav, Section, Viewer};
use crate::{html, redirect};
use ferrozone_http::error::ApiError;
use ferrozone_http::AppState;

/// The five settings, in the form's order: key, label, hint.
const SETTINGS: [(&str, &str, &str); 5] = [
    ("allowed_ips", "Allowed IPs", "Addresses or networks routed through the tunnel, separated by commas."),
    ("dns", "DNS servers", "Addresses or names, separated by commas; none for no DNS line."),
    ("endpoint", "Endpoint", "Where the device reaches this server: a host or address, with an optional :port."),
    ("mtu", "MTU", "576 to 1500; blank for no MTU line."),
    ("persistent_keepalive", "Persistent keepalive (seconds)", "0 to 120; blank for no keepalive line."),
];

/// One setting as the form shows it.
struct Setting {
    key: &'static str,
    label: &'static str,
    hint: &'static str,
    use_default: bool,
    /// The device's own value, as typed (lists comma-separated).
    value: String,
    /// The server's default, in words.
    default: String,
    error: String,
}

#[derive(askama::Template)]
#[template(path = "portal/device_tunnel.html")]
struct TunnelPage<'a> {
    nav: Nav<'a>,
    device: &'a Device,
    settings: Vec<Setting>,
    /// Why the viewer may not change them, if not.
    refused: Option<&'static str>,
}

async fn device(app: &AppState, viewer: &Viewer, id: &str) -> Result<Device, PageError> {
    let id = Uuid::parse_str(id).map_err(|_| ApiError::NotFound)?;
    Ok(app.domain.get_device(viewer.principal(), id).await?)
}

/// Why `viewer` may not change `device`'s tunnel settings, if not.
fn refusal(app: &AppState, viewer: &Viewer) -> Option<&'static str> {
    match device_rights::may_configure_devices(viewer.principal(), &app.domain.current_values()) {
        Err(DomainError::Disallowed(why)) => Some(why),
        _ => None,
    }
}

pub(super) async fn form(
    State(app): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
) -> Result<Response, PageError> {
    let device = device(&app, &viewer, &id).await?;
    let settings = stored(&device, &app.domain.client_defaults());
    let page =
        TunnelPage { nav: viewer.nav(Section::Devices), device: &device, settings, refused: refusal(&app, &viewer) };
    Ok(html::response(StatusCode::OK, page))
}

/// Saves the five settings and goes back to the device's page; refused, the form again
/// with the messages at their fields and the values as sent.
pub(super) async fn save(
    State(app): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
    CheckedForm(fields): CheckedForm,
) -> Result<Response, PageError> {
    let device = device(&app, &viewer, &id).await?;
    let defaults = app.domain.client_defaults();
    let mut settings = sent(&fields, &defaults);
    let (tunnel, mut errors) = tunnel(&settings);
    if errors.is_empty() {
        let changes = DeviceChanges { tunnel, ..DeviceChanges::default() };
        match app.domain.update_device(viewer.principal(), device.id, &changes).await {
            Ok(_) => return Ok(redirect(&format!("/devices/{}?saved=1", device.id))),
            Err(DomainError::Invalid(invalid)) => errors = invalid,
            Err(DomainError::Disallowed(why)) => {
                let page =
                    TunnelPage { nav: viewer.nav(Section::Devices), device: &device, settings, refused: Some(why) };
                return Ok(html::response(StatusCode::FORBIDDEN, page));
            }
            Err(e) => return Err(e.into()),
        }
    }
    for setting in &mut settings {
        if let Some(messages) = errors.get(setting.key) {
            setting.error = crate::format::sentences(setting.label, messages);
        }
    }
    let page = TunnelPage { nav: viewer.nav(Section::Devices), device: &device, settings, refused: None };
    Ok(html::response(StatusCode::UNPROCESSABLE_ENTITY, page))
}

/// The settings as stored.
fn stored(device: &Device, defaults: &ClientDefaults) -> Vec<Setting> {
    let (u, c) = (&device.use_default, &device.custom);
    let number = |n: Option<i32>| n.map(|n| n.to_string()).unwrap_or_default();
    let values = [
        (u.allowed_ips, c.allowed_ips.join(", ")),
        (u.dns, c.dns.join(", ")),
        (u.endpoint, c.endpoint.clone().unwrap_or_default()),
        (u.mtu, number(c.mtu)),
        (u.persistent_keepalive, number(c.persistent_keepalive)),
    ];
    SETTINGS
        .iter()
        .zip(values)
        .map(|(&(key, label, hint), (use_default, value))| setting(key, label, hint, use_default, value, defaults))
        .collect()
}

/// The settings as the form sent them: a checked box (`use_default_<key>`) means the
/// server's default.
fn sent(fields: &Fields, defaults: &ClientDefaults) -> Vec<Setting> {
    SETTINGS
        .iter()
        .map(|&(key, label, hint)| {
            let use_default = fields.contains_key(&format!("use_default_{key}"));
            let value = fields.get(key).map(|v| v.trim().to_owned()).unwrap_or_default();
            setting(key, label, hint, use_default, value, defaults)
        })
        .collect()
}

fn setting(
    key: &'static str,
    label: &'static str,
    hint: &'static str,
    use_default: bool,
    value: String,
    defaults: &ClientDefaults,
) -> Setting {
    let none = || "none".to_owned();
    let list = |items: &[String]| if items.is_empty() { none() } else { items.join(", ") };
    let default = match key {
        "allowed_ips" => list(&defaults.allowed_ips),
        "dns" => list(&defaults.dns),
        "endpoint" => defaults.endpoint.clone(),
        "mtu" => defaults.mtu.map_or_else(none, |n| n.to_string()),
        _ => defaults.persistent_keepalive.map_or_else(none, |n| n.to_string()),
    };
    Setting { key, label, hint, use_default, value, default, error: String::new() }
}

/// The domain's input for the form's settings: a default clears the device's own value
/// (the API's rule: no value beside a default); a blank number is no line; a number that
/// is not one is refused here, at its field.
fn tunnel(settings: &[Setting]) -> (TunnelSettings, Errors) {
    let mut errors = Errors::new();
    let by = |key: &str| settings.iter().find(|s| s.key == key).expect("every setting is in the form");
    let list = |s: &Setting| match s.use_default {
        true => Patch::Null,
        false => Patch::Value(crate::checked_form::items(&s.value)),
    };
    let mut number = |s: &Setting| match (s.use_default, s.value.as_str()) {
        (true, _) | (false, "") => Patch::Null,
        (false, text) => text.parse::<i64>().map(Patch::Value).unwrap_or_else(|_| {
            errors.add(s.key, "must be a whole number");
            Patch::Absent
        }),
    };
    let (allowed_ips, dns, endpoint) = (by("allowed_ips"), by("dns"), by("endpoint"));
    let (mtu, keepalive) = (by("mtu"), by("persistent_keepalive"));
    let tunnel = TunnelSettings {
        use_default_allowed_ips: Some(allowed_ips.use_default),
        use_default_dns: Some(dns.use_default),
        use_default_endpoint: Some(endpoint.use_default),
        use_default_mtu: Some(mtu.use_default),
        use_default_persistent_keepalive: Some(keepalive.use_default),
        allowed_ips: list(allowed_ips),
        dns: list(dns),
        endpoint: if endpoint.use_default { Patch::Null } else { Patch::Value(endpoint.value.clone()) },
        mtu: number(mtu),
        persistent_keepalive: number(keepalive),
    };
    (tunnel, errors)
}
