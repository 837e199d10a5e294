//! `GET /admin/audit`: the audit log, newest first, 50 events a page, filtered by the kind
//! of action and by the user acted for. Read only: the page offers no action.

use std::collections::HashMap;

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use ferrozone_domain::audit::{AuditEvent, AuditQuery, Change};
use ferrozone_domain::Timestamp;
use serde_json::Value;
use uuid::Uuid;

use super::hints::{hints, Hint};
use crate::format::When;
use crate::page_error::PageError;
use crate::pager::Pager;
use crate::viewer::{AdminViewer, Nav, Section};
use crate::{html, query_value};
use ferrozone_http::AppState;

/// Events a page shows.
const PAGE: u32 = 50;

/// The kinds of action the filter offers: the first words the audit log records.
const KINDS: &[&str] =
    &["user", "device", "token", "session", "rule", "configuration", "totp", "oidc_connection", "import", "webhook"];

pub fn routes() -> Router<AppState> {
    Router::new().route("/admin/audit", get(page))
}

#[derive(askama::Template)]
#[template(path = "admin_audit.html")]
struct AuditLogPage<'a> {
    nav: Nav<'a>,
    hints: Vec<Hint>,
    kinds: &'static [&'static str],
    /// The filters as asked: the kind chosen (empty: all) and the user acted for (and its
    /// email, when the user still exists).
    kind: String,
    user_id: String,
    user_email: Option<String>,
    rows: Vec<Row>,
    error: Option<&'static str>,
    pager: Pager,
}

struct Row {
    seq: i64,
    at: When,
    actor: String,
    actor_user: Option<UserLink>,
    action: String,
    /// The subject in words; a user subject is `subject_user` instead.
    subject: String,
    subject_user: Option<UserLink>,
    changes: Vec<ChangeText>,
    client_address: String,
    request_id: String,
}

/// A user an event names: shown by its email (its id in the link's title), or by its id
/// when it was deleted since.
struct UserLink {
    id: String,
    label: String,
}

impl UserLink {
    fn new(id: Uuid, emails: &HashMap<Uuid, String>) -> Self {
        let label = emails.get(&id).cloned().unwrap_or_else(|| id.to_string());
        Self { id: id.to_string(), label }
    }
}

/// One changed field as the page shows it: a secret only as changed.
struct ChangeText {
    field: String,
    text: String,
}

/// The filters and the page position of the query string; `None` when one is malformed.
fn query(raw: Option<&str>) -> Option<(String, String, AuditQuery)> {
    let kind = query_value(raw, "kind");
    let user_id = query_value(raw, "user_id");
    let before = query_value(raw, "before");
    let mut query = AuditQuery { limit: PAGE, ..AuditQuery::default() };
    if !kind.is_empty() {
        KINDS.contains(&kind.as_str()).then_some(())?;
        query.action = Some(format!("{kind}."));
    }
    if !user_id.is_empty() {
        query.actor_user_id = Some(Uuid::parse_str(&user_id).ok()?);
    }
    if !before.is_empty() {
        query.before_seq = Some(before.parse::<i64>().ok().filter(|seq| *seq > 0)?);
    }
    Some((kind, user_id, query))
}

/// The page's own link with its filters, and a position.
fn link(kind: &str, user_id: &str, before: Option<i64>) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    if !kind.is_empty() {
        query.append_pair("kind", kind);
    }
    if !user_id.is_empty() {
        query.append_pair("user_id", user_id);
    }
    if let Some(before) = before {
        query.append_pair("before", &before.to_string());
    }
    let query = query.finish();
    if query.is_empty() {
        "/admin/audit".to_owned()
    } else {
        format!("/admin/audit?{query}")
    }
}

