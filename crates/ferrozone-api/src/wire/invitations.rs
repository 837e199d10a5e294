//! `{"invitation": {…}}`: the attributes of an invitation.

use ferrozone_domain::service::sign_in_links::NewInvitation;
use ferrozone_domain::sign_in_link::MAX_INVITATION_HOURS;

use super::reader::{Attr, Reader};
use super::{Attributes, Described};

const EMAIL: Attr = Attr::new("email").doc("Whom to invite; an existing user with this email is reused. Required.");
const ROLE: Attr =
    Attr::new("role").doc("`admin` or `unprivileged` (default): the role of a user created for the invitation.");
const SEND_EMAIL: Attr = Attr::new("send_email")
    .doc("Email the link (default: when an SMTP server is configured; `true` without one is refused).");
const EXPIRES_IN_HOURS: Attr = Attr::new("expires_in_hours")
    .doc("How long the link works, in hours (default 168, a week).")
    .range(1, MAX_INVITATION_HOURS as i64);

impl Attributes for NewInvitation {
    const KEY: &'static str = "invitation";

    fn read(r: &mut Reader) -> Self {
        NewInvitation {
            email: r.text(&EMAIL).into_value(),
            role: r.role(&ROLE).into_value(),
            send_email: r.flag(&SEND_EMAIL),
            expires_in_hours: r.integer(&EXPIRES_IN_HOURS).into_value(),
            wrong_types: r.wrong_types(),
        }
    }
}

impl Described for NewInvitation {
    const NAME: &'static str = "Invitation";
    const DOC: &'static str = "The invitation asked for.";
}
