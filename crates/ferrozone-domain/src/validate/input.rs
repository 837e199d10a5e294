//! The steps every attribute's check shares, and the errors they collect.

use super::IS_INVALID;
use crate::error::{DomainError, Errors};
use crate::input::{Patch, WrongTypes};

/// One validation: the attributes the parser found of a wrong type, and the errors so far.
pub struct Check<'a> {
    wrong_types: &'a WrongTypes,
    errors: Errors,
}

impl<'a> Check<'a> {
    pub fn new(wrong_types: &'a WrongTypes) -> Self {
        Self { wrong_types, errors: Errors::new() }
    }

    pub fn add(&mut self, attribute: &str, message: impl Into<String>) {
        self.errors.add(attribute, message);
    }

    pub fn has(&self, attribute: &str) -> bool {
        self.errors.has(attribute)
    }

    /// `Ok(value)` when nothing was recorded, the errors otherwise.
    pub fn finish<T>(self, value: T) -> Result<T, DomainError> {
        self.errors.finish(value)
    }

    /// Whether `attribute` came with a wrong type; records `is invalid` when it did.
    pub fn wrong_type(&mut self, attribute: &str) -> bool {
        let wrong = self.wrong_types.has(attribute);
        if wrong {
            self.add(attribute, IS_INVALID);
        }
        wrong
    }

    /// Whether `attribute` came with a wrong type, without recording anything.
    pub fn is_wrong_type(&self, attribute: &str) -> bool {
        self.wrong_types.has(attribute)
    }

    /// Whether `attribute` came with a wrong type and a value that counts as present.
    pub fn wrong_type_present(&self, attribute: &str) -> bool {
        self.wrong_types.present(attribute)
    }

    /// Whether the request had `attribute` at all (`null` and a wrong type included).
    pub fn sent<T>(&self, attribute: &str, value: &Patch<T>) -> bool {
        !value.is_absent() || self.is_wrong_type(attribute)
    }

    /// A text attribute, trimmed: `Some(None)` when absent, `null` or blank. `None` when it
    /// is invalid (recorded): of a wrong type, or with a NUL character, which no stored value
    /// may hold (PostgreSQL text cannot).
    pub fn trimmed<'v>(&mut self, attribute: &str, value: Option<&'v str>) -> Option<Option<&'v str>> {
        if self.wrong_type(attribute) {
            return None;
        }
        match value {
            Some(s) if s.contains('\0') => {
                self.add(attribute, IS_INVALID);
                None
            }
            Some(s) => {
                let s = s.trim();
                Some((!s.is_empty()).then_some(s))
            }
            None => Some(None),
        }
    }

    /// A trimmed text of at most `max` characters (`should be at most …` otherwise); blank
    /// is `can't be blank` when `required`, else `""`. An invalid value (recorded) is `""`.
    pub fn bounded_text(&mut self, attribute: &str, value: Option<&str>, max: usize, required: bool) -> String {
        match self.trimmed(attribute, value) {
            Some(Some(text)) if text.chars().count() > max => {
                self.add(attribute, super::at_most(max));
                String::new()
            }
            Some(Some(text)) => text.to_owned(),
            Some(None) if required => {
                self.add(attribute, super::CANT_BE_BLANK);
                String::new()
            }
            Some(None) | None => String::new(),
        }
    }

    /// A switch: `None` when absent or of a wrong type (`null` included; recorded).
    pub fn flag(&mut self, attribute: &str, value: Option<bool>) -> Option<bool> {
        if self.wrong_type(attribute) {
            return None;
        }
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trimmed_strings() {
        let mut wrong = WrongTypes::default();
        wrong.insert("d", true);
        let mut c = Check::new(&wrong);
        assert_eq!(c.trimmed("a", Some("  x ")), Some(Some("x")));
        assert_eq!(c.trimmed("b", Some("  ")), Some(None));
        assert_eq!(c.trimmed("c", None), Some(None));
        assert!(!c.has("a") && !c.has("b") && !c.has("c"));
        assert_eq!(c.trimmed("d", None), None);
        assert_eq!(c.trimmed("nul", Some("a\u{0}b")), None);
        let Err(DomainError::Invalid(e)) = c.finish(()) else { panic!("errors expected") };
        assert_eq!(e.get("d").unwrap(), ["is invalid"]);
        assert_eq!(e.get("nul").unwrap(), ["is invalid"]);
    }

    #[test]
    fn wrong_types_are_sent_and_invalid() {
        let mut wrong = WrongTypes::default();
        wrong.insert("n", false);
        let mut c = Check::new(&wrong);
        assert!(c.sent("n", &Patch::<bool>::Absent) && !c.sent("t", &Patch::<bool>::Absent));
        assert!(c.sent("t", &Patch::<bool>::Null));
        assert_eq!(c.flag("t", Some(true)), Some(true));
        assert_eq!(c.flag("absent", None), None);
        assert!(!c.has("t") && !c.has("absent"));
        assert_eq!(c.flag("n", None), None);
        assert!(c.has("n") && !c.wrong_type_present("n"));
    }
}
