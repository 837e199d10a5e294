//! Request validation: typed input ([`crate::input`]) in, the values to store or
//! per-attribute messages out.

pub mod device;
pub mod input;
pub mod net;
pub mod rule;
pub mod user;

pub const CANT_BE_BLANK: &str = "can't be blank";
pub const IS_INVALID: &str = "is invalid";
pub const TAKEN: &str = "has already been taken";
pub const MUST_NOT_BE_PRESENT: &str = "must not be present";
pub const DUPLICATES: &str = "should not contain duplicates";

pub fn at_least(n: usize) -> String {
    format!("should be at least {n} character(s)")
}

pub fn at_most(n: usize) -> String {
    format!("should be at most {n} character(s)")
}
