//! `{"group": {…}}` and `{"member": {…}}`: a group's attributes, and a member to add.

use ferrozone_domain::group::{MAX_DESCRIPTION_LEN, MAX_NAME_LEN};
use ferrozone_domain::service::groups::{GroupInput, MemberInput};

use super::reader::{Attr, Reader};
use super::{Attributes, Described};

const NAME: Attr = Attr::new("name").doc("A name of its own, whatever its case (at most 255 characters); required.");
const DESCRIPTION: Attr = Attr::new("description").doc("What the group is for (at most 1,024 characters).");
const USER_ID: Attr = Attr::new("user_id").doc("The user to add; required.");

const _: () = assert!(MAX_NAME_LEN == 255 && MAX_DESCRIPTION_LEN == 1024);

impl Attributes for GroupInput {
    const KEY: &'static str = "group";

    fn read(r: &mut Reader) -> Self {
        GroupInput { name: r.text(&NAME), description: r.text(&DESCRIPTION), wrong_types: r.wrong_types() }
    }
}

impl Described for GroupInput {
    const NAME: &'static str = "Group";
    const DOC: &'static str = "Group attributes a client may send (an update keeps what it omits).";
}

impl Attributes for MemberInput {
    const KEY: &'static str = "member";

    fn read(r: &mut Reader) -> Self {
        MemberInput { user_id: r.uuid_text(&USER_ID).into_value(), wrong_types: r.wrong_types() }
    }
}

impl Described for MemberInput {
    const NAME: &'static str = "Member";
    const DOC: &'static str = "The user to make a member.";
}
