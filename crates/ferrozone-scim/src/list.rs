//! Lists (RFC 7644 section 3.4.2): `filter`, and pages by `startIndex` (from 1) and
//! `count` (at most [`MAX_PAGE`], [`DEFAULT_PAGE`] when not given; 0 answers only the
//! total), answered as a `ListResponse`.

use axum::extract::rejection::QueryRejection;
use axum::extract::Query;
use axum::http::StatusCode;
use axum::response::Response;
use ferrozone_domain::scim::{Page, DEFAULT_PAGE, MAX_PAGE};
use serde::Serialize;
use std::collections::HashMap;

use crate::error::ScimError;
use crate::reply;
use crate::resource::LIST_SCHEMA;

/// A list's query parameters, by their names whatever their case.
pub struct ListQuery {
    pub filter: Option<String>,
    pub start_index: u64,
    pub count: u32,
    /// `excludedAttributes` names `members` (a group list without its members).
    pub without_members: bool,
}

impl ListQuery {
    pub fn page(&self) -> Page {
        Page { start_index: self.start_index, count: self.count }
    }
}

pub fn query(query: Result<Query<HashMap<String, String>>, QueryRejection>) -> Result<ListQuery, ScimError> {
    let Query(params) = query.map_err(|_| ScimError::invalid_value("the query string cannot be read"))?;
    let param = |name: &str| params.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.trim());
    let number = |name: &str| -> Result<Option<i64>, ScimError> {
        param(name)
            .filter(|v| !v.is_empty())
            .map(|v| v.parse::<i64>().map_err(|_| ScimError::invalid_value(format!("`{name}` must be an integer"))))
            .transpose()
    };
    // Below 1 is 1; a negative count is 0 (RFC 7644 section 3.4.2.4).
    let start_index = number("startIndex")?.map_or(1, |n| n.max(1)) as u64;
    let count = number("count")?.map_or(DEFAULT_PAGE, |n| n.clamp(0, i64::from(MAX_PAGE)) as u32);
    let excluded = param("excludedAttributes").unwrap_or("");
    let without_members = excluded.split(',').any(|name| crate::resource::key(name.trim()) == "members");
    Ok(ListQuery { filter: param("filter").map(str::to_owned), start_index, count, without_members })
}

/// A `ListResponse` of `resources`, written as they are.
pub fn reply<T: Serialize>(total: u64, page: Page, resources: &[T]) -> Response {
    let body = ListResponse {
        schemas: [LIST_SCHEMA],
        total_results: total,
        start_index: page.start_index,
        items_per_page: resources.len(),
        resources,
    };
    reply::scim_json(StatusCode::OK, &body)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ListResponse<'a, T> {
    schemas: [&'static str; 1],
    total_results: u64,
    start_index: u64,
    items_per_page: usize,
    #[serde(rename = "Resources")]
    resources: &'a [T],
}
