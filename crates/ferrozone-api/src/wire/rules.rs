//! `{"rule": {…}}`: the attributes of an egress rule create or update.

use ferrozone_domain::input::{NewRule, RuleChanges};

use super::reader::{Attr, Reader};
use super::{Attributes, Described};

const DESTINATION: Attr =
    Attr::new("destination").doc("An IP address or CIDR (host bits allowed); required. Echoed exactly as sent.");
const ACTION: Attr = Attr::new("action").doc("`accept` or `drop` (default on create).");
const PORT_TYPE: Attr = Attr::new("port_type").doc("`tcp` or `udp`; required with `port_range`.");
const PORT_RANGE: Attr = Attr::new("port_range")
    .doc("`\"lo-hi\"`, `\"lo - hi\"` or `\"n\"`, ports 1–65535; required with `port_type`. Echoed exactly as sent.");
const USER_ID: Attr =
    Attr::new("user_id").doc("The user the rule applies to; `null` (default, and no `group_id`): every user.");
const GROUP_ID: Attr = Attr::new("group_id").doc(
    "Ferrozone's own: the group whose members the rule applies to (`/v0/groups`); never with `user_id`. \
     Looked up after the user's rules and before the global ones.",
);

impl Attributes for NewRule {
    const KEY: &'static str = "rule";

    fn read(r: &mut Reader) -> Self {
        NewRule {
            destination: r.text(&DESTINATION).into_value(),
            action: r.text(&ACTION).into_value(),
            port_type: r.text(&PORT_TYPE).into_value(),
            port_range: r.text(&PORT_RANGE).into_value(),
            user_id: r.uuid_text(&USER_ID).into_value(),
            group_id: r.uuid_text(&GROUP_ID).into_value(),
            wrong_types: r.wrong_types(),
        }
    }
}

impl Attributes for RuleChanges {
    const KEY: &'static str = "rule";

    fn read(r: &mut Reader) -> Self {
        RuleChanges {
            destination: r.text(&DESTINATION),
            action: r.text(&ACTION),
            port_type: r.text(&PORT_TYPE),
            port_range: r.text(&PORT_RANGE),
            user_id: r.uuid_text(&USER_ID),
            group_id: r.uuid_text(&GROUP_ID),
            wrong_types: r.wrong_types(),
        }
    }
}

impl Described for NewRule {
    const NAME: &'static str = "Rule";
    const DOC: &'static str = "Egress rule attributes a client may send.";
}
