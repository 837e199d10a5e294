//! `PATCH` (RFC 7644 section 3.5.2): a list of `add`, `replace` and `remove` operations,
//! each with an optional `path`. A user's patch is applied onto the user as SCIM shows it,
//! and the result is then read as a replace would read it, so that both check alike; a
//! group's patch becomes its changes ([`crate::groups`]).
//!
//! What directories send is accepted as they send it: operation names in any case
//! (`"Replace"`), booleans as strings (`"False"`), a `remove` of members that lists them in
//! its `value` (Microsoft Entra ID), an `add` or `replace` without a path whose value holds
//! the attributes, keyed by paths (`{"name.givenName": "Alice"}`). Attributes Ferrozone does
//! not keep (titles, addresses, the enterprise extension) are ignored, as RFC 7644 allows.

use serde_json::{Map, Value};

use crate::error::ScimError;
use crate::filter::{self, Equals};
use crate::resource::{self, key};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Add,
    Replace,
    Remove,
}

/// A path: `attribute`, `attribute.sub`, `attribute[filter]` or `attribute[filter].sub`,
/// each name as [`key`] makes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Path {
    pub attribute: String,
    pub filter: Option<Equals>,
    pub sub: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Operation {
    pub op: Op,
    pub path: Option<Path>,
    pub value: Option<Value>,
}

/// The most operations one request may carry.
const MAX_OPERATIONS: usize = 1000;

/// The operations of a `PatchOp` body.
pub fn operations(body: &Map<String, Value>) -> Result<Vec<Operation>, ScimError> {
    if let Some(Value::Array(schemas)) = resource::get(body, "schemas") {
        if !schemas.iter().any(|s| s.as_str().is_some_and(|s| s.eq_ignore_ascii_case(resource::PATCH_SCHEMA))) {
            return Err(ScimError::invalid_syntax(format!("a PATCH body has the schema {}", resource::PATCH_SCHEMA)));
        }
    }
    let Some(Value::Array(list)) = resource::get(body, "operations") else {
        return Err(ScimError::invalid_syntax("a PATCH sends `Operations`: a list of add, replace and remove"));
    };
    if list.len() > MAX_OPERATIONS {
        return Err(ScimError::invalid_value(format!("at most {MAX_OPERATIONS} operations in one PATCH")));
    }
    list.iter().map(operation).collect()
}

fn operation(value: &Value) -> Result<Operation, ScimError> {
    let Value::Object(object) = value else { return Err(ScimError::invalid_syntax("each operation is an object")) };
    let op = match resource::get(object, "op").and_then(Value::as_str).map(str::to_ascii_lowercase).as_deref() {
        Some("add") => Op::Add,
        Some("replace") => Op::Replace,
        Some("remove") => Op::Remove,
        _ => return Err(ScimError::invalid_syntax("an operation's `op` is add, replace or remove")),
    };
    let path = match resource::get(object, "path") {
        None | Some(Value::Null) => None,
        Some(Value::String(p)) if p.trim().is_empty() => None,
        Some(Value::String(p)) => Some(parse_path(p)?),
        Some(_) => return Err(ScimError::invalid_path("`path` must be a string")),
    };
    let value = resource::get(object, "value").cloned().filter(|v| !v.is_null());
    if op != Op::Remove && value.is_none() {
        return Err(ScimError::invalid_value("an add or a replace needs a `value`"));
    }
    if op == Op::Remove && path.is_none() {
        return Err(ScimError::new(axum::http::StatusCode::BAD_REQUEST, Some("noTarget"), "a remove needs a `path`"));
    }
    Ok(Operation { op, path, value })
}

/// Reads `attribute[filter].sub`, after the schema URN if there is one.
pub fn parse_path(text: &str) -> Result<Path, ScimError> {
    let text = text.trim();
    let bracket = text.find('[');
    let head_end = bracket.unwrap_or(text.len());
    let head = &text[..head_end];
    // The URN ends at its last colon before any filter.
    let head =
        if head.to_ascii_lowercase().starts_with("urn:") { head.rsplit(':').next().unwrap_or(head) } else { head };
    let (attribute, mut sub) = match head.split_once('.') {
        Some((attribute, sub)) => (attribute, Some(sub.to_ascii_lowercase())),
        None => (head, None),
    };
    let mut filter = None;
    if let Some(open) = bracket {
        let close = text.rfind(']').filter(|close| *close > open).ok_or_else(|| bad_path(text))?;
        let inside = &text[open + 1..close];
        filter = filter::parse(Some(inside), "a sub-attribute").map_err(|_| bad_path(text))?;
        let rest = &text[close + 1..];
        if let Some(after) = rest.strip_prefix('.') {
            sub = Some(after.to_ascii_lowercase());
        } else if !rest.is_empty() {
            return Err(bad_path(text));
        }
        if filter.is_none() || sub.as_deref().is_some_and(|s| s.contains('.')) {
            return Err(bad_path(text));
        }
    }
    let plain = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if !plain(attribute) || sub.as_deref().is_some_and(|s| !plain(s)) {
        return Err(bad_path(text));
    }
    Ok(Path { attribute: attribute.to_ascii_lowercase(), filter, sub })
}

