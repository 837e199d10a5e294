//! `/v0/rules`: Firezone's egress rules, admin only (docs/design/egress-rules.md, "Egress rules").

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use ferrozone_domain::input::{NewRule, RuleChanges};
use ferrozone_domain::service::access::AccessQuestion;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::dto::{AccessCheckData, RuleData, RuleDto, RuleList};
use crate::routes::{uuid_path, ReadAttributes};
use ferrozone_http::error::ApiError;
use ferrozone_http::extract::{Auth, JsonObject, PathId};
use ferrozone_http::{reply, AppState};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_rules, create_rule)).routes(routes!(check_access)).routes(routes!(
        get_rule,
        update_rule,
        replace_rule,
        delete_rule
    ))
}

/// List egress rules
#[utoipa::path(get, path = "/v0/rules", tag = "rules",
    responses(
        (status = 200, body = RuleList),
        crate::responses::AdminErrors,
    ))]
async fn list_rules(State(app): State<AppState>, Auth(actor): Auth) -> Result<Response, ApiError> {
    let rules = app.domain.list_rules(&actor).await?;
    Ok(reply::json(StatusCode::OK, &RuleList { data: rules.into_iter().map(RuleDto::from).collect() }))
}

/// Create an egress rule
///
/// `destination` and `port_range` are stored and returned exactly as sent.
#[utoipa::path(post, path = "/v0/rules", tag = "rules",
    request_body = crate::wire::RuleEnvelope,
    responses(
        (status = 201, body = RuleData, headers(("location" = String, description = "/v0/rules/{id}"))),
        crate::responses::BodyErrors,
    ))]
async fn create_rule(State(app): State<AppState>, Auth(actor): Auth, body: JsonObject) -> Result<Response, ApiError> {
    // Authorization before validation: an unprivileged caller gets 403 whatever it sent.
    actor.require_admin()?;
    let input: NewRule = body.read()?;
    let rule = app.domain.create_rule(&actor, &input).await?;
    Ok(reply::created(format!("/v0/rules/{}", rule.id), &RuleData { data: rule.into() }))
}

/// Check access
///
/// What the egress rules in effect do with traffic from a user's devices (or one device)
/// to `destination`: `accept` or `drop`, and the rule (or the default action) that decides,
/// in the order the gateway looks them up. Ferrozone's own; it changes nothing.
#[utoipa::path(get, path = "/v0/rules/check", tag = "rules",
    params(
        ("user_id" = Option<Uuid>, Query, description = "The user whose devices send the traffic (or `device_id`)"),
        ("device_id" = Option<Uuid>, Query, description = "The device that sends the traffic (or `user_id`)"),
        ("destination" = String, Query, description = "An IPv4 or IPv6 address"),
        ("protocol" = String, Query, description = "`tcp`, `udp` or `icmp` (any protocol without ports)"),
        ("port" = Option<u16>, Query, description = "The destination port, 1 to 65535; for `tcp` and `udp` only", minimum = 1, maximum = 65535),
    ),
    responses(
        (status = 200, body = AccessCheckData),
        crate::responses::QueryErrors,
    ))]
async fn check_access(
    State(app): State<AppState>,
    Auth(actor): Auth,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    actor.require_admin()?;
    let answer = app.domain.check_access(&actor, &access_question(raw.as_deref().unwrap_or(""))).await?;
    Ok(reply::json(StatusCode::OK, &AccessCheckData { data: answer.into() }))
}

/// The question of `/v0/rules/check` (and of the console's form, which sends the same
/// names): the last value of each name; unknown names are ignored.
pub fn access_question(raw: &str) -> AccessQuestion {
    let mut question = AccessQuestion::default();
    for (key, value) in form_urlencoded::parse(raw.as_bytes()) {
        let field = match key.as_ref() {
            "user_id" => &mut question.user_id,
            "device_id" => &mut question.device_id,
            "destination" => &mut question.destination,
            "protocol" => &mut question.protocol,
            "port" => &mut question.port,
            _ => continue,
        };
        *field = Some(value.into_owned());
    }
    question
}

/// Show an egress rule
#[utoipa::path(get, path = "/v0/rules/{id}", tag = "rules",
    params(("id" = String, Path, description = "Rule UUID")),
    responses(
        (status = 200, body = RuleData),
        crate::responses::ItemErrors,
    ))]
async fn get_rule(State(app): State<AppState>, Auth(actor): Auth, id: PathId) -> Result<Response, ApiError> {
    actor.require_admin()?;
    let rule = app.domain.get_rule(&actor, uuid_path(id)?).await?;
    Ok(reply::json(StatusCode::OK, &RuleData { data: rule.into() }))
}

/// Update an egress rule
///
/// A partial update: omitted attributes keep their value; `null` or `""` clears one.
#[utoipa::path(patch, path = "/v0/rules/{id}", tag = "rules",
    params(("id" = String, Path, description = "Rule UUID")),
    request_body = crate::wire::RuleEnvelope,
    responses(
        (status = 200, body = RuleData),
        crate::responses::ItemBodyErrors,
    ))]
async fn update_rule(
    State(app): State<AppState>,
    Auth(actor): Auth,
    id: PathId,
    body: JsonObject,
) -> Result<Response, ApiError> {
    actor.require_admin()?;
    let id = uuid_path(id)?;
    let changes: RuleChanges = body.read()?;
    let rule = app.domain.update_rule(&actor, id, &changes).await?;
    Ok(reply::json(StatusCode::OK, &RuleData { data: rule.into() }))
}

/// Update an egress rule (PUT)
///
/// The same partial update as PATCH, as in Firezone.
#[utoipa::path(put, path = "/v0/rules/{id}", tag = "rules",
    params(("id" = String, Path, description = "Rule UUID")),
    request_body = crate::wire::RuleEnvelope,
    responses(
        (status = 200, body = RuleData),
        crate::responses::ItemBodyErrors,
    ))]
async fn replace_rule(state: State<AppState>, auth: Auth, id: PathId, body: JsonObject) -> Result<Response, ApiError> {
    update_rule(state, auth, id, body).await
}

/// Delete an egress rule
#[utoipa::path(delete, path = "/v0/rules/{id}", tag = "rules",
    params(("id" = String, Path, description = "Rule UUID")),
    responses(
        (status = 204, description = "Deleted"),
        crate::responses::ItemErrors,
    ))]
async fn delete_rule(State(app): State<AppState>, Auth(actor): Auth, id: PathId) -> Result<StatusCode, ApiError> {
    actor.require_admin()?;
    app.domain.delete_rule(&actor, uuid_path(id)?).await?;
    Ok(StatusCode::NO_CONTENT)
}
