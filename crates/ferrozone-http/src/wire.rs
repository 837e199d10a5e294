//! The `/v0` request attributes in JSON, read into the domain's typed input
//! ([`ferrozone_domain::input`]) and described, by the same code, as the request schemas of
//! the OpenAPI document: an attribute the parser reads is one the schema shows.
//!
//! Each attribute is absent, `null` or a value. A value of a JSON type the attribute cannot
//! have is not refused here: it is recorded in the input's `wrong_types`, so that the
//! domain reports it with every other error of the request, in one 422.

mod devices;
mod reader;
mod rules;
mod users;

pub use devices::DeviceEnvelope;
pub use reader::{Attr, Reader};
pub use rules::RuleEnvelope;
pub use users::UserEnvelope;

use serde_json::{Map, Value};

/// A domain input that a request body carries as `{KEY: {attributes…}}`.
pub trait Attributes: Sized {
    /// The key the attributes are wrapped under.
    const KEY: &'static str;

    /// Reads the attributes; in [`Reader::describe`], declares them.
    fn read(r: &mut Reader) -> Self;

    fn parse(attrs: Map<String, Value>) -> Self {
        Reader::parse(attrs, Self::read)
    }
}
