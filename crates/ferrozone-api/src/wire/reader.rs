//! Reading attributes of each JSON type, and describing them.

use std::collections::BTreeMap;

use ferrozone_domain::input::{Patch, WrongTypes};
use ferrozone_domain::Role;
use serde_json::{Map, Value};
use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Schema, SchemaType, Type};
use utoipa::openapi::{KnownFormat, RefOr, SchemaFormat};
use zeroize::Zeroizing;

/// One attribute: its name and what the schema says of it.
pub struct Attr {
    pub name: &'static str,
    pub doc: Option<&'static str>,
    /// The least and the greatest value of an integer, for the schema (the domain checks).
    pub range: Option<(i64, i64)>,
}

impl Attr {
    pub const fn new(name: &'static str) -> Self {
        Self { name, doc: None, range: None }
    }

    pub const fn range(self, min: i64, max: i64) -> Self {
        Self { range: Some((min, max)), ..self }
    }

    pub const fn doc(self, doc: &'static str) -> Self {
        Self { doc: Some(doc), ..self }
    }
}

/// Reads the attributes of one request, or (in [`Reader::describe`]) collects their schemas:
/// then every attribute reads as absent.
pub struct Reader {
    /// The attributes not read yet; `None` when describing.
    attrs: Option<Map<String, Value>>,
    wrong_types: WrongTypes,
    schemas: BTreeMap<&'static str, Schema>,
}

impl Reader {
    /// Reads `attrs` with `read`, which takes each value out (no copy).
    pub fn parse<T>(attrs: Map<String, Value>, read: impl FnOnce(&mut Reader) -> T) -> T {
        read(&mut Reader { attrs: Some(attrs), wrong_types: WrongTypes::default(), schemas: BTreeMap::new() })
    }

    /// The object schema of the attributes `read` reads, described as `doc`.
    pub fn describe<T>(doc: &str, read: impl FnOnce(&mut Reader) -> T) -> Schema {
        let mut r = Reader { attrs: None, wrong_types: WrongTypes::default(), schemas: BTreeMap::new() };
        read(&mut r);
        let object = r.schemas.into_iter().fold(ObjectBuilder::new(), |o, (name, schema)| o.property(name, schema));
        Schema::Object(object.description(Some(doc)).build())
    }

    /// The attributes read so far that had a wrong JSON type.
    pub fn wrong_types(&mut self) -> WrongTypes {
        std::mem::take(&mut self.wrong_types)
    }

    /// A string.
    pub fn text(&mut self, attr: &Attr) -> Patch<String> {
        self.read(attr, nullable(Type::String), string)
    }

    /// A string the schema shows as a UUID; the domain checks it.
    pub fn uuid_text(&mut self, attr: &Attr) -> Patch<String> {
        let schema = nullable(Type::String).format(Some(SchemaFormat::KnownFormat(KnownFormat::Uuid)));
        self.read(attr, schema, string)
    }

    /// A string that is a secret (a password).
    pub fn secret(&mut self, attr: &Attr) -> Patch<Zeroizing<String>> {
        self.read(attr, nullable(Type::String), |v| string(v).map(Zeroizing::new))
    }

    /// `admin` or `unprivileged`; any other value is of a wrong type.
    pub fn role(&mut self, attr: &Attr) -> Patch<Role> {
        self.read(attr, nullable(Type::String), |v| v.as_str().and_then(Role::parse))
    }

    /// An integer (a JSON number without a fraction, within 64 bits).
    pub fn integer(&mut self, attr: &Attr) -> Patch<i64> {
        let mut schema = nullable(Type::Integer).format(Some(SchemaFormat::KnownFormat(KnownFormat::Int32)));
        if let Some((min, max)) = attr.range {
            schema = schema.minimum(Some(min)).maximum(Some(max));
        }
        self.read(attr, schema, |v| v.as_i64())
    }

    /// A boolean, absent, `null` or a value.
    pub fn switch(&mut self, attr: &Attr) -> Patch<bool> {
        self.read(attr, nullable(Type::Boolean), |v| v.as_bool())
    }

