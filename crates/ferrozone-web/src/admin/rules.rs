//! The console's egress rules (docs/web.md, "Rules"): the list with its filters and the
//! default action here; adding, editing and deleting a rule (`form`); Check access
//! (`check`). Each calls the domain use case its `/v0/rules` operation calls.

mod check;
mod form;

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use ferrozone_domain::egress::{lookup_step, parse_destination, Network, Rule, RuleAction, RuleScope};
use ferrozone_domain::input::{ConfigurationChanges, Patch};
use ferrozone_domain::{DomainError, User};
use std::collections::HashMap;
use uuid::Uuid;

use crate::checked_form::CheckedForm;
use crate::page_error::PageError;
use crate::pager::Pager;
use crate::viewer::{AdminViewer, Nav, Section, Viewer};
use crate::{html, query_value, redirect};
use ferrozone_http::AppState;

/// Rules a page shows.
const PAGE: usize = 100;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/admin/rules", get(list))
        .route("/admin/rules/default_action", post(set_default_action))
        .route("/admin/rules/new", get(form::new).post(form::create))
        .route("/admin/rules/{id}", get(form::edit).post(form::update))
        .route("/admin/rules/{id}/delete", post(form::delete))
        .route("/admin/rules/check", get(check::page))
}

/// One rule as the tables show it.
pub(super) struct RuleRow {
    pub id: Uuid,
    /// A user's rule: the user's id and email.
    pub user: Option<(Uuid, String)>,
    /// A group's rule: the group's id and name. Neither: every user.
    pub group: Option<(Uuid, String)>,
    pub destination: String,
    pub accept: bool,
    /// `All`, `TCP` or `UDP`.
    pub protocol: String,
    pub ports: String,
}

impl RuleRow {
    /// The row of `rule`, its user's email from `users` and its group's name from `groups`.
    pub fn new(rule: &Rule, users: &HashMap<Uuid, User>, groups: &GroupNames) -> Self {
        let user = rule.user_id.map(|id| (id, users.get(&id).map_or_else(|| id.to_string(), |u| u.email.clone())));
        let group = rule.group_id.map(|id| (id, groups.get(&id).cloned().unwrap_or_else(|| id.to_string())));
        let (protocol, ports) = match &rule.ports {
            Some(ports) => (ports.port_type.as_str().to_uppercase(), ports.range.clone()),
            None => ("All".to_owned(), "All".to_owned()),
        };
        RuleRow {
            id: rule.id,
            user,
            group,
            destination: rule.destination.clone(),
            accept: rule.action == RuleAction::Accept,
            protocol,
            ports,
        }
    }

    /// What a button acting on the row says after its verb, for screen readers.
    pub fn label(&self) -> String {
        let action = if self.accept { "accept" } else { "drop" };
        format!("{action} {} ({})", self.destination, self.applies_to())
    }

    /// Whose traffic the rule decides, in words.
    pub fn applies_to(&self) -> String {
        match (&self.user, &self.group) {
            (Some((_, email)), _) => email.clone(),
            (None, Some((_, name))) => format!("group {name}"),
            (None, None) => "everyone".to_owned(),
        }
    }
}

/// Group names by id, for the rows of group rules.
pub(super) type GroupNames = HashMap<Uuid, String>;

/// Every group's name (a console lists rules of a few hundred groups at most in a page).
pub(super) async fn group_names(app: &AppState, viewer: &Viewer) -> Result<GroupNames, DomainError> {
    let groups = app.domain.list_groups(viewer.principal()).await?;
    Ok(groups.into_iter().map(|group| (group.id, group.name)).collect())
}

/// The default action as the pages show it.
pub(super) struct DefaultAction {
    pub accept: bool,
    /// The variable or flag that fixes it, if one does.
    pub fixed_by: Option<String>,
}

impl DefaultAction {
    pub fn of(app: &AppState) -> Self {
        let accept = app.domain.current_values().egress_default_action == RuleAction::Accept;
        let fixed_by = app.domain.settings().fixed.variable("egress_default_action").map(str::to_owned);
        DefaultAction { accept, fixed_by }
    }
}

/// The filter as sent (shown again in the form).
#[derive(Default)]
struct Filter {
    /// `all`, `everyone` (global rules only) or a user's email.
    user: String,
    destination: String,
    page: usize,
}

impl Filter {
    fn parse(raw: Option<&str>) -> Self {
        Filter {
            user: query_value(raw, "user").trim().to_owned(),
            destination: query_value(raw, "destination").trim().to_owned(),
            page: query_value(raw, "page").parse().unwrap_or(1).max(1),
        }
    }

    /// The link to page `page` of this filter.
    fn link(&self, page: usize) -> String {
        let mut query = form_urlencoded::Serializer::new(String::new());
        for (name, value) in [("user", &self.user), ("destination", &self.destination)] {
            if !value.is_empty() {
                query.append_pair(name, value);
            }
        }
        if page > 1 {
            query.append_pair("page", &page.to_string());
        }
        match query.finish() {
            q if q.is_empty() => "/admin/rules".to_owned(),
            q => format!("/admin/rules?{q}"),
        }
    }
}

#[derive(askama::Template)]
#[template(path = "admin/rules.html")]
struct ListPage<'a> {
    nav: Nav<'a>,
    filter: &'a Filter,
    default_action: DefaultAction,
    /// Set by the redirect after a change: what was done.
    done: &'static str,
    user_error: Option<&'static str>,
    destination_error: Option<&'static str>,
    rows: Vec<RuleRow>,
    /// Rules matching the filter, on every page.
    total: usize,
    pager: Pager,
}

