//! The SAML assertion consumer's verifier: any document (a posted, base64-decoded
//! `SAMLResponse`) against the test IdP's metadata, at a time when the committed fixtures
//! (crates/ferrozone-saml/testdata) are valid, so that their mutations get far.
#![no_main]

use std::sync::LazyLock;

use base64::Engine as _;
use chrono::{DateTime, Utc};
use ferrozone_saml::keys::certificate_key;
use ferrozone_saml::{decode_post_response, verify_response, Expected, IdpMetadata, SsoBinding};
use libfuzzer_sys::fuzz_target;

const IDP_CERT: &str = include_str!("../../tests/idp/saml/keys/idp.crt");

static IDP: LazyLock<IdpMetadata> = LazyLock::new(|| {
    let body: String = IDP_CERT.lines().filter(|l| !l.starts_with("-----")).collect();
    let der = base64::engine::general_purpose::STANDARD.decode(body).expect("the test IdP's certificate");
    IdpMetadata {
        entity_id: "https://idp.example/metadata".into(),
        sso_url: "https://idp.example/sso".into(),
        sso_binding: SsoBinding::Redirect,
        signing_keys: vec![certificate_key(&der).expect("an RSA certificate")],
    }
});

static NOW: LazyLock<DateTime<Utc>> =
    LazyLock::new(|| DateTime::parse_from_rfc3339("2026-11-23T17:15:30Z").expect("a time").to_utc());

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    // What the consumer does first with the posted field.
    let _ = decode_post_response(text);
    // Both flags off: one signature is still required, and every check is reached.
    let expected = Expected {
        idp: &IDP,
        sp_entity_id: "urn:firezone.dev:firezone-app",
        acs_url: "https://vpn.example/auth/saml/sp/consume/test",
        request_id: "_fz0123",
        require_signed_assertion: false,
        require_signed_response: false,
        now: *NOW,
        groups_attribute: Some("groups"),
    };
    let _ = verify_response(text, &expected);
});
