//! `{"configuration": {…}}`: the runtime configuration keys a PATCH or PUT may change.

use ferrozone_domain::configuration::RequireTotp;
use ferrozone_domain::egress::RuleAction;
use ferrozone_domain::input::ConfigurationChanges;

use super::reader::{Attr, Reader};
use super::{Attributes, Described};

const LOCAL_AUTH_ENABLED: Attr = Attr::new("local_auth_enabled");
const ALLOW_UNPRIVILEGED_DEVICE_MANAGEMENT: Attr = Attr::new("allow_unprivileged_device_management");
const ALLOW_UNPRIVILEGED_DEVICE_CONFIGURATION: Attr = Attr::new("allow_unprivileged_device_configuration");
const DISABLE_VPN_ON_OIDC_ERROR: Attr = Attr::new("disable_vpn_on_oidc_error");
const VPN_SESSION_DURATION: Attr = Attr::new("vpn_session_duration")
    .doc("Seconds; 0 never expires, 2147483647 is Firezone's \"Once\".")
    .range(0, 2_147_483_647);
const DEFAULT_CLIENT_PERSISTENT_KEEPALIVE: Attr = Attr::new("default_client_persistent_keepalive")
    .doc("`null`: client configurations have no `PersistentKeepalive` line.")
    .range(0, 120);
const DEFAULT_CLIENT_MTU: Attr =
    Attr::new("default_client_mtu").doc("`null`: client configurations have no `MTU` line.").range(576, 1500);
const DEFAULT_CLIENT_ENDPOINT: Attr = Attr::new("default_client_endpoint");
const DEFAULT_CLIENT_DNS: Attr = Attr::new("default_client_dns");
const DEFAULT_CLIENT_ALLOWED_IPS: Attr = Attr::new("default_client_allowed_ips");
const REQUIRE_TOTP: Attr =
    Attr::new("require_totp").doc("Who must sign in with an authenticator code after the password.");
const EGRESS_DEFAULT_ACTION: Attr = Attr::new("egress_default_action")
    .doc("What the gateway does with tunnel traffic no egress rule matches: `accept` or `drop`.");
const OPENID_CONNECT_PROVIDERS: Attr =
    Attr::new("openid_connect_providers").doc("Replaces the whole list; each provider is checked as at start-up.");
const SAML_IDENTITY_PROVIDERS: Attr =
    Attr::new("saml_identity_providers").doc("Replaces the whole list; each provider is checked as at start-up.");

impl Attributes for ConfigurationChanges {
    const KEY: &'static str = "configuration";

    fn read(r: &mut Reader) -> Self {
        ConfigurationChanges {
            local_auth_enabled: r.switch(&LOCAL_AUTH_ENABLED),
            allow_unprivileged_device_management: r.switch(&ALLOW_UNPRIVILEGED_DEVICE_MANAGEMENT),
            allow_unprivileged_device_configuration: r.switch(&ALLOW_UNPRIVILEGED_DEVICE_CONFIGURATION),
            disable_vpn_on_oidc_error: r.switch(&DISABLE_VPN_ON_OIDC_ERROR),
            vpn_session_duration: r.integer(&VPN_SESSION_DURATION),
            default_client_persistent_keepalive: r.integer(&DEFAULT_CLIENT_PERSISTENT_KEEPALIVE),
            default_client_mtu: r.integer(&DEFAULT_CLIENT_MTU),
            default_client_endpoint: r.text(&DEFAULT_CLIENT_ENDPOINT),
            default_client_dns: r.list(&DEFAULT_CLIENT_DNS),
            default_client_allowed_ips: r.list(&DEFAULT_CLIENT_ALLOWED_IPS),
            require_totp: r.choice(&REQUIRE_TOTP, &RequireTotp::NAMES),
            egress_default_action: r.choice(&EGRESS_DEFAULT_ACTION, &RuleAction::NAMES),
            openid_connect_providers: r.objects(&OPENID_CONNECT_PROVIDERS),
            saml_identity_providers: r.objects(&SAML_IDENTITY_PROVIDERS),
            wrong_types: r.wrong_types(),
        }
    }
}

impl Described for ConfigurationChanges {
    const NAME: &'static str = "Configuration";
    const DOC: &'static str = "The keys a client may change; others are ignored.";
}

#[cfg(test)]
mod tests;