async fn page(
    AdminViewer(viewer): AdminViewer,
    State(app): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Result<Response, PageError> {
    let mut page = AuditLogPage {
        nav: viewer.nav(Section::AdminAudit),
        hints: hints(&app),
        kinds: KINDS,
        kind: String::new(),
        user_id: String::new(),
        user_email: None,
        rows: Vec::new(),
        error: None,
        pager: Pager::pages(None, None),
    };
    let Some((kind, user_id, query)) = query(raw.as_deref()) else {
        page.error = Some("This page link is not valid.");
        return Ok(html::response(StatusCode::BAD_REQUEST, page));
    };
    let listed = app.domain.audit_events(viewer.principal(), &query).await?;
    if query.before_seq.is_some() {
        page.pager.first = Some(link(&kind, &user_id, None));
    }
    page.pager.next = listed.next.map(|seq| link(&kind, &user_id, Some(seq)));
    let mut ids: Vec<Uuid> = listed.events.iter().flat_map(users_named).flatten().collect();
    ids.extend(query.actor_user_id);
    let emails = app.domain.audit_user_emails(viewer.principal(), &ids).await?;
    let now = Timestamp::now();
    page.rows = listed.events.into_iter().map(|event| row(event, &emails, now)).collect();
    page.user_email = query.actor_user_id.and_then(|id| emails.get(&id).cloned());
    page.kind = kind;
    page.user_id = user_id;
    Ok(html::response(StatusCode::OK, page))
}

/// The users `event` names: the user acted for, and a user subject.
fn users_named(event: &AuditEvent) -> [Option<Uuid>; 2] {
    [event.event.actor.user_id, subject_user_id(event)]
}

/// The id of `event`'s subject when it is a user.
fn subject_user_id(event: &AuditEvent) -> Option<Uuid> {
    let subject = &event.event.subject;
    (subject.kind == "user").then_some(())?;
    Uuid::parse_str(subject.id.as_deref()?).ok()
}

fn row(event: AuditEvent, emails: &HashMap<Uuid, String>, now: Timestamp) -> Row {
    let subject_user = subject_user_id(&event).map(|id| UserLink::new(id, emails));
    let AuditEvent { seq, event, .. } = event;
    let actor = match &event.actor.id {
        Some(id) => format!("{} {id}", event.actor.kind.as_str()),
        None => event.actor.kind.as_str().to_owned(),
    };
    let subject = match &event.subject.id {
        Some(id) => format!("{} {id}", event.subject.kind),
        None => event.subject.kind.clone(),
    };
    Row {
        seq,
        at: When::new(event.at, now),
        actor,
        actor_user: event.actor.user_id.map(|id| UserLink::new(id, emails)),
        action: event.action,
        subject,
        subject_user,
        changes: event.changes.iter().map(change_text).collect(),
        client_address: event.origin.client_address.unwrap_or_default(),
        request_id: event.origin.request_id.unwrap_or_default(),
    }
}

fn change_text(change: &Change) -> ChangeText {
    let text = if change.secret {
        "changed (secret)".to_owned()
    } else {
        match (&change.before, &change.after) {
            (Some(before), Some(after)) => format!("{} → {}", value_text(before), value_text(after)),
            (None, Some(after)) => value_text(after),
            (Some(before), None) => format!("was {}", value_text(before)),
            (None, None) => "changed".to_owned(),
        }
    };
    ChangeText { field: change.field.clone(), text }
}

/// A value in words: text without quotes, `none` for null, anything else as JSON.
fn value_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => "none".to_owned(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_are_read_and_a_malformed_one_is_refused() {
        let (kind, user, query) = query(Some("kind=device&before=40")).unwrap();
        assert_eq!((kind.as_str(), user.as_str()), ("device", ""));
        assert_eq!((query.action.as_deref(), query.before_seq), (Some("device."), Some(40)));
        assert!(super::query(Some("kind=nonsense")).is_none());
        assert!(super::query(Some("user_id=42")).is_none());
        assert!(super::query(Some("before=-1")).is_none());
        assert_eq!(link("device", "", Some(7)), "/admin/audit?kind=device&before=7");
    }

    #[test]
    fn a_secret_is_shown_only_as_changed() {
        let secret = change_text(&Change::secret("preshared_key"));
        assert_eq!(secret.text, "changed (secret)");
        let name = change_text(&Change::value("name", Some("old".into()), Some("new".into())));
        assert_eq!(name.text, "old → new");
    }
}
