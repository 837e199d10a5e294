//! `{"gateway": {…}}`: the attributes of a new gateway.

use ferrozone_domain::gateway::MAX_ENROLMENT_HOURS;
use ferrozone_domain::service::gateways::NewGateway;

use super::reader::{Attr, Reader};
use super::{Attributes, Described};

const NAME: Attr = Attr::new("name").doc("A name of its own (at most 64 characters); required.");
const ENROLMENT_HOURS: Attr = Attr::new("enrolment_hours")
    .doc("How long its enrolment token works, in hours (default 24).")
    .range(1, MAX_ENROLMENT_HOURS as i64);

impl Attributes for NewGateway {
    const KEY: &'static str = "gateway";

    fn read(r: &mut Reader) -> Self {
        NewGateway {
            name: r.text(&NAME).into_value(),
            enrolment_hours: r.integer(&ENROLMENT_HOURS).into_value(),
            wrong_types: r.wrong_types(),
        }
    }
}

impl Described for NewGateway {
    const NAME: &'static str = "Gateway";
    const DOC: &'static str = "The gateway asked for.";
}
