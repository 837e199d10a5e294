//! Reading SCIM bodies: the JSON object a request sends, and its attributes as RFC 7643
//! types them. Attribute names compare whatever their case, and a name may carry its
//! schema's URN (`urn:ietf:params:scim:schemas:core:2.0:User:userName`).

use axum::body::Bytes;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Map, Value};

use crate::error::ScimError;

pub const USER_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:User";
pub const GROUP_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:Group";
pub const LIST_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:ListResponse";
pub const PATCH_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:PatchOp";

/// The request's body as a JSON object: `application/scim+json`, `application/json` or no
/// content type at all.
pub fn object(headers: &HeaderMap, body: &Bytes) -> Result<Map<String, Value>, ScimError> {
    let content_type = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let essence = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    if !matches!(essence.as_str(), "" | "application/scim+json" | "application/json") {
        return Err(ScimError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            None,
            "send the resource as application/scim+json (or application/json)",
        ));
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err(ScimError::invalid_syntax("the body must be a JSON object")),
        Err(e) => Err(ScimError::invalid_syntax(format!("the body is not JSON: {e}"))),
    }
}

/// `name` without the schema URN before it, lower-cased: the key attributes compare by.
pub fn key(name: &str) -> String {
    let bare =
        if name.to_ascii_lowercase().starts_with("urn:") { name.rsplit(':').next().unwrap_or(name) } else { name };
    bare.to_ascii_lowercase()
}

/// The attribute `name` of `object`, whatever its case.
pub fn get<'a>(object: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    object.iter().find(|(k, _)| key(k) == name).map(|(_, v)| v)
}

/// A string attribute: absent or `null` is `None`; blank is `None` too.
pub fn text(object: &Map<String, Value>, name: &str, label: &str) -> Result<Option<String>, ScimError> {
    match get(object, name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => {
            let s = s.trim();
            if s.chars().count() > ferrozone_domain::scim::MAX_TEXT_LEN {
                return Err(ScimError::invalid_value(format!(
                    "`{label}` is longer than {} characters",
                    ferrozone_domain::scim::MAX_TEXT_LEN
                )));
            }
            Ok((!s.is_empty()).then(|| s.to_owned()))
        }
        Some(_) => Err(ScimError::invalid_value(format!("`{label}` must be a string"))),
    }
}

/// A boolean attribute. Directories send `"True"` and `"False"` too (Microsoft Entra ID
/// does, in a PATCH), which mean the same.
pub fn boolean(value: &Value, label: &str) -> Result<bool, ScimError> {
    match value {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s.eq_ignore_ascii_case("true") => Ok(true),
        Value::String(s) if s.eq_ignore_ascii_case("false") => Ok(false),
        _ => Err(ScimError::invalid_value(format!("`{label}` must be true or false"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn attributes_are_found_whatever_their_case_and_schema() {
        let object = json!({"UserName": "a", "urn:ietf:params:scim:schemas:core:2.0:User:externalId": "x"});
        let object = object.as_object().unwrap();
        assert_eq!(text(object, "username", "userName").unwrap().as_deref(), Some("a"));
        assert_eq!(text(object, "externalid", "externalId").unwrap().as_deref(), Some("x"));
        assert!(text(&json!({"userName": 3}).as_object().unwrap().clone(), "username", "userName").is_err());
    }

    #[test]
    fn booleans_may_come_as_strings() {
        assert!(!boolean(&json!("False"), "active").unwrap());
        assert!(boolean(&json!(true), "active").unwrap());
        assert!(boolean(&json!("yes"), "active").is_err());
    }

    #[test]
    fn only_json_bodies_are_read() {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, "application/scim+json; charset=utf-8".parse().unwrap());
        assert!(object(&headers, &Bytes::from_static(b"{\"a\": 1}")).is_ok());
        assert_eq!(object(&headers, &Bytes::from_static(b"[1]")).unwrap_err().scim_type, Some("invalidSyntax"));
        headers.insert(CONTENT_TYPE, "text/plain".parse().unwrap());
        assert_eq!(
            object(&headers, &Bytes::from_static(b"{}")).unwrap_err().status,
            StatusCode::UNSUPPORTED_MEDIA_TYPE
        );
    }
}