    /// One of the strings of `values`, each naming its value; any other string is of a
    /// wrong type.
    pub fn choice<T: Copy>(&mut self, attr: &Attr, values: &[(&'static str, T)]) -> Patch<T> {
        let names = values.iter().map(|(name, _)| Value::from(*name)).chain([Value::Null]);
        let schema = nullable(Type::String).enum_values(Some(names));
        self.read(attr, schema, |v| {
            let sent = v.as_str()?;
            values.iter().find(|(name, _)| *name == sent).map(|(_, value)| *value)
        })
    }

    /// A list of JSON objects, each as sent (the domain checks them).
    pub fn objects(&mut self, attr: &Attr) -> Patch<Vec<Value>> {
        let mut schema = ArrayBuilder::new()
            .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
            .items(ObjectBuilder::new().schema_type(Type::Object));
        if let Some(doc) = attr.doc {
            schema = schema.description(Some(doc));
        }
        self.declare(attr, Schema::Array(schema.build()));
        self.value(attr, |v| match v {
            Value::Array(items) => Some(items),
            _ => None,
        })
    }

    /// A boolean; `null` is of a wrong type.
    pub fn flag(&mut self, attr: &Attr) -> Option<bool> {
        match self.switch(attr) {
            Patch::Absent => None,
            Patch::Null => {
                self.wrong_types.insert(attr.name, false);
                None
            }
            Patch::Value(b) => Some(b),
        }
    }

    /// A list of strings. An entry that is not a string is read as an empty one, which no
    /// list accepts: the domain reports it `is invalid` in its place among the entries.
    pub fn list(&mut self, attr: &Attr) -> Patch<Vec<String>> {
        let mut schema = ArrayBuilder::new()
            .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
            .items(ObjectBuilder::new().schema_type(Type::String));
        if let Some(doc) = attr.doc {
            schema = schema.description(Some(doc));
        }
        self.declare(attr, Schema::Array(schema.build()));
        self.value(attr, |v| match v {
            Value::Array(entries) => Some(entries.into_iter().map(|e| string(e).unwrap_or_default()).collect()),
            _ => None,
        })
    }

    fn read<T>(&mut self, attr: &Attr, schema: ObjectBuilder, value: impl FnOnce(Value) -> Option<T>) -> Patch<T> {
        self.declare(attr, Schema::Object(schema.description(attr.doc).build()));
        self.value(attr, value)
    }

    fn declare(&mut self, attr: &Attr, schema: Schema) {
        if self.attrs.is_none() {
            self.schemas.insert(attr.name, schema);
        }
    }

    fn value<T>(&mut self, attr: &Attr, read: impl FnOnce(Value) -> Option<T>) -> Patch<T> {
        match self.attrs.as_mut().and_then(|attrs| attrs.remove(attr.name)) {
            None => Patch::Absent,
            Some(Value::Null) => Patch::Null,
            Some(v) => {
                let present = is_present(&v);
                match read(v) {
                    Some(value) => Patch::Value(value),
                    None => {
                        self.wrong_types.insert(attr.name, present);
                        Patch::Absent
                    }
                }
            }
        }
    }
}

/// Whether a value counts as present for the `must not be present` rule: anything but a
/// blank string and an empty list (`null` never gets here).
fn is_present(v: &Value) -> bool {
    match v {
        Value::String(s) => !s.trim().is_empty(),
        Value::Array(a) => !a.is_empty(),
        _ => true,
    }
}

fn string(v: Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s),
        _ => None,
    }
}

fn nullable(kind: Type) -> ObjectBuilder {
    ObjectBuilder::new().schema_type(SchemaType::from_iter([kind, Type::Null]))
}

/// The schema of `{key: {…}}`, its attributes being the component `attrs`.
pub(super) fn envelope(key: &str, doc: &str, attrs: &str) -> RefOr<Schema> {
    let object = ObjectBuilder::new()
        .property(key, utoipa::openapi::Ref::from_schema_name(attrs))
        .required(key)
        .description(Some(doc));
    RefOr::T(Schema::Object(object.build()))
}
