//! Adding a device (docs/web.md, "Adding a device"): `GET /devices/new` shows the form,
//! `POST /devices/new` creates the device through the same use case as `POST /v0/devices`
//! and answers the new device's configuration, shown this once.
//!
//! The key pair is made in the browser (its script puts the public key in the form; the
//! private key never leaves the browser), on the server (the private key is in the answer
//! and nowhere else), or not at all (the person pastes the public key of a key they have).

use askama::Template;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use ferrozone_domain::client_config;
use ferrozone_domain::input::NewDevice;
use ferrozone_domain::model::User;
use ferrozone_domain::service::devices::CreatedDevice;
use ferrozone_domain::{names, DomainError, Errors};
use uuid::Uuid;

use crate::checked_form::CheckedForm;
use crate::page_error::PageError;
use crate::viewer::{Nav, Section, Viewer};
use crate::{html, query_value};
use ferrozone_http::AppState;

pub fn routes() -> Router<AppState> {
    Router::new().route("/devices/new", get(form_page).post(add))
}

/// Where the device's key pair comes from.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum KeyMode {
    /// Made by the page's script; the form carries its public key.
    Browser,
    /// Made by the server; the private key is shown once.
    Server,
    /// The person's own key: the form carries its public key, pasted.
    Own,
}

impl KeyMode {
    fn parse(value: &str) -> Self {
        match value {
            "browser" => Self::Browser,
            "own" => Self::Own,
            _ => Self::Server,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Browser => "browser",
            Self::Server => "server",
            Self::Own => "own",
        }
    }
}

/// What the form holds, as entered.
struct Entered {
    /// The owner's id when an admin adds a device for someone else ("" for oneself).
    user_id: String,
    name: String,
    description: String,
    key_mode: KeyMode,
    /// The pasted public key (mode [`KeyMode::Own`]).
    public_key: String,
    /// The public key the page's script made (mode [`KeyMode::Browser`]).
    browser_public_key: String,
}

impl Entered {
    /// A new form for the owner `user_id`: a suggested name, and the server's key (the
    /// page's script offers the browser's when it can make one).
    fn fresh(user_id: String) -> Self {
        Self {
            user_id,
            name: names::generate(),
            description: String::new(),
            key_mode: KeyMode::Server,
            public_key: String::new(),
            browser_public_key: String::new(),
        }
    }

    fn from_fields(fields: &std::collections::HashMap<String, String>) -> Self {
        let field = |name: &str| fields.get(name).map(|v| v.trim().to_owned()).unwrap_or_default();
        Self {
            user_id: field("user_id"),
            name: field("name"),
            description: fields.get("description").cloned().unwrap_or_default(),
            key_mode: KeyMode::parse(&field("key_mode")),
            public_key: field("public_key"),
            browser_public_key: field("browser_public_key"),
        }
    }

    /// The use case's input, or what is missing for the chosen key mode.
    fn new_device(&self, owner: Uuid) -> Result<NewDevice, Errors> {
        let public_key = match self.key_mode {
            KeyMode::Server => None,
            KeyMode::Own if self.public_key.is_empty() => return Err(Errors::one("public_key", PASTE_A_KEY)),
            KeyMode::Own => Some(self.public_key.clone()),
            KeyMode::Browser if self.browser_public_key.is_empty() => {
                return Err(Errors::one("public_key", NO_BROWSER_KEY))
            }
            KeyMode::Browser => Some(self.browser_public_key.clone()),
        };
        Ok(NewDevice {
            user_id: Some(owner.to_string()),
            name: Some(self.name.clone()).filter(|n| !n.is_empty()),
            description: Some(self.description.clone()).filter(|d| !d.trim().is_empty()),
            public_key,
            ..NewDevice::default()
        })
    }
}

const PASTE_A_KEY: &str = "Paste the device's public key, or choose another way to make the key.";
const NO_BROWSER_KEY: &str = "This browser did not make a key. Try again, or choose to generate the key on the server.";

/// A validation message, under the field it is about (`base`: the form as a whole).
pub struct FieldError {
    field: &'static str,
    message: String,
}

/// The form, or why it is not offered.
#[derive(Template)]
#[template(path = "add_device.html")]
struct FormPage<'a> {
    nav: Nav<'a>,
    /// The owner when it is not the viewer.
    for_email: Option<&'a str>,
    /// Why no device can be added now; the form is left out.
    refusal: Option<&'a str>,
    entered: &'a Entered,
    errors: Vec<FieldError>,
}

impl FormPage<'_> {
    /// The messages about `field`.
    fn errors_on(&self, field: &str) -> Vec<&str> {
        self.errors.iter().filter(|e| e.field == field).map(|e| e.message.as_str()).collect()
    }

    fn has_error(&self, field: &str) -> bool {
        self.errors.iter().any(|e| e.field == field)
    }

    fn mode_is(&self, mode: &str) -> bool {
        self.entered.key_mode.as_str() == mode
    }
}

/// The new device's configuration, shown once.
#[derive(Template)]
#[template(path = "device_config_once.html")]
struct ConfigPage<'a> {
    nav: Nav<'a>,
    for_email: Option<&'a str>,
    device_id: Uuid,
    device_name: &'a str,
    public_key: &'a str,
    key_mode: KeyMode,
    config: &'a str,
    file_name: String,
    /// The configuration as a `data:` URL, to download without a script.
    download_href: String,
    /// A QR code of the configuration as a `data:` PNG, when the server made the key.
    qr: Option<String>,
}

