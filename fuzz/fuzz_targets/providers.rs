//! The identity-provider configuration (`FERROZONE_OPENID_CONNECT_PROVIDERS` and
//! `FERROZONE_SAML_IDENTITY_PROVIDERS`), and the IdP metadata XML of each SAML provider.
//!
//! Input: the OpenID Connect list, a NUL, the SAML list (no NUL: the OpenID Connect list
//! only).
#![no_main]

use ferrozone_domain::providers::Providers;
use ferrozone_saml::IdpMetadata;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (oidc, saml) = match text.split_once('\0') {
        Some((oidc, saml)) => (oidc, Some(saml)),
        None => (text, None),
    };
    let Ok(providers) = Providers::parse(Some(oidc), "OIDC", saml, "SAML") else { return };
    for provider in &providers.saml {
        let _ = IdpMetadata::parse(&provider.metadata);
    }
});
