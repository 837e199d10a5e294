//! The `filter` query parameter (RFC 7644 section 3.4.2.2), as far as directories use it to
//! find a resource: one comparison `<attribute> eq <value>`. Attribute names and the
//! operator compare whatever their case; the value is JSON (a quoted string, mostly). Any
//! other filter is 400 `invalidFilter`, naming what is supported.

use ferrozone_domain::model::email_key;
use ferrozone_domain::scim::{text_key, user_name_key, GroupFilter, UserFilter};
use serde_json::Value;
use uuid::Uuid;

use crate::error::ScimError;

/// `attribute eq value`, the attribute lower-cased.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Equals {
    pub attribute: String,
    pub value: Value,
}

const USER_FILTERS: &str = "`userName`, `externalId`, `displayName`, `id` or `emails.value`";
const GROUP_FILTERS: &str = "`displayName`, `externalId` or `id`";

pub fn users(filter: Option<&str>) -> Result<UserFilter, ScimError> {
    let Some(Equals { attribute, value }) = parse(filter, USER_FILTERS)? else { return Ok(UserFilter::All) };
    let text = text_value(&value, &attribute)?;
    Ok(match attribute.as_str() {
        "username" => UserFilter::UserName(user_name_key(&text)),
        "externalid" => UserFilter::ExternalId(text),
        "displayname" => UserFilter::DisplayName(text_key(&text)),
        "emails" | "emails.value" => UserFilter::Email(email_key(&text)),
        "id" => Uuid::parse_str(&text).map(UserFilter::Id).unwrap_or(UserFilter::Id(Uuid::nil())),
        _ => return Err(unsupported(USER_FILTERS)),
    })
}

pub fn groups(filter: Option<&str>) -> Result<GroupFilter, ScimError> {
    let Some(Equals { attribute, value }) = parse(filter, GROUP_FILTERS)? else { return Ok(GroupFilter::All) };
    let text = text_value(&value, &attribute)?;
    Ok(match attribute.as_str() {
        "displayname" => GroupFilter::DisplayName(ferrozone_domain::group::name_key(text.trim())),
        "externalid" => GroupFilter::ExternalId(text),
        "id" => Uuid::parse_str(&text).map(GroupFilter::Id).unwrap_or(GroupFilter::Id(Uuid::nil())),
        _ => return Err(unsupported(GROUP_FILTERS)),
    })
}

fn unsupported(supported: &str) -> ScimError {
    ScimError::invalid_filter(format!("the filters supported are `eq` on {supported}, as `userName eq \"alice\"`"))
}

fn text_value(value: &Value, attribute: &str) -> Result<String, ScimError> {
    match value {
        Value::String(text) => Ok(text.clone()),
        _ => Err(ScimError::invalid_filter(format!("`{attribute}` compares with a quoted string"))),
    }
}

/// The comparison `filter` makes, or `None` without a filter.
pub(crate) fn parse(filter: Option<&str>, supported: &str) -> Result<Option<Equals>, ScimError> {
    let Some(filter) = filter.map(str::trim).filter(|f| !f.is_empty()) else { return Ok(None) };
    let (attribute, rest) = filter.split_once(char::is_whitespace).ok_or_else(|| unsupported(supported))?;
    let (operator, value) = rest.trim_start().split_once(char::is_whitespace).ok_or_else(|| unsupported(supported))?;
    if !operator.eq_ignore_ascii_case("eq") {
        return Err(unsupported(supported));
    }
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | ':' | '_' | '-' | '$');
    if attribute.is_empty() || !attribute.chars().all(plain) {
        return Err(unsupported(supported));
    }
    let value: Value = serde_json::from_str(value.trim())
        .map_err(|_| ScimError::invalid_filter("the value of a filter is JSON: a quoted string, as \"alice\""))?;
    // A schema's URN before the attribute (`urn:…:User:userName`) names the same attribute.
    let attribute = attribute.rsplit(':').next().unwrap_or(attribute).to_ascii_lowercase();
    Ok(Some(Equals { attribute, value }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_find_users_by_one_attribute() {
        assert_eq!(
            users(Some("userName eq \"Alice@Example.com\"")).unwrap(),
            UserFilter::UserName("alice@example.com".into())
        );
        assert_eq!(users(Some("externalId EQ \"00u1\"")).unwrap(), UserFilter::ExternalId("00u1".into()));
        assert_eq!(users(Some("displayName eq \"Alice A\"")).unwrap(), UserFilter::DisplayName("alice a".into()));
        let urn = "urn:ietf:params:scim:schemas:core:2.0:User:userName eq \"a\"";
        assert_eq!(users(Some(urn)).unwrap(), UserFilter::UserName("a".into()));
        assert_eq!(users(Some("emails.value eq \"A@x\"")).unwrap(), UserFilter::Email("a@x".into()));
        assert_eq!(users(None).unwrap(), UserFilter::All);
        assert_eq!(users(Some("  ")).unwrap(), UserFilter::All);
        assert_eq!(users(Some("id eq \"not-a-uuid\"")).unwrap(), UserFilter::Id(Uuid::nil()), "finds nothing");
        assert_eq!(
            users(Some("userName eq \"with \\\"quotes\\\" and spaces\"")).unwrap(),
            UserFilter::UserName("with \"quotes\" and spaces".into())
        );
    }

    #[test]
    fn other_filters_are_refused_naming_what_works() {
        for filter in [
            "userName co \"a\"",
            "title eq \"x\"",
            "userName eq a",
            "userName",
            "userName eq \"a\" and x eq \"b\"",
            "userName eq 1",
        ] {
            let error = users(Some(filter)).unwrap_err();
            assert_eq!((error.status.as_u16(), error.scim_type), (400, Some("invalidFilter")), "{filter}");
        }
        assert_eq!(groups(Some("displayName eq \"Eng\"")).unwrap(), GroupFilter::DisplayName("eng".into()));
        assert!(groups(Some("userName eq \"a\"")).is_err());
    }
}