async fn form_page(
    State(app): State<AppState>,
    viewer: Viewer,
    RawQuery(query): RawQuery,
) -> Result<Response, PageError> {
    let asked = query_value(query.as_deref(), "user_id");
    let owner = owner_id(&viewer, &asked)?;
    let entered = Entered::fresh(asked);
    match app.domain.may_add_device_for(viewer.principal(), owner).await {
        Ok(user) => Ok(form(&viewer, &user, &entered, None, Vec::new(), StatusCode::OK)),
        Err(DomainError::Disallowed(why)) => {
            let user = allowed_to_know(&app, &viewer, owner).await?;
            Ok(form(&viewer, &user, &entered, Some(why), Vec::new(), StatusCode::OK))
        }
        Err(e) => Err(e.into()),
    }
}

async fn add(
    State(app): State<AppState>,
    viewer: Viewer,
    CheckedForm(fields): CheckedForm,
) -> Result<Response, PageError> {
    let entered = Entered::from_fields(&fields);
    let owner = owner_id(&viewer, &entered.user_id)?;
    let user = match app.domain.may_add_device_for(viewer.principal(), owner).await {
        Ok(user) => user,
        Err(DomainError::Disallowed(why)) => {
            let user = allowed_to_know(&app, &viewer, owner).await?;
            return Ok(form(&viewer, &user, &entered, Some(why), Vec::new(), StatusCode::FORBIDDEN));
        }
        Err(e) => return Err(e.into()),
    };
    let invalid =
        |errors: Errors| form(&viewer, &user, &entered, None, field_errors(&errors), StatusCode::UNPROCESSABLE_ENTITY);
    let input = match entered.new_device(owner) {
        Ok(input) => input,
        Err(errors) => return Ok(invalid(errors)),
    };
    match app.domain.create_device(viewer.principal(), &input).await {
        Ok(created) => config_page(&app, &viewer, &user, entered.key_mode, &created),
        Err(DomainError::Invalid(errors)) => Ok(invalid(errors)),
        Err(DomainError::Disallowed(why)) => {
            Ok(form(&viewer, &user, &entered, Some(why), Vec::new(), StatusCode::FORBIDDEN))
        }
        Err(e) => Err(e.into()),
    }
}

/// The owner named by `asked` (the viewer when blank). Another user's id is 403 for a
/// non-admin, whatever it is; for an admin, something that is not an id names nobody.
fn owner_id(viewer: &Viewer, asked: &str) -> Result<Uuid, PageError> {
    if asked.is_empty() {
        return Ok(viewer.user().id);
    }
    match Uuid::parse_str(asked) {
        Ok(id) if viewer.is_admin() || id == viewer.user().id => Ok(id),
        Ok(_) => Err(DomainError::Forbidden.into()),
        Err(_) if viewer.is_admin() => Err(DomainError::NotFound.into()),
        Err(_) => Err(DomainError::Forbidden.into()),
    }
}

/// The owner, for a page saying why no device can be added for them: [`owner_id`] already
/// let only an admin name someone else.
async fn allowed_to_know(app: &AppState, viewer: &Viewer, owner: Uuid) -> Result<User, PageError> {
    if owner == viewer.user().id {
        Ok(viewer.user().clone())
    } else {
        Ok(app.domain.get_user(viewer.principal(), &owner.to_string()).await?)
    }
}

fn form(
    viewer: &Viewer,
    owner: &User,
    entered: &Entered,
    refusal: Option<&str>,
    errors: Vec<FieldError>,
    status: StatusCode,
) -> Response {
    let page = FormPage {
        nav: viewer.nav(Section::Devices),
        for_email: someone_else(viewer, owner),
        refusal,
        entered,
        errors,
    };
    html::response(status, page)
}

/// The owner's email when the viewer adds a device for someone else.
fn someone_else<'a>(viewer: &Viewer, owner: &'a User) -> Option<&'a str> {
    (owner.id != viewer.user().id).then_some(owner.email.as_str())
}

/// The use case's validation errors, under the form's fields: the key's under the key
/// choice, those about attributes the form does not have for the form as a whole.
fn field_errors(errors: &Errors) -> Vec<FieldError> {
    let mut out = Vec::new();
    for (attribute, messages) in errors.iter() {
        let field = match attribute {
            "name" => "name",
            "description" => "description",
            "public_key" => "public_key",
            _ => "base",
        };
        for message in messages {
            let message = if field == "base" && attribute != "base" {
                format!("{}: {message}", attribute.replace('_', " "))
            } else {
                message.clone()
            };
            out.push(FieldError { field, message });
        }
    }
    out
}

/// The answer to a created device: its configuration, this once (201).
fn config_page(
    app: &AppState,
    viewer: &Viewer,
    owner: &User,
    key_mode: KeyMode,
    created: &CreatedDevice,
) -> Result<Response, PageError> {
    let config = app.domain.first_config(created)?;
    let device = &created.device;
    // A server-made key is in the text: its QR code is drawn here. A browser-made key is
    // put in by the page's script, which draws the code; a pasted key's owner adds theirs.
    let qr = match created.private_key {
        Some(_) => {
            ferrozone_http::qr::png(&config).ok().map(|png| format!("data:image/png;base64,{}", STANDARD.encode(png)))
        }
        None => None,
    };
    let page = ConfigPage {
        nav: viewer.nav(Section::Devices),
        for_email: someone_else(viewer, owner),
        device_id: device.id,
        device_name: &device.name,
        public_key: &device.public_key,
        key_mode,
        config: &config,
        file_name: client_config::file_name(&device.name),
        download_href: format!("data:text/plain;charset=utf-8;base64,{}", STANDARD.encode(config.as_bytes())),
        qr,
    };
    Ok(html::response(StatusCode::CREATED, page))
}
