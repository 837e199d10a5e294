//! Paging `GET /v0/users` (and the console's user list): its query and its cursors, of the
//! same form as `/v0/devices`' (the position `(inserted_at, id)` of the last user shown).

use ferrozone_domain::store::{ListedUser, UserQuery};

use crate::cursor;
use crate::error::ApiError;

/// The page size when `limit` is not given.
pub const DEFAULT_LIMIT: u32 = 50;

/// The query of a paged list; `None` when `raw` has none of `limit`, `page_cursor` and
/// `q`: the whole collection, as before paging existed.
pub fn parse_query(raw: &str) -> Result<Option<UserQuery>, ApiError> {
    let mut query = UserQuery { limit: DEFAULT_LIMIT, ..UserQuery::default() };
    let mut paged = false;
    for (key, value) in form_urlencoded::parse(raw.as_bytes()) {
        match key.as_ref() {
            "limit" => match value.parse::<u32>() {
                Ok(n @ 1..=1000) => query.limit = n,
                _ => return Err(bad("`limit` must be an integer from 1 to 1000")),
            },
            "page_cursor" => query.after = Some(cursor::from_query(&value)?),
            "q" => query.email_contains = Some(value.into_owned()),
            _ => continue,
        }
        paged = true;
    }
    Ok(paged.then_some(query))
}

/// The cursor of the page after `users`, unless `users` is the last page (shorter than
/// `limit`).
pub fn next_cursor(users: &[ListedUser], limit: u32) -> Option<String> {
    let last = users.last().filter(|_| users.len() == limit as usize)?;
    Some(cursor::encode(last.user.inserted_at, last.user.id))
}

fn bad(message: &str) -> ApiError {
    ApiError::BadRequest(message.to_owned())
}