fn bad_path(text: &str) -> ScimError {
    ScimError::invalid_path(format!(
        "`{text}` is not a path: attribute, attribute.sub or attribute[sub eq \"value\"].sub"
    ))
}

/// Whether `element` (an object of a multi-valued attribute) matches `filter`, whatever the
/// case of its names and of a string value (`type eq "Work"` finds `"work"`).
pub fn matches(element: &Value, filter: &Equals) -> bool {
    let Value::Object(object) = element else { return false };
    match (resource::get(object, &filter.attribute), &filter.value) {
        (Some(Value::String(a)), Value::String(b)) => a.eq_ignore_ascii_case(b),
        (Some(found), Value::Bool(b)) => resource::boolean(found, "").is_ok_and(|f| f == *b),
        (Some(found), wanted) => found == wanted,
        (None, Value::Bool(false)) => true,
        (None, _) => false,
    }
}

/// Applies `operations` onto `resource`, a user as SCIM shows it (its attributes under
/// their canonical names: [`canonical`] knows them).
pub fn apply(resource: &mut Map<String, Value>, operations: &[Operation]) -> Result<(), ScimError> {
    for operation in operations {
        match &operation.path {
            Some(path) => apply_at(resource, operation.op, path, operation.value.as_ref())?,
            None => {
                let Some(Value::Object(values)) = &operation.value else {
                    return Err(ScimError::invalid_value("an add or a replace without a path has an object value"));
                };
                for (name, value) in values {
                    let path = parse_path(name)?;
                    apply_at(resource, operation.op, &path, Some(value))?;
                }
            }
        }
    }
    Ok(())
}

/// The canonical name of an attribute Ferrozone keeps, by its [`key`]; `None` for others.
fn canonical(key: &str) -> Option<&'static str> {
    Some(match key {
        "username" => "userName",
        "externalid" => "externalId",
        "displayname" => "displayName",
        "active" => "active",
        "name" => "name",
        "givenname" => "givenName",
        "familyname" => "familyName",
        "formatted" => "formatted",
        "emails" => "emails",
        "value" => "value",
        "type" => "type",
        "primary" => "primary",
        _ => return None,
    })
}

fn apply_at(resource: &mut Map<String, Value>, op: Op, path: &Path, value: Option<&Value>) -> Result<(), ScimError> {
    let Some(attribute) = canonical(&path.attribute) else { return Ok(()) };
    let sub = match path.sub.as_deref().map(canonical) {
        Some(None) => return Ok(()),
        Some(Some(sub)) => Some(sub),
        None => None,
    };
    if let Some(filter) = &path.filter {
        return apply_filtered(resource, op, attribute, filter, sub, value);
    }
    match (sub, op) {
        (None, Op::Remove) => {
            resource.remove(attribute);
        }
        (None, op) => set(resource, attribute, op, value.cloned().unwrap_or(Value::Null)),
        (Some(sub), op) => {
            let entry = resource.entry(attribute).or_insert_with(|| Value::Object(Map::new()));
            if !entry.is_object() {
                *entry = Value::Object(Map::new());
            }
            let Value::Object(inner) = entry else { unreachable!("made an object above") };
            match op {
                Op::Remove => {
                    inner.remove(sub);
                }
                op => set(inner, sub, op, value.cloned().unwrap_or(Value::Null)),
            }
        }
    }
    Ok(())
}

/// Sets `attribute` to `value`: an `add` appends to a list and merges into an object.
fn set(object: &mut Map<String, Value>, attribute: &str, op: Op, value: Value) {
    match (op, object.get_mut(attribute), value) {
        (Op::Add, Some(Value::Array(list)), Value::Array(more)) => list.extend(more),
        (Op::Add, Some(Value::Object(existing)), Value::Object(more)) => existing.extend(more),
        (_, _, Value::Object(fields)) if attribute == "name" => {
            // Sub-attributes under their canonical names.
            let fields = fields.into_iter().filter_map(|(k, v)| canonical(&key(&k)).map(|k| (k.to_owned(), v)));
            object.insert(attribute.to_owned(), Value::Object(fields.collect()));
        }
        (_, _, value) => {
            object.insert(attribute.to_owned(), value);
        }
    }
}

