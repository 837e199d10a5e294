//! Reading attributes out of a request object.

use serde_json::{Map, Value};

use super::IS_INVALID;
use crate::error::Errors;

/// One attribute of a request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Field<'a> {
    Absent,
    Null,
    Value(&'a Value),
}

pub fn field<'a>(attrs: &'a Map<String, Value>, key: &str) -> Field<'a> {
    match attrs.get(key) {
        None => Field::Absent,
        Some(Value::Null) => Field::Null,
        Some(v) => Field::Value(v),
    }
}

/// A string attribute, trimmed. `Ok(None)` for absent, `null` and blank strings;
/// records `is invalid` for any other JSON type, and for a string with a NUL character
/// (which no stored value may hold: PostgreSQL text cannot).
pub fn trimmed<'a>(attrs: &'a Map<String, Value>, key: &str, errors: &mut Errors) -> Option<Option<&'a str>> {
    match field(attrs, key) {
        Field::Absent => Some(None),
        Field::Null => Some(None),
        Field::Value(Value::String(s)) if !s.contains('\0') => {
            let s = s.trim();
            Some((!s.is_empty()).then_some(s))
        }
        Field::Value(_) => {
            errors.add(key, IS_INVALID);
            None
        }
    }
}

/// A boolean attribute: `Ok(None)` when absent; `null` and non-booleans are `is invalid`.
pub fn boolean(attrs: &Map<String, Value>, key: &str, errors: &mut Errors) -> Option<bool> {
    match field(attrs, key) {
        Field::Absent => None,
        Field::Value(Value::Bool(b)) => Some(*b),
        _ => {
            errors.add(key, IS_INVALID);
            None
        }
    }
}

/// Whether the attribute carries a value that counts as "present" for the
/// `must not be present` rule: anything but absent, `null`, `""` and `[]`.
pub fn is_present(attrs: &Map<String, Value>, key: &str) -> bool {
    match field(attrs, key) {
        Field::Absent | Field::Null => false,
        Field::Value(Value::String(s)) => !s.trim().is_empty(),
        Field::Value(Value::Array(a)) => !a.is_empty(),
        Field::Value(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn trimmed_strings() {
        let a = obj(json!({"a": "  x ", "b": "  ", "c": null, "d": 5, "nul": "a\u{0}b"}));
        let mut e = Errors::new();
        assert_eq!(trimmed(&a, "a", &mut e), Some(Some("x")));
        assert_eq!(trimmed(&a, "b", &mut e), Some(None));
        assert_eq!(trimmed(&a, "c", &mut e), Some(None));
        assert_eq!(trimmed(&a, "z", &mut e), Some(None));
        assert!(e.is_empty());
        assert_eq!(trimmed(&a, "d", &mut e), None);
        assert_eq!(e.get("d").unwrap(), ["is invalid"]);
        assert_eq!(trimmed(&a, "nul", &mut e), None);
        assert_eq!(e.get("nul").unwrap(), ["is invalid"]);
    }

    #[test]
    fn booleans_are_strict() {
        let a = obj(json!({"t": true, "n": null, "s": "true"}));
        let mut e = Errors::new();
        assert_eq!(boolean(&a, "t", &mut e), Some(true));
        assert_eq!(boolean(&a, "absent", &mut e), None);
        assert!(e.is_empty());
        boolean(&a, "n", &mut e);
        boolean(&a, "s", &mut e);
        assert!(e.has("n") && e.has("s"));
    }

    #[test]
    fn presence() {
        let a = obj(json!({"e": [], "s": "", "n": null, "z": 0, "l": ["x"]}));
        assert!(!is_present(&a, "e") && !is_present(&a, "s") && !is_present(&a, "n"));
        assert!(!is_present(&a, "absent"));
        assert!(is_present(&a, "z") && is_present(&a, "l"));
    }
}
