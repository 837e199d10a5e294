//! Adding, editing and removing one identity provider. The form's fields are the keys of
//! the provider's JSON entry (docs/operations.md, "Identity providers"); saving puts the
//! entry into its list and sends the whole list as `PATCH /v0/configuration` does, so the
//! same parser and checks (the SAML metadata, the discovery URL's form) decide. The client
//! secret is write-only: never shown, and a blank field keeps the stored one.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use ferrozone_domain::input::{ConfigurationChanges, Patch};
use ferrozone_domain::DomainError;
use serde_json::{Map, Value};

use super::{to_paste, Kind};
use crate::checked_form::{CheckedForm, Fields};
use crate::page_error::PageError;
use crate::viewer::{AdminViewer, Nav, Section, Viewer};
use crate::{html, redirect};
use ferrozone_http::AppState;

/// How a field is entered.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Input {
    Text,
    /// Write-only: never shown back.
    Secret,
    /// Several lines (the SAML metadata).
    Area,
    /// A switch with its value when the entry does not say.
    Check(bool),
}

/// One key of a provider's entry: key, label, hint, input.
type Spec = (&'static str, &'static str, &'static str, Input);

const OIDC: &[Spec] = &[
    ("id", "ID", "Letters, digits, - and _; part of the redirect URI.", Input::Text),
    ("label", "Label", "The sign-in button's text; the ID when blank.", Input::Text),
    (
        "discovery_document_uri",
        "Discovery document URL",
        "The issuer's …/.well-known/openid-configuration.",
        Input::Text,
    ),
    ("client_id", "Client ID", "", Input::Text),
    (
        "client_secret",
        "Client secret",
        "Never shown again once saved; leave blank to keep the stored one.",
        Input::Secret,
    ),
    ("scope", "Scopes", "Separated by spaces; `openid email profile` when blank.", Input::Text),
    ("redirect_uri", "Redirect URI", "Only to replace the default shown above.", Input::Text),
    ("auto_create_users", "Create a user at the first sign-in of an unknown email", "", Input::Check(false)),
    ("allow_admins", "Administrators may sign in with this provider", "", Input::Check(true)),
    ("require_verified_email", "Require a verified email", "", Input::Check(false)),
    ("consent_prompt", "Ask for consent with offline_access (for refresh tokens)", "", Input::Check(true)),
];

const SAML: &[Spec] = &[
    ("id", "ID", "Letters, digits, - and _; part of the URLs above.", Input::Text),
    ("label", "Label", "The sign-in button's text; the ID when blank.", Input::Text),
    (
        "metadata",
        "Identity provider metadata (XML)",
        "The EntityDescriptor the identity provider publishes.",
        Input::Area,
    ),
    (
        "base_url",
        "Base URL",
        "Only when the service provider's URLs live under another address than the server's.",
        Input::Text,
    ),
    ("auto_create_users", "Create a user at the first sign-in of an unknown email", "", Input::Check(false)),
    ("allow_admins", "Administrators may sign in with this provider", "", Input::Check(true)),
    ("sign_requests", "Sign authentication requests", "", Input::Check(true)),
    ("sign_metadata", "Sign the service provider's metadata", "", Input::Check(true)),
    ("signed_assertion_in_resp", "Require signed assertions", "", Input::Check(true)),
    ("signed_envelopes_in_resp", "Require signed responses", "", Input::Check(true)),
];

fn specs(kind: Kind) -> &'static [Spec] {
    match kind {
        Kind::Oidc => OIDC,
        Kind::Saml => SAML,
    }
}

/// One field as the form shows it.
struct Field {
    key: &'static str,
    label: &'static str,
    hint: &'static str,
    input: Input,
    value: String,
    checked: bool,
    /// A secret is stored (shown as such, never its value).
    stored: bool,
    /// The refusal names this field.
    invalid: bool,
}

impl Field {
    fn is(&self, what: &str) -> bool {
        matches!(
            (self.input, what),
            (Input::Text, "text") | (Input::Secret, "secret") | (Input::Area, "area") | (Input::Check(_), "check")
        )
    }
}

#[derive(askama::Template)]
#[template(path = "admin/provider_form.html")]
struct FormPage<'a> {
    nav: Nav<'a>,
    kind: Kind,
    /// The provider's ID as stored, `None` while adding.
    original: Option<String>,
    fields: Vec<Field>,
    to_paste: Vec<(&'static str, String)>,
    /// The checks' refusal, if any.
    error: Option<String>,
    /// What sets the list, when the environment does (then nothing can be changed).
    fixed_by: Option<String>,
}