/// An operation on the elements of a multi-valued attribute that match `filter`
/// (`emails[type eq "work"].value`). An add or a replace that matches none makes the
/// element, with the filter's attribute set.
fn apply_filtered(
    resource: &mut Map<String, Value>,
    op: Op,
    attribute: &str,
    filter: &Equals,
    sub: Option<&str>,
    value: Option<&Value>,
) -> Result<(), ScimError> {
    let list = resource.entry(attribute).or_insert_with(|| Value::Array(Vec::new()));
    if !list.is_array() {
        *list = Value::Array(Vec::new());
    }
    let Value::Array(elements) = list else { unreachable!("made a list above") };
    if op == Op::Remove {
        match sub {
            None => elements.retain(|element| !matches(element, filter)),
            Some(sub) => elements.iter_mut().filter(|e| matches(e, filter)).for_each(|element| {
                if let Value::Object(object) = element {
                    object.remove(sub);
                }
            }),
        }
        return Ok(());
    }
    let value = value.cloned().unwrap_or(Value::Null);
    if !elements.iter().any(|element| matches(element, filter)) {
        let mut made = Map::new();
        if let Some(name) = canonical(&filter.attribute) {
            made.insert(name.to_owned(), filter.value.clone());
        }
        elements.push(Value::Object(made));
    }
    for element in elements.iter_mut().filter(|element| matches(element, filter)) {
        let Value::Object(object) = element else { continue };
        match (sub, &value) {
            (Some(sub), value) => {
                object.insert(sub.to_owned(), value.clone());
            }
            (None, Value::Object(fields)) => {
                object.extend(fields.iter().filter_map(|(k, v)| canonical(&key(k)).map(|k| (k.to_owned(), v.clone()))));
            }
            (None, _) => return Err(ScimError::invalid_value(format!("`{attribute}[…]` takes an object"))),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ops(body: Value) -> Vec<Operation> {
        operations(body.as_object().unwrap()).unwrap()
    }

    fn patched(resource: Value, body: Value) -> Value {
        let mut resource = resource.as_object().unwrap().clone();
        apply(&mut resource, &ops(body)).unwrap();
        Value::Object(resource)
    }

    #[test]
    fn paths_name_attributes_sub_attributes_and_filtered_elements() {
        let path = parse_path("emails[type eq \"work\"].value").unwrap();
        assert_eq!((path.attribute.as_str(), path.sub.as_deref()), ("emails", Some("value")));
        assert_eq!(path.filter.unwrap().value, json!("work"));
        let path = parse_path("urn:ietf:params:scim:schemas:core:2.0:User:name.givenName").unwrap();
        assert_eq!((path.attribute.as_str(), path.sub.as_deref()), ("name", Some("givenname")));
        assert_eq!(parse_path("members[value eq \"a:b\"]").unwrap().filter.unwrap().value, json!("a:b"));
        for bad in ["emails[type eq \"work\"", "a b", "emails[]", "emails[type eq \"w\"]x", "a.b.c"] {
            assert_eq!(parse_path(bad).unwrap_err().scim_type, Some("invalidPath"), "{bad}");
        }
    }

    #[test]
    fn entra_deactivates_with_a_capitalised_op_and_a_string_boolean() {
        let body = json!({"schemas": [crate::resource::PATCH_SCHEMA], "Operations": [
            {"op": "Replace", "path": "active", "value": "False"}]});
        let user = patched(json!({"userName": "a", "active": true}), body);
        assert!(!crate::resource::boolean(&user["active"], "active").unwrap());
    }

    #[test]
    fn okta_replaces_without_a_path() {
        let body = json!({"Operations": [{"op": "replace", "value": {"active": false, "name.givenName": "Al"}}]});
        let user = patched(json!({"userName": "a", "active": true, "name": {"givenName": "A"}}), body);
        assert_eq!((user["active"].clone(), user["name"]["givenName"].clone()), (json!(false), json!("Al")));
    }

    #[test]
    fn a_filtered_path_changes_the_matching_email_or_makes_it() {
        let body = json!({"Operations": [{"op": "replace", "path": "emails[type eq \"work\"].value", "value": "b@x"}]});
        let user = patched(json!({"emails": [{"value": "a@x", "type": "work", "primary": true}]}), body.clone());
        assert_eq!(user["emails"], json!([{"value": "b@x", "type": "work", "primary": true}]));
        let user = patched(json!({"userName": "a"}), body);
        assert_eq!(user["emails"], json!([{"type": "work", "value": "b@x"}]));
    }

    #[test]
    fn attributes_not_kept_are_ignored_and_removes_remove() {
        let body = json!({"Operations": [
            {"op": "add", "path": "title", "value": "Boss"},
            {"op": "replace", "path": "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department", "value": "R&D"},
            {"op": "remove", "path": "displayName"},
            {"op": "remove", "path": "name.familyName"}]});
        let user =
            patched(json!({"userName": "a", "displayName": "A", "name": {"familyName": "F", "givenName": "G"}}), body);
        assert_eq!(user, json!({"userName": "a", "name": {"givenName": "G"}}));
    }

    #[test]
    fn malformed_operations_are_refused() {
        for body in [
            json!({}),
            json!({"Operations": [{"op": "move", "path": "a"}]}),
            json!({"Operations": [{"op": "add", "path": "a"}]}),
            json!({"Operations": [{"op": "remove"}]}),
            json!({"Operations": [1]}),
        ] {
            assert!(operations(body.as_object().unwrap()).is_err(), "{body}");
        }
    }
}