/// `GET /admin/rules`: every rule, 100 a page, global ones first and then each user's (in
/// the users' creation order), inside each scope in lookup order; filtered by user (an
/// email, or `everyone`) and by destination (an address or network the rule's overlaps).
async fn list(
    State(app): State<AppState>,
    AdminViewer(viewer): AdminViewer,
    RawQuery(raw): RawQuery,
) -> Result<Response, PageError> {
    let filter = Filter::parse(raw.as_deref());
    let done = match query_value(raw.as_deref(), "done").as_str() {
        "created" => "The rule was added.",
        "updated" => "The rule was saved.",
        "deleted" => "The rule was deleted.",
        "default_action" => "The default action was saved.",
        _ => "",
    };
    let mut page = ListPage {
        nav: viewer.nav(Section::AdminRules),
        filter: &filter,
        default_action: DefaultAction::of(&app),
        done,
        user_error: None,
        destination_error: None,
        rows: Vec::new(),
        total: 0,
        pager: Pager::pages(None, None),
    };
    let status = match select(&app, &viewer, &filter, &mut page).await {
        Ok(()) => StatusCode::OK,
        Err(DomainError::NotFound) => StatusCode::NOT_FOUND,
        Err(DomainError::Invalid(_)) => StatusCode::UNPROCESSABLE_ENTITY,
        Err(e) => return Err(e.into()),
    };
    Ok(html::response(status, page))
}

/// Fills `page` with the rules `filter` selects; a filter that names no user or no
/// address is reported at its field.
async fn select(app: &AppState, viewer: &Viewer, filter: &Filter, page: &mut ListPage<'_>) -> Result<(), DomainError> {
    let scope = match filter.user.as_str() {
        "" | "all" => Scope::All,
        "everyone" => Scope::Everyone,
        email => match app.domain.find_user(email).await {
            Ok(user) => Scope::User(user.id),
            Err(DomainError::NotFound) => {
                page.user_error = Some("No user has this email.");
                return Err(DomainError::NotFound);
            }
            Err(e) => return Err(e),
        },
    };
    let destination = match filter.destination.as_str() {
        "" => None,
        text => match parse_destination(text) {
            Some(network) => Some(network),
            None => {
                page.destination_error = Some("Enter an IP address or a network such as 10.0.0.0/8.");
                return Err(DomainError::invalid("destination", "is invalid"));
            }
        },
    };
    let mut rules = app.domain.list_rules(viewer.principal()).await?;
    rules.retain(|rule| scope.holds(rule) && destination.as_ref().is_none_or(|net| overlaps(rule, net)));
    rules.sort_by_key(|rule| (list_order(rule.scope()), lookup_step(rule), rule.id));
    page.total = rules.len();
    let start = (filter.page - 1) * PAGE;
    let shown = rules.get(start..).unwrap_or_default();
    let shown = &shown[..shown.len().min(PAGE)];
    let ids: Vec<Uuid> = shown.iter().filter_map(|rule| rule.user_id).collect();
    let users = app.domain.users_by_id(viewer.principal(), &ids).await?;
    let groups = if shown.iter().any(|rule| rule.group_id.is_some()) {
        group_names(app, viewer).await?
    } else {
        GroupNames::new()
    };
    page.rows = shown.iter().map(|rule| RuleRow::new(rule, &users, &groups)).collect();
    let first = (filter.page > 1).then(|| filter.link(1));
    let next = (start + PAGE < rules.len()).then(|| filter.link(filter.page + 1));
    page.pager = Pager::pages(first, next);
    Ok(())
}

/// Where a scope's rules stand in the list: everyone's first, then each group's, then each
/// user's (groups and users in creation order, as their ids sort).
fn list_order(scope: RuleScope) -> (u8, Option<Uuid>) {
    match scope {
        RuleScope::Everyone => (0, None),
        RuleScope::Group(id) => (1, Some(id)),
        RuleScope::User(id) => (2, Some(id)),
    }
}

/// Which rules the user filter keeps.
enum Scope {
    All,
    Everyone,
    User(Uuid),
}

impl Scope {
    fn holds(&self, rule: &Rule) -> bool {
        match self {
            Scope::All => true,
            Scope::Everyone => rule.scope() == RuleScope::Everyone,
            Scope::User(id) => rule.user_id == Some(*id),
        }
    }
}

fn overlaps(rule: &Rule, network: &Network) -> bool {
    parse_destination(&rule.destination).is_some_and(|destination| destination.overlaps(network))
}

#[derive(serde::Deserialize)]
struct DefaultActionForm {
    action: String,
}

/// `POST /admin/rules/default_action`: `PATCH /v0/configuration` with
/// `egress_default_action` (audited as any change of the configuration).
async fn set_default_action(
    State(app): State<AppState>,
    AdminViewer(viewer): AdminViewer,
    CheckedForm(form): CheckedForm<DefaultActionForm>,
) -> Result<Response, PageError> {
    let Some(action) = RuleAction::parse(&form.action) else {
        return Err(DomainError::invalid("egress_default_action", "must be one of: accept, drop").into());
    };
    let changes = ConfigurationChanges { egress_default_action: Patch::Value(action), ..Default::default() };
    let web = app.web.clone();
    let check = move |providers: &ferrozone_domain::providers::Providers| web.check_providers(providers);
    app.domain.update_configuration(viewer.principal(), &changes, &check).await?;
    Ok(redirect("/admin/rules?done=default_action"))
}
