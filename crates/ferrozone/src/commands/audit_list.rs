//! `ferrozone audit list`: the audit log, newest first, with the filters of
//! `GET /v0/audit_events`; one line per event, or JSON lines (`--json`).

use anyhow::bail;
use clap::Args;
use ferrozone_domain::audit::{ActorKind, AuditEvent, AuditQuery, Change, EventView};
use ferrozone_domain::{Principal, Timestamp};

use super::explain::explain;
use crate::config::Config;
use crate::startup::open_domain;

/// The largest `--limit`, as the API's.
const MAX_LIMIT: u32 = 500;

/// The filters of `ferrozone audit list`.
#[derive(Debug, Clone, Args)]
pub struct ListArgs {
    /// How many events to print, 1 to 500, newest first.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=MAX_LIMIT as i64))]
    pub limit: u32,
    /// Only events of actions on behalf of this user (email or id).
    #[arg(long)]
    pub user: Option<String>,
    /// Only events by this kind of actor: token, session, user, cli, provider, system, anonymous.
    #[arg(long, value_parser = actor_kind)]
    pub actor_kind: Option<ActorKind>,
    /// Only events about this kind of thing (device, user, token, …).
    #[arg(long)]
    pub subject_kind: Option<String>,
    /// Only events about the thing with this id.
    #[arg(long)]
    pub subject_id: Option<String>,
    /// An action (`device.created`), or a kind of action (`device.`).
    #[arg(long)]
    pub action: Option<String>,
    /// Only events at or after this time (RFC 3339).
    #[arg(long, value_parser = time)]
    pub since: Option<Timestamp>,
    /// Only events before this time (RFC 3339).
    #[arg(long, value_parser = time)]
    pub until: Option<Timestamp>,
    /// Print each event as one line of JSON, as the API shows it.
    #[arg(long)]
    pub json: bool,
}

fn actor_kind(text: &str) -> Result<ActorKind, String> {
    ActorKind::parse(text)
        .ok_or_else(|| "one of token, session, user, cli, provider, system, scim, anonymous".to_owned())
}

fn time(text: &str) -> Result<Timestamp, String> {
    Timestamp::parse_rfc3339(text).ok_or_else(|| "an RFC 3339 time, as 2026-11-22T10:04:05Z".to_owned())
}

pub async fn list(config: &Config, args: ListArgs) -> anyhow::Result<()> {
    let domain = open_domain(config).await?;
    let operator = Principal::operator();
    let actor_user_id = match &args.user {
        Some(key) => match domain.find_user(key).await {
            Ok(user) => Some(user.id),
            Err(ferrozone_domain::DomainError::NotFound) => bail!("no user {key}"),
            Err(e) => return Err(explain(e, "the user")),
        },
        None => None,
    };
    let query = AuditQuery {
        actor_kind: args.actor_kind,
        actor_user_id,
        subject_kind: args.subject_kind,
        subject_id: args.subject_id,
        action: args.action,
        since: args.since,
        until: args.until,
        limit: args.limit,
        ..AuditQuery::default()
    };
    let page = domain.audit_events(&operator, &query).await.map_err(|e| explain(e, "the audit log"))?;
    for event in page.events {
        if args.json {
            println!("{}", serde_json::to_string(&EventView::from(event))?);
        } else {
            println!("{}", line(&event));
        }
    }
    Ok(())
}

/// `seq  at  actor  action  subject  changes  origin`, tab-separated.
fn line(event: &AuditEvent) -> String {
    let e = &event.event;
    let actor = match (&e.actor.id, e.actor.user_id) {
        (_, Some(user)) => format!("{}:{user}", e.actor.kind.as_str()),
        (Some(id), None) => format!("{}:{id}", e.actor.kind.as_str()),
        (None, None) => e.actor.kind.as_str().to_owned(),
    };
    let subject = e.subject.id.as_ref().map_or_else(|| e.subject.kind.clone(), |id| format!("{}:{id}", e.subject.kind));
    let changes: Vec<String> = e.changes.iter().map(change).collect();
    let changes = if changes.is_empty() { "-".to_owned() } else { changes.join(",") };
    let origin = e.origin.client_address.as_deref().unwrap_or("-");
    format!("{}\t{}\t{actor}\t{}\t{subject}\t{changes}\tfrom:{origin}", event.seq, e.at, e.action)
}

/// `field` alone for a secret (never its value), else `field=before->after`.
fn change(change: &Change) -> String {
    let value = |v: &Option<serde_json::Value>| v.as_ref().map_or_else(|| "-".to_owned(), |v| v.to_string());
    if change.secret {
        format!("{}(secret)", change.field)
    } else {
        format!("{}={}->{}", change.field, value(&change.before), value(&change.after))
    }
}
