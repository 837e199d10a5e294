//! `{"token": {…}}`: the attributes of a personal API token create.

use ferrozone_domain::input::NewToken;

use super::reader::{Attr, Reader};
use super::{Attributes, Described};

const NAME: Attr = Attr::new("name").doc("What the token is for; required, at most 64 characters.");
const EXPIRES_IN_DAYS: Attr = Attr::new("expires_in_days")
    .doc("Lifetime in days, from 1 to the configured maximum (365 by default); absent: the configured default (30).");

impl Attributes for NewToken {
    const KEY: &'static str = "token";

    fn read(r: &mut Reader) -> Self {
        NewToken {
            name: r.text(&NAME).into_value(),
            expires_in_days: r.integer(&EXPIRES_IN_DAYS).into_value(),
            wrong_types: r.wrong_types(),
        }
    }
}

impl Described for NewToken {
    const NAME: &'static str = "Token";
    const DOC: &'static str = "Personal API token attributes a client may send.";
}
