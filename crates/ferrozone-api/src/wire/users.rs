//! `{"user": {…}}`: the attributes of a user create or update.

use ferrozone_domain::input::{NewUser, UserChanges};

use super::reader::{Attr, Reader};
use super::{Attributes, Described};

const EMAIL: Attr = Attr::new("email").doc("Required on create; unique, case-insensitively.");
const ROLE: Attr = Attr::new("role").doc("`admin` or `unprivileged` (default).");
const PASSWORD: Attr = Attr::new("password").doc("12–64 characters, for password sign-in.");
const PASSWORD_CONFIRMATION: Attr =
    Attr::new("password_confirmation").doc("Required with `password`, and equal to it.");
// `disabled_at` is read-only, as the specification says: sent, it is ignored like any
// unknown key (`POST /v0/users/{id}/disable` and `/enable` change it; docs/api.md section 4).
impl Attributes for NewUser {
    const KEY: &'static str = "user";

    fn read(r: &mut Reader) -> Self {
        NewUser {
            email: r.text(&EMAIL).into_value(),
            role: r.role(&ROLE).into_value(),
            password: r.secret(&PASSWORD).into_value(),
            password_confirmation: r.secret(&PASSWORD_CONFIRMATION).into_value(),
            wrong_types: r.wrong_types(),
        }
    }
}

impl Attributes for UserChanges {
    const KEY: &'static str = "user";

    fn read(r: &mut Reader) -> Self {
        UserChanges {
            email: r.text(&EMAIL),
            role: r.role(&ROLE),
            password: r.secret(&PASSWORD).into_value(),
            password_confirmation: r.secret(&PASSWORD_CONFIRMATION).into_value(),
            wrong_types: r.wrong_types(),
        }
    }
}

impl Described for NewUser {
    const NAME: &'static str = "User";
    const DOC: &'static str = "User attributes a client may send.";
}

#[cfg(test)]
mod tests {
    use ferrozone_domain::input::Patch;
    use ferrozone_domain::Role;
    use serde_json::{json, Value};

    use super::*;

    fn parse<T: Attributes>(v: Value) -> T {
        T::parse(v.as_object().unwrap().clone())
    }

    #[test]
    fn creates_and_updates_read_the_same_attributes() {
        let create = serde_json::to_value(crate::wire::Envelope::<NewUser>::attrs()).unwrap();
        let update = serde_json::to_value(Reader::describe("User attributes a client may send.", UserChanges::read));
        assert_eq!(create, update.unwrap());
        assert_eq!(create["properties"].as_object().unwrap().len(), 4);
    }

    #[test]
    fn values_of_wrong_types_are_recorded_and_left_absent() {
        let u: NewUser =
            parse(json!({"email": 5, "role": "superuser", "password": ["x"], "password_confirmation": {}}));
        assert!(u.email.is_none() && u.role.is_none() && u.password.is_none() && u.password_confirmation.is_none());
        for attr in ["email", "role", "password", "password_confirmation"] {
            assert!(u.wrong_types.has(attr), "{attr}");
        }
        let u: NewUser = parse(json!({"email": " a@b ", "role": null, "password": ""}));
        assert_eq!((u.email.as_deref(), u.role), (Some(" a@b "), None));
        assert_eq!(u.password.as_deref().map(String::as_str), Some(""));
        assert!(u.wrong_types.is_empty());
    }

    #[test]
    fn an_update_tells_absent_from_null() {
        let u: UserChanges = parse(json!({"role": null, "email": "x@y"}));
        assert_eq!((u.role, u.email), (Patch::Null, Patch::Value("x@y".to_owned())));
        let u: UserChanges = parse(json!({"role": "admin"}));
        assert_eq!((u.role, u.email), (Patch::Value(Role::Admin), Patch::Absent));
    }

    #[test]
    fn disabled_at_is_read_only_and_ignored_whatever_its_value() {
        for value in [json!(true), json!(null), json!(false), json!("2020-01-01T00:00:00Z"), json!("soon"), json!({})] {
            let u: UserChanges = parse(json!({ "disabled_at": value, "role": "admin" }));
            assert!(u.wrong_types.is_empty(), "{value}");
            assert_eq!(u.role, Patch::Value(Role::Admin));
            let create: NewUser = parse(json!({"email": "a@b", "disabled_at": value}));
            assert!(create.wrong_types.is_empty(), "{value}");
        }
    }
}