impl FormPage<'_> {
    fn action(&self) -> String {
        match &self.original {
            Some(id) => format!("/admin/providers/{}/{}", self.kind.path(), id),
            None => format!("/admin/providers/{}/new", self.kind.path()),
        }
    }
}

/// The fields of `entry` (a stored provider, or none).
fn shown(kind: Kind, entry: Option<&Value>) -> Vec<Field> {
    let empty = Value::Null;
    let entry = entry.unwrap_or(&empty);
    specs(kind)
        .iter()
        .map(|&(key, label, hint, input)| {
            let value = match input {
                Input::Text | Input::Area => entry[key].as_str().unwrap_or_default().to_owned(),
                Input::Secret | Input::Check(_) => String::new(),
            };
            let checked = match input {
                Input::Check(default) => entry[key].as_bool().unwrap_or(default),
                _ => false,
            };
            let stored = input == Input::Secret && entry[key].as_str().is_some_and(|s| !s.is_empty());
            Field { key, label, hint, input, value, checked, stored, invalid: false }
        })
        .collect()
}

/// The fields as sent; `stored` is the entry being edited.
fn sent(kind: Kind, fields: &Fields, stored: Option<&Value>) -> Vec<Field> {
    let mut shown = shown(kind, stored);
    for field in &mut shown {
        field.value = fields.get(field.key).map(|v| v.trim().to_owned()).unwrap_or_default();
        if let Input::Check(_) = field.input {
            field.checked = fields.contains_key(field.key);
        }
    }
    shown
}

/// The provider's JSON entry: blank fields left out (the parser's defaults apply), a blank
/// secret replaced by the stored one, and the stored entry's keys the form does not show
/// (the group settings, `groups_claim`, `groups_prefix`, `groups_allowed` and
/// `groups_attribute`, set in the JSON) kept as they are.
fn entry(fields: &[Field], stored: Option<&Value>) -> Value {
    let shown = |key: &str| fields.iter().any(|field| field.key == key);
    let mut entry: Map<String, Value> = match stored {
        Some(Value::Object(stored)) => {
            stored.iter().filter(|(key, _)| !shown(key)).map(|(k, v)| (k.clone(), v.clone())).collect()
        }
        _ => Map::new(),
    };
    for field in fields {
        let value = match field.input {
            Input::Check(_) => Some(Value::Bool(field.checked)),
            Input::Secret if field.value.is_empty() => stored.map(|s| s[field.key].clone()).filter(Value::is_string),
            _ if field.value.is_empty() => None,
            _ => Some(Value::String(field.value.clone())),
        };
        if let Some(value) = value {
            entry.insert(field.key.to_owned(), value);
        }
    }
    Value::Object(entry)
}

fn kind_of(path: &str) -> Result<Kind, PageError> {
    Kind::parse(path).ok_or_else(|| DomainError::NotFound.into())
}

/// The stored list of `kind` and, when `id` is given, the index of that provider in it.
fn stored(app: &AppState, kind: Kind, id: Option<&str>) -> Result<(Vec<Value>, Option<usize>), PageError> {
    let list = app.domain.current_providers().lists.get(kind.key()).clone();
    let index = match id {
        None => None,
        Some(id) => Some(list.iter().position(|e| e["id"].as_str() == Some(id)).ok_or(DomainError::NotFound)?),
    };
    Ok((list, index))
}

fn page<'a>(
    app: &AppState,
    viewer: &'a Viewer,
    kind: Kind,
    original: Option<String>,
    fields: Vec<Field>,
) -> FormPage<'a> {
    let id = fields.iter().find(|f| f.key == "id").map(|f| f.value.clone()).unwrap_or_default();
    let base = fields.iter().find(|f| f.key == "base_url" || f.key == "redirect_uri").map(|f| (f.key, f.value.clone()));
    let mut preview = serde_json::json!({ "id": if id.is_empty() { "<id>".to_owned() } else { id } });
    if let Some((key, value)) = base.filter(|(_, v)| !v.is_empty()) {
        preview[key] = Value::String(value);
    }
    FormPage {
        nav: viewer.nav(Section::AdminProviders),
        kind,
        original,
        to_paste: to_paste(app, kind, &preview),
        fields,
        error: None,
        fixed_by: kind.fixed_by(app),
    }
}

