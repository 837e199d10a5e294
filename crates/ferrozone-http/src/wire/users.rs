//! `{"user": {…}}`: the attributes of a user create or update.

use ferrozone_domain::input::{NewUser, UserChanges};

use super::reader::{Attr, Reader};
use super::{Attributes, Described};

const EMAIL: Attr = Attr::new("email").doc("Required on create; unique, case-insensitively.");
const ROLE: Attr = Attr::new("role").doc("`admin` or `unprivileged` (default).");
const PASSWORD: Attr = Attr::new("password").doc("12–64 characters, for password sign-in.");
const PASSWORD_CONFIRMATION: Attr =
    Attr::new("password_confirmation").doc("Required with `password`, and equal to it.");
const DISABLED_AT: Attr = Attr::new("disabled_at").doc(
    "Update only (ignored on create), admins only: `true` or any RFC 3339 timestamp disables the \
     user (the stored time is the server's), `null` or `false` enables it.",
);

impl Attributes for NewUser {
    const KEY: &'static str = "user";

    fn read(r: &mut Reader) -> Self {
        NewUser {
            email: r.text(&EMAIL).into_value(),
            role: r.role(&ROLE).into_value(),
            password: r.secret(&PASSWORD).into_value(),
            password_confirmation: r.secret(&PASSWORD_CONFIRMATION).into_value(),
            wrong_types: ignoring_disabled_at(r),
        }
    }
}

/// The wrong types of a create: `disabled_at` is read (so that the one schema describes
/// it) but a create ignores it, whatever its value.
fn ignoring_disabled_at(r: &mut Reader) -> ferrozone_domain::input::WrongTypes {
    let wrong_types = r.wrong_types();
    r.switch_time(&DISABLED_AT);
    r.wrong_types();
    wrong_types
}

impl Attributes for UserChanges {
    const KEY: &'static str = "user";

    fn read(r: &mut Reader) -> Self {
        UserChanges {
            email: r.text(&EMAIL),
            role: r.role(&ROLE),
            password: r.secret(&PASSWORD).into_value(),
            password_confirmation: r.secret(&PASSWORD_CONFIRMATION).into_value(),
            disabled: r.switch_time(&DISABLED_AT),
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
        assert_eq!(create["properties"].as_object().unwrap().len(), 5);
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
    fn disabled_at_is_a_switch_sent_as_a_time() {
        let cases = [
            (json!(true), Some(true)),
            (json!("2020-01-01T00:00:00.000000Z"), Some(true)),
            (json!(" 2020-01-01T00:00:00+02:00 "), Some(true)),
            (json!(false), Some(false)),
            (json!(null), Some(false)),
        ];
        for (value, disabled) in cases {
            let u: UserChanges = parse(json!({ "disabled_at": value }));
            assert_eq!(u.disabled, disabled, "{value}");
            assert!(u.wrong_types.is_empty());
        }
        assert_eq!(parse::<UserChanges>(json!({})).disabled, None);
        for value in [json!("yesterday"), json!(""), json!("2020-13-01T00:00:00Z"), json!(1), json!({}), json!([])] {
            let u: UserChanges = parse(json!({ "disabled_at": value }));
            assert!(u.disabled.is_none() && u.wrong_types.has("disabled_at"), "{value}");
        }
        let create: NewUser = parse(json!({"email": "a@b", "disabled_at": "soon"}));
        assert!(create.wrong_types.is_empty(), "a create ignores disabled_at");
    }
}
