//! `/v0/audit_events`: the audit log, newest first, one page at a time; admins only.
//! docs/api.md, "Audit events", and docs/design/audit.md.

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ferrozone_domain::audit::{ActorKind, AuditQuery, EventView};
use ferrozone_domain::Timestamp;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::dto::PageMetadata;
use ferrozone_http::error::ApiError;
use ferrozone_http::extract::Auth;
use ferrozone_http::{reply, AppState};

/// The page size without `limit`, and the largest one.
pub const DEFAULT_LIMIT: u32 = 50;
pub const MAX_LIMIT: u32 = 500;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_audit_events))
}

/// `{"data": [events…], "metadata": {"limit", "next_page_cursor"}}`
#[derive(Serialize, ToSchema)]
pub struct AuditEventList {
    pub data: Vec<EventView>,
    pub metadata: PageMetadata,
}

/// List audit events
///
/// Who changed what, from where and when: recorded changes, sign-ins and refused sign-ins,
/// newest first, one page at a time. Every filter narrows the list; an `action` ending with
/// `.` (`device.`) takes every action of that kind.
#[utoipa::path(get, path = "/v0/audit_events", tag = "audit",
    params(
        ("limit" = Option<u32>, Query, description = "Page size, 1 to 500 (default 50)", minimum = 1, maximum = 500),
        ("page_cursor" = Option<String>, Query, description = "`next_page_cursor` of the previous page"),
        ("actor_kind" = Option<ActorKind>, Query, description = "Only events by this kind of actor"),
        ("actor_id" = Option<String>, Query, description = "Only events by this token, session or provider id"),
        ("user_id" = Option<Uuid>, Query, description = "Only events of actions on behalf of this user"),
        ("subject_kind" = Option<String>, Query, description = "Only events about this kind of thing (`device`, `user`, …)"),
        ("subject_id" = Option<String>, Query, description = "Only events about the thing with this id"),
        ("action" = Option<String>, Query, description = "An action (`device.created`), or a kind of action (`device.`)"),
        ("since" = Option<String>, Query, description = "Only events at or after this time (RFC 3339)"),
        ("until" = Option<String>, Query, description = "Only events before this time (RFC 3339)"),
    ),
    responses(
        (status = 200, body = AuditEventList),
        (status = 400, description = "A malformed parameter", body = crate::dto::ErrorBody),
        crate::responses::AdminErrors,
    ))]
async fn list_audit_events(
    State(app): State<AppState>,
    Auth(actor): Auth,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    actor.require_admin()?;
    let query = parse_query(raw.as_deref().unwrap_or("")).map_err(ApiError::BadRequest)?;
    let page = app.domain.audit_events(&actor, &query).await?;
    let data = page.events.into_iter().map(EventView::from).collect();
    let metadata = PageMetadata { limit: query.limit, next_page_cursor: page.next.map(encode_cursor) };
    Ok(reply::json(StatusCode::OK, &AuditEventList { data, metadata }))
}

/// The query of `/v0/audit_events` (and of the console's audit page, which takes the same
/// parameters). A malformed value is a message naming the parameter; unknown parameters
/// and empty values are ignored, as a form with blank filters sends them.
pub fn parse_query(raw: &str) -> Result<AuditQuery, String> {
    let mut query = AuditQuery { limit: DEFAULT_LIMIT, ..AuditQuery::default() };
    for (key, value) in form_urlencoded::parse(raw.as_bytes()) {
        let value = value.trim();
        if value.is_empty() {
            continue;
        }
        let text = || Some(value.to_owned());
        match key.as_ref() {
            "limit" => query.limit = parse_limit(value)?,
            "page_cursor" => query.before_seq = Some(decode_cursor(value).ok_or("`page_cursor` is invalid")?),
            "actor_kind" => {
                query.actor_kind = Some(ActorKind::parse(value).ok_or("`actor_kind` is not a kind of actor")?);
            }
            "actor_id" => query.actor_id = text(),
            "user_id" => query.actor_user_id = Some(Uuid::parse_str(value).map_err(|_| "`user_id` must be a UUID")?),
            "subject_kind" => query.subject_kind = text(),
            "subject_id" => query.subject_id = text(),
            "action" => query.action = text(),
            "since" => query.since = Some(Timestamp::parse_rfc3339(value).ok_or("`since` must be an RFC 3339 time")?),
            "until" => query.until = Some(Timestamp::parse_rfc3339(value).ok_or("`until` must be an RFC 3339 time")?),
            _ => {}
        }
    }
    Ok(query)
}

fn parse_limit(value: &str) -> Result<u32, String> {
    match value.parse::<u32>() {
        Ok(n @ 1..=MAX_LIMIT) => Ok(n),
        _ => Err(format!("`limit` must be an integer from 1 to {MAX_LIMIT}")),
    }
}

/// The cursor of the page after the one ending at event `seq`: base64url of `audit:<seq>`.
/// Opaque to clients; the prefix keeps it from being taken for another list's cursor.
pub fn encode_cursor(seq: i64) -> String {
    URL_SAFE_NO_PAD.encode(format!("audit:{seq}"))
}

/// The seq `text` continues before, or `None` when it is not a cursor of this list.
pub fn decode_cursor(text: &str) -> Option<i64> {
    let decoded = String::from_utf8(URL_SAFE_NO_PAD.decode(text).ok()?).ok()?;
    let seq: i64 = decoded.strip_prefix("audit:")?.parse().ok()?;
    (seq > 0 && decoded == format!("audit:{seq}")).then_some(seq)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_names_the_seq_it_encodes_and_nothing_else() {
        assert_eq!(decode_cursor(&encode_cursor(42)), Some(42));
        for text in ["", "42", "%%", &URL_SAFE_NO_PAD.encode("audit:+42"), &URL_SAFE_NO_PAD.encode("audit:0")] {
            assert_eq!(decode_cursor(text), None, "{text}");
        }
    }

    #[test]
    fn filters_parse_and_blank_ones_are_ignored() {
        let user = Uuid::new_v4();
        let raw = format!(
            "limit=10&user_id={user}&action=device.&actor_kind=token&subject_kind=&since=2026-01-02T03:04:05Z&x=1"
        );
        let query = parse_query(&raw).unwrap();
        assert_eq!(query.limit, 10);
        assert_eq!(query.actor_user_id, Some(user));
        assert_eq!(query.action.as_deref(), Some("device."));
        assert_eq!(query.actor_kind, Some(ActorKind::Token));
        assert_eq!(query.subject_kind, None);
        assert_eq!(query.since, Some(Timestamp::from_secs(1_767_323_045)));
    }

    #[test]
    fn malformed_values_name_their_parameter() {
        for (raw, name) in [
            ("limit=0", "limit"),
            ("limit=501", "limit"),
            ("limit=x", "limit"),
            ("user_id=nope", "user_id"),
            ("actor_kind=robot", "actor_kind"),
            ("since=yesterday", "since"),
            ("until=2026-13-01T00:00:00Z", "until"),
            ("page_cursor=nope", "page_cursor"),
        ] {
            let message = parse_query(raw).unwrap_err();
            assert!(message.contains(&format!("`{name}`")), "{raw}: {message}");
        }
    }
}
