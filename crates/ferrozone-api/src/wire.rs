//! The `/v0` request attributes in JSON, read into the domain's typed input
//! ([`ferrozone_domain::input`]) and described, by the same code, as the request schemas of
//! the OpenAPI document: an attribute the parser reads is one the schema shows.
//!
//! Each attribute is absent, `null` or a value. A value of a JSON type the attribute cannot
//! have is not refused here: it is recorded in the input's `wrong_types`, so that the
//! domain reports it with every other error of the request, in one 422.

mod configuration;
mod devices;
mod gateways;
mod groups;
mod invitations;
mod reader;
mod rules;
mod tokens;
mod users;
mod webhooks;

pub use reader::{Attr, Reader};

use std::borrow::Cow;
use std::marker::PhantomData;

use ferrozone_domain::input::{ConfigurationChanges, NewDevice, NewRule, NewToken, NewUser};
use serde_json::{Map, Value};
use utoipa::openapi::schema::Schema;
use utoipa::openapi::RefOr;
use utoipa::{PartialSchema, ToSchema};

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

/// The attributes of a create, as the OpenAPI document names and describes them (a test
/// per resource holds the update's parser to the same attributes).
pub trait Described: Attributes {
    /// The resource's name in the schemas: `{NAME}Envelope`, `{NAME}Attrs`.
    const NAME: &'static str;
    /// The description of `{NAME}Attrs`.
    const DOC: &'static str;
}

/// The request schema of creates and updates of `T`'s resource: `{KEY: {NAME}Attrs}`,
/// `{NAME}Attrs` being what `T`'s parser reads.
pub struct Envelope<T>(PhantomData<T>);

pub type ConfigurationEnvelope = Envelope<ConfigurationChanges>;
pub type DeviceEnvelope = Envelope<NewDevice>;
pub type GatewayEnvelope = Envelope<ferrozone_domain::service::gateways::NewGateway>;
pub type GroupEnvelope = Envelope<ferrozone_domain::service::groups::GroupInput>;
pub type MemberEnvelope = Envelope<ferrozone_domain::service::groups::MemberInput>;
pub type InvitationEnvelope = Envelope<ferrozone_domain::service::sign_in_links::NewInvitation>;
pub type RuleEnvelope = Envelope<NewRule>;
pub type TokenEnvelope = Envelope<NewToken>;
pub type UserEnvelope = Envelope<NewUser>;
pub type WebhookEnvelope = Envelope<ferrozone_domain::webhook::validate::NewWebhook>;

impl<T: Described> Envelope<T> {
    fn attrs_name() -> String {
        format!("{}Attrs", T::NAME)
    }

    /// The schema of the attributes, from the parser.
    pub(crate) fn attrs() -> Schema {
        Reader::describe(T::DOC, T::read)
    }
}

impl<T: Described> PartialSchema for Envelope<T> {
    fn schema() -> RefOr<Schema> {
        let key = T::KEY;
        reader::envelope(key, &format!("`{{\"{key}\": {{…}}}}`"), &Self::attrs_name())
    }
}

impl<T: Described> ToSchema for Envelope<T> {
    fn name() -> Cow<'static, str> {
        Cow::Owned(format!("{}Envelope", T::NAME))
    }

    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((Self::attrs_name(), RefOr::T(Self::attrs())));
    }
}