/// `GET /admin/providers/{kind}/new`.
pub(super) async fn new(
    State(app): State<AppState>,
    AdminViewer(viewer): AdminViewer,
    Path(kind): Path<String>,
) -> Result<Response, PageError> {
    let kind = kind_of(&kind)?;
    Ok(html::response(StatusCode::OK, page(&app, &viewer, kind, None, shown(kind, None))))
}

/// `GET /admin/providers/{kind}/{id}`.
pub(super) async fn edit(
    State(app): State<AppState>,
    AdminViewer(viewer): AdminViewer,
    Path((kind, id)): Path<(String, String)>,
) -> Result<Response, PageError> {
    let kind = kind_of(&kind)?;
    let (list, index) = stored(&app, kind, Some(&id))?;
    let fields = shown(kind, index.map(|i| &list[i]));
    Ok(html::response(StatusCode::OK, page(&app, &viewer, kind, Some(id), fields)))
}

/// `POST /admin/providers/{kind}/new`.
pub(super) async fn create(
    State(app): State<AppState>,
    AdminViewer(viewer): AdminViewer,
    Path(kind): Path<String>,
    CheckedForm(fields): CheckedForm,
) -> Result<Response, PageError> {
    save(&app, &viewer, kind_of(&kind)?, None, &fields).await
}

/// `POST /admin/providers/{kind}/{id}`.
pub(super) async fn update(
    State(app): State<AppState>,
    AdminViewer(viewer): AdminViewer,
    Path((kind, id)): Path<(String, String)>,
    CheckedForm(fields): CheckedForm,
) -> Result<Response, PageError> {
    save(&app, &viewer, kind_of(&kind)?, Some(id), &fields).await
}

/// `POST /admin/providers/{kind}/{id}/delete`.
pub(super) async fn delete(
    State(app): State<AppState>,
    AdminViewer(viewer): AdminViewer,
    Path((kind, id)): Path<(String, String)>,
    CheckedForm(_): CheckedForm,
) -> Result<Response, PageError> {
    let kind = kind_of(&kind)?;
    let (mut list, index) = stored(&app, kind, Some(&id))?;
    list.remove(index.expect("an id was given"));
    replace(&app, &viewer, kind, list).await?;
    Ok(redirect("/admin/providers?done=removed"))
}

/// Puts the form's provider into its list and saves the list; the form again (422) with
/// the checks' message when they refuse it.
async fn save(
    app: &AppState,
    viewer: &Viewer,
    kind: Kind,
    original: Option<String>,
    fields: &Fields,
) -> Result<Response, PageError> {
    let (mut list, index) = stored(app, kind, original.as_deref())?;
    let before = index.map(|i| list[i].clone());
    let mut shown = sent(kind, fields, before.as_ref());
    let provider = entry(&shown, before.as_ref());
    match index {
        Some(i) => list[i] = provider,
        None => list.push(provider),
    }
    let message = match replace(app, viewer, kind, list).await {
        Ok(()) => return Ok(redirect("/admin/providers?done=saved")),
        Err(DomainError::Invalid(errors)) => {
            errors.iter().flat_map(|(_, messages)| messages.iter().cloned()).collect::<Vec<_>>().join(" ")
        }
        Err(e) => return Err(e.into()),
    };
    for field in &mut shown {
        field.invalid = message.contains(&format!("`{}`", field.key));
    }
    let mut page = page(app, viewer, kind, original, shown);
    page.error = Some(message);
    Ok(html::response(StatusCode::UNPROCESSABLE_ENTITY, page))
}

/// `PATCH /v0/configuration` with the kind's list replaced by `list`.
async fn replace(app: &AppState, viewer: &Viewer, kind: Kind, list: Vec<Value>) -> Result<(), DomainError> {
    let mut changes = ConfigurationChanges::default();
    match kind {
        Kind::Oidc => changes.openid_connect_providers = Patch::Value(list),
        Kind::Saml => changes.saml_identity_providers = Patch::Value(list),
    }
    let web = app.web.clone();
    let check = move |providers: &ferrozone_domain::providers::Providers| web.check_providers(providers);
    app.domain.update_configuration(viewer.principal(), &changes, &check).await.map(|_| ())
}
