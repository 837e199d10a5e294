//! `{"webhook": {…}}`: the attributes of a webhook create or update.

use ferrozone_domain::webhook::validate::{NewWebhook, WebhookChanges};

use super::reader::{Attr, Reader};
use super::{Attributes, Described};

const URL: Attr = Attr::new("url").doc("The receiver: an http or https URL (at most 2048 characters); required.");
const EVENTS: Attr = Attr::new("events")
    .doc("Actions (`device.created`) and prefixes (`device.`) of the events to send; empty or absent: every event.");
const SECRET: Attr = Attr::new("secret")
    .doc("The signing secret (16 to 256 characters); absent on create: one is generated and shown once.");
const ROTATE_SECRET: Attr =
    Attr::new("rotate_secret").doc("On update, `true` generates a new secret, shown once in the answer.");
const ENABLED: Attr = Attr::new("enabled").doc("Whether events are delivered (default `true`).");

impl Attributes for NewWebhook {
    const KEY: &'static str = "webhook";

    fn read(r: &mut Reader) -> Self {
        NewWebhook {
            url: r.text(&URL).into_value(),
            events: r.list(&EVENTS).into_value(),
            secret: r.secret(&SECRET).into_value(),
            enabled: r.flag(&ENABLED),
            wrong_types: r.wrong_types(),
        }
    }
}

impl Attributes for WebhookChanges {
    const KEY: &'static str = "webhook";

    fn read(r: &mut Reader) -> Self {
        WebhookChanges {
            url: r.text(&URL).into_value(),
            events: r.list(&EVENTS).into_value(),
            secret: r.secret(&SECRET).into_value(),
            rotate_secret: r.flag(&ROTATE_SECRET).unwrap_or(false),
            enabled: r.flag(&ENABLED),
            wrong_types: r.wrong_types(),
        }
    }
}

impl Described for NewWebhook {
    const NAME: &'static str = "Webhook";
    const DOC: &'static str = "Webhook attributes a client may send (`rotate_secret` on update only).";
}
