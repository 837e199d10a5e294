//! `GET /admin/rules/check`: Check access, the console's face of `GET /v0/rules/check`. The
//! form is a GET (it changes nothing, and an answer can be linked to); a user is named by
//! email, a device by its id (the devices' pages link here with it filled in).

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use ferrozone_domain::error::Errors;
use ferrozone_domain::service::access::{AccessAnswer, AccessQuestion};
use ferrozone_domain::DomainError;

use super::{DefaultAction, RuleRow};
use crate::format::sentence;
use crate::page_error::PageError;
use crate::viewer::{AdminViewer, Nav, Section};
use crate::{html, query_value};
use ferrozone_http::AppState;

/// The form's fields as sent.
#[derive(Default)]
struct Asked {
    email: String,
    device_id: String,
    destination: String,
    protocol: String,
    port: String,
}

#[derive(Default)]
struct FieldErrors {
    email: Vec<String>,
    device_id: Vec<String>,
    destination: Vec<String>,
    protocol: Vec<String>,
    port: Vec<String>,
}

impl FieldErrors {
    fn from(errors: &Errors) -> Self {
        let of = |field: &str, name: &str| -> Vec<String> {
            errors.get(field).unwrap_or_default().iter().map(|m| sentence(name, m)).collect()
        };
        FieldErrors {
            email: of("user_id", "User"),
            device_id: of("device_id", "Device"),
            destination: of("destination", "Destination"),
            protocol: of("protocol", "Protocol"),
            port: of("port", "Port"),
        }
    }
}

/// The answer as the page shows it.
struct Answer {
    accept: bool,
    explanation: String,
    /// The deciding rule, when one decided.
    rule: Option<RuleRow>,
    /// Whose traffic: the user's email and, for a device, its name.
    user_email: String,
    device_name: Option<String>,
}

#[derive(askama::Template)]
#[template(path = "admin/rule_check.html")]
struct CheckPage<'a> {
    nav: Nav<'a>,
    asked: Asked,
    errors: FieldErrors,
    answer: Option<Answer>,
    default_action: DefaultAction,
}

pub(super) async fn page(
    State(app): State<AppState>,
    AdminViewer(viewer): AdminViewer,
    RawQuery(raw): RawQuery,
) -> Result<Response, PageError> {
    let raw = raw.as_deref();
    let field = |name: &str| query_value(raw, name).trim().to_owned();
    let asked = Asked {
        email: field("email"),
        device_id: field("device_id"),
        destination: field("destination"),
        protocol: field("protocol"),
        port: field("port"),
    };
    let mut page = CheckPage {
        nav: viewer.nav(Section::AdminRules),
        asked,
        errors: FieldErrors::default(),
        answer: None,
        default_action: DefaultAction::of(&app),
    };
    // A link that only names who (a device's, a user's page) fills the form in; the form
    // itself always sends the destination, even blank.
    let submitted = form_urlencoded::parse(raw.unwrap_or_default().as_bytes()).any(|(name, _)| name == "destination");
    if !submitted {
        return Ok(html::response(StatusCode::OK, page));
    }
    let status = match ask(&app, &viewer, &page.asked).await {
        Ok(answer) => {
            page.answer = Some(answer);
            StatusCode::OK
        }
        Err(DomainError::Invalid(errors)) => {
            page.errors = FieldErrors::from(&errors);
            StatusCode::UNPROCESSABLE_ENTITY
        }
        Err(e) => return Err(e.into()),
    };
    Ok(html::response(status, page))
}

/// The domain's answer to what was asked, with the names the page shows.
async fn ask(app: &AppState, viewer: &crate::viewer::Viewer, asked: &Asked) -> Result<Answer, DomainError> {
    let text = |s: &str| (!s.is_empty()).then(|| s.to_owned());
    let user_id = match text(&asked.email) {
        None => None,
        Some(email) => match app.domain.find_user(&email).await {
            Ok(user) => Some(user.id.to_string()),
            Err(DomainError::NotFound) => return Err(DomainError::invalid("user_id", "No user has this email.")),
            Err(e) => return Err(e),
        },
    };
    let question = AccessQuestion {
        user_id,
        device_id: text(&asked.device_id),
        destination: text(&asked.destination),
        protocol: text(&asked.protocol),
        port: text(&asked.port),
    };
    let answer: AccessAnswer = app.domain.check_access(viewer.principal(), &question).await?;
    let principal = viewer.principal();
    let ids: Vec<_> = [answer.user_id].into_iter().chain(answer.rule.as_ref().and_then(|r| r.user_id)).collect();
    let users = app.domain.users_by_id(principal, &ids).await?;
    let device_name = match answer.device_id {
        Some(id) => Some(app.domain.get_device(principal, id).await?.name),
        None => None,
    };
    Ok(Answer {
        accept: answer.action == ferrozone_domain::egress::RuleAction::Accept,
        explanation: answer.explanation(),
        rule: answer.rule.as_ref().map(|rule| {
            let groups = answer.group_name.iter().flat_map(|name| rule.group_id.map(|id| (id, name.clone()))).collect();
            RuleRow::new(rule, &users, &groups)
        }),
        user_email: users.get(&answer.user_id).map(|u| u.email.clone()).unwrap_or_default(),
        device_name,
    })
}
